"""Property tests: every core plugin's whole-snapshot path (filter_all / score_all) agrees exactly with its
per-node reference path (filter / score) on randomized small clusters; and a Framework gives the same
feasible nodes, statuses, processed counts and scores with vector paths on and off."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.core import ContainerPort, Pod
from kubesched.api.decode import decode
from kubesched.config.types import (
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import PreFilterPlugin, PreScorePlugin, VectorFilterPlugin, VectorScorePlugin
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code
from kubesched.framework.types import PodInfo
from kubesched.plugins.imagelocality import ImageLocality
from kubesched.plugins.nodeaffinity import NodeAffinity
from kubesched.plugins.nodename import NodeName
from kubesched.plugins.nodeports import NodePorts
from kubesched.plugins.noderesources.balanced_allocation import BalancedAllocation
from kubesched.plugins.noderesources.fit import Fit
from kubesched.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.plugins.tainttoleration import TaintToleration
from kubesched.testing import Env, make_node, make_pod

GPU = "example.com/gpu"
NAMES = [f"n{i}" for i in range(6)]
IMAGES = ["img/a:1", "img/b", "img/c:2", "img/d"]
PORTS = [("TCP", "", 80), ("TCP", "10.0.0.1", 80), ("UDP", "", 80), ("TCP", "10.0.0.2", 8080), ("TCP", "", 8080)]
TAINTS = [
    {"key": "k1", "value": "v1", "effect": "NoSchedule"},
    {"key": "k1", "value": "v2", "effect": "NoExecute"},
    {"key": "k2", "value": "", "effect": "PreferNoSchedule"},
    {"key": "k3", "value": "x", "effect": "PreferNoSchedule"},
    {"key": "k2", "value": "v1", "effect": "NoSchedule"},
]
TOLERATIONS = [
    {"key": "k1", "operator": "Equal", "value": "v1", "effect": "NoSchedule"},
    {"key": "k1", "operator": "Exists"},
    {"key": "k2", "operator": "Exists", "effect": "PreferNoSchedule"},
    {"key": "k3", "value": "x"},
    {"operator": "Exists", "effect": "NoSchedule"},
]
LABEL_VALUES = {"zone": ["a", "b", "c"], "tier": ["x", "y"], "cores": ["1", "4", "8", "x"]}

cpu_st = st.sampled_from([None, "0", "100m", "500m", "1", "1500m"])
mem_st = st.sampled_from([None, "0", "128Mi", "512Mi", "1Gi"])
gpu_st = st.sampled_from([None, None, "0", "1", "2"])


def _with_ports(pod: Pod, ports: list[tuple[str, str, int]]) -> Pod:
    if not ports:
        return pod
    cps = [ContainerPort(container_port=p, host_port=p, host_ip=ip, protocol=proto) for proto, ip, p in ports]
    c = msgspec.structs.replace(pod.spec.containers[0], ports=cps)
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, containers=[c]))


@st.composite
def node_st(draw: st.DrawFn, name: str) -> Any:
    labels = {k: draw(st.sampled_from(v)) for k, v in LABEL_VALUES.items() if draw(st.booleans())}
    extra = {}
    gpu = draw(st.sampled_from([None, "0", "2", "4"]))
    if gpu is not None:
        extra[GPU] = gpu
    taints = draw(st.lists(st.sampled_from(TAINTS), max_size=3, unique_by=lambda t: (t["key"], t["effect"])))
    images = draw(st.lists(st.sampled_from(IMAGES), max_size=3, unique=True))
    return make_node(
        name,
        cpu=draw(st.sampled_from(["0", "500m", "1", "2", "4"])),
        mem=draw(st.sampled_from(["0", "512Mi", "1Gi", "4Gi"])),
        pods=draw(st.sampled_from(["1", "2", "110"])),
        labels=labels,
        taints=taints,
        unschedulable=draw(st.booleans()),
        extra=extra,
        images=[
            ([im if ":" in im else im + ":latest"], draw(st.sampled_from([10, 300, 900])) * 2**20) for im in images
        ],
    )


@st.composite
def existing_pod_st(draw: st.DrawFn, i: int, nodes: list[str]) -> Pod:
    gpu = draw(gpu_st)
    pod = make_pod(
        f"e{i}",
        draw(cpu_st),
        draw(mem_st),
        node=draw(st.sampled_from(nodes)),
        extra={GPU: gpu} if gpu is not None else None,
    )
    return _with_ports(pod, draw(st.lists(st.sampled_from(PORTS), max_size=2, unique=True)))


@st.composite
def incoming_pod_st(draw: st.DrawFn, nodes: list[str]) -> PodInfo:
    spec: dict[str, Any] = {}
    gpu = draw(gpu_st)
    if draw(st.booleans()):
        spec["tolerations"] = draw(st.lists(st.sampled_from(TOLERATIONS), max_size=3))
    if draw(st.integers(0, 3)) == 0:
        k = draw(st.sampled_from(list(LABEL_VALUES)))
        spec["nodeSelector"] = {k: draw(st.sampled_from(LABEL_VALUES[k]))}
    affinity: dict[str, Any] = {}
    if draw(st.integers(0, 2)) == 0:
        terms = []
        for _ in range(draw(st.integers(1, 2))):
            term: dict[str, Any] = {}
            exprs = []
            for _ in range(draw(st.integers(0, 2))):
                k = draw(st.sampled_from(list(LABEL_VALUES)))
                op = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]))
                if op in ("In", "NotIn"):
                    vals = draw(st.lists(st.sampled_from(LABEL_VALUES[k]), min_size=1, max_size=2))
                elif op in ("Gt", "Lt"):
                    vals = [draw(st.sampled_from(["0", "3", "5"]))]
                else:
                    vals = []
                exprs.append({"key": k, "operator": op, "values": vals})
            term["matchExpressions"] = exprs
            if draw(st.integers(0, 3)) == 0:
                op = draw(st.sampled_from(["In", "NotIn"]))
                term["matchFields"] = [
                    {"key": "metadata.name", "operator": op, "values": [draw(st.sampled_from(nodes))]}
                ]
            terms.append(term)
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
    if draw(st.booleans()):
        prefs = []
        for _ in range(draw(st.integers(1, 3))):
            k = draw(st.sampled_from(list(LABEL_VALUES)))
            prefs.append(
                {
                    "weight": draw(st.integers(1, 100)),
                    "preference": {"matchExpressions": [{"key": k, "operator": "In", "values": [LABEL_VALUES[k][0]]}]},
                }
            )
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = prefs
    if affinity:
        spec["affinity"] = {"nodeAffinity": affinity}
    images = draw(st.lists(st.sampled_from(IMAGES), min_size=1, max_size=3))
    spec["containers"] = [{"name": f"c{i}", "image": im} for i, im in enumerate(images)]
    pod = make_pod(
        "incoming",
        draw(cpu_st),
        draw(mem_st),
        node=draw(st.sampled_from(["", "", "", *nodes])),
        extra={GPU: gpu} if gpu is not None else None,
        spec=spec,
    )
    # make_pod puts the requests on the first container of the default spec; keep them on the first image
    reqs = make_pod("r", draw(cpu_st), draw(mem_st), extra={GPU: gpu} if gpu is not None else None).spec.containers[0]
    first = msgspec.structs.replace(pod.spec.containers[0], resources=reqs.resources)
    pod = msgspec.structs.replace(
        pod, spec=msgspec.structs.replace(pod.spec, containers=[first, *pod.spec.containers[1:]])
    )
    return PodInfo(_with_ports(pod, draw(st.lists(st.sampled_from(PORTS), max_size=2, unique=True))))


@st.composite
def cluster_st(draw: st.DrawFn) -> tuple[Env, PodInfo]:
    n = draw(st.integers(1, 6))
    names = NAMES[:n]
    nodes = [draw(node_st(name)) for name in names]
    existing = [draw(existing_pod_st(i, names)) for i in range(draw(st.integers(0, 8)))]
    return Env(nodes, existing), draw(incoming_pod_st(names))


def _shape() -> RequestedToCapacityRatioParam:
    return RequestedToCapacityRatioParam(
        [UtilizationShapePoint(0, 10), UtilizationShapePoint(30, 2), UtilizationShapePoint(100, 0)]
    )


FIT_ARGS = [
    None,
    NodeResourcesFitArgs(
        scoring_strategy=ScoringStrategy("MostAllocated", [ResourceSpec("cpu", 1), ResourceSpec("memory", 2)])
    ),
    NodeResourcesFitArgs(
        ignored_resources=[GPU],
        scoring_strategy=ScoringStrategy(
            "RequestedToCapacityRatio", [ResourceSpec("cpu", 3), ResourceSpec(GPU, 1)], _shape()
        ),
    ),
    NodeResourcesFitArgs(
        scoring_strategy=ScoringStrategy(
            "LeastAllocated", [ResourceSpec("cpu", 1), ResourceSpec("memory", 1), ResourceSpec(GPU, 2)]
        )
    ),
]
BALANCED_ARGS = [
    None,
    NodeResourcesBalancedAllocationArgs([ResourceSpec("cpu", 1), ResourceSpec("memory", 1), ResourceSpec(GPU, 1)]),
]


def _added_affinity() -> NodeAffinityArgs:
    raw = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["c"]}]},
                {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 7, "preference": {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["2"]}]}}
        ],
    }
    return NodeAffinityArgs(
        added_affinity=decode("Pod", {"spec": {"affinity": {"nodeAffinity": raw}}}).spec.affinity.node_affinity
    )


def _plugins(env: Env, fit_i: int, bal_i: int, added: bool = False) -> list[Any]:
    return [
        NodeUnschedulable(),
        NodeName(),
        TaintToleration(),
        NodeAffinity(_added_affinity() if added else None),
        NodePorts(),
        Fit(FIT_ARGS[fit_i]),
        BalancedAllocation(BALANCED_ARGS[bal_i]),
        ImageLocality(env.handle),
    ]


def _key(s: Any) -> Any:
    return None if s is None else (s.code, s.reasons)


SETTINGS = settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(cluster_st(), st.integers(0, len(FIT_ARGS) - 1), st.integers(0, len(BALANCED_ARGS) - 1), st.booleans())
def test_filter_all_agrees_with_filter(cluster: tuple[Env, PodInfo], fit_i: int, bal_i: int, added: bool) -> None:
    env, pod = cluster
    snap = env.snapshot
    for pl in _plugins(env, fit_i, bal_i, added):
        if not isinstance(pl, VectorFilterPlugin):
            continue
        state = CycleState()
        if isinstance(pl, PreFilterPlugin):
            _, s = pl.pre_filter(state, pod, snap.nodes)
            if s is not None and s.code == Code.SKIP:
                continue
            if s is not None:
                assert s.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        per_node = [_key(pl.filter(state, pod, ni)) for ni in snap.nodes]
        v = pl.filter_all(state, pod, snap)
        if v is None:
            assert per_node == [None] * len(per_node), pl.name
            continue
        assert v.failed.tolist() == [k is not None for k in per_node], pl.name
        for i, k in enumerate(per_node):
            if k is not None:
                assert _key(v.status(i)) == k, pl.name


@SETTINGS
@given(
    cluster_st(), st.integers(0, len(FIT_ARGS) - 1), st.integers(0, len(BALANCED_ARGS) - 1), st.booleans(), st.randoms()
)
def test_score_all_agrees_with_score(
    cluster: tuple[Env, PodInfo], fit_i: int, bal_i: int, added: bool, rnd: Any
) -> None:
    env, pod = cluster
    snap = env.snapshot
    idx = np.arange(snap.num_nodes, dtype=np.int64)
    rnd.shuffle(idx)
    idx = idx[: rnd.randint(1, len(idx))]
    for pl in _plugins(env, fit_i, bal_i, added):
        if not isinstance(pl, VectorScorePlugin):
            continue
        state = CycleState()
        if isinstance(pl, PreScorePlugin):
            s = pl.pre_score(state, pod, [snap.nodes[int(i)] for i in idx])
            if s is not None and s.code == Code.SKIP:
                continue
            assert s is None, pl.name
        per_node = []
        for i in idx:
            score, s = pl.score(state, pod, snap.nodes[int(i)])
            assert s is None
            per_node.append(score)
        got = np.asarray(pl.score_all(state, pod, snap, idx))
        assert got.tolist() == per_node, pl.name


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cluster_st(),
    st.integers(0, len(FIT_ARGS) - 1),
    st.integers(0, len(BALANCED_ARGS) - 1),
    st.integers(1, 6),
    st.integers(0, 5),
    st.booleans(),
)
def test_framework_vector_and_per_node_runs_agree(
    cluster: tuple[Env, PodInfo], fit_i: int, bal_i: int, num_to_find: int, start: int, added: bool
) -> None:
    env, pod = cluster
    snap = env.snapshot
    results = []
    for vector in (True, False):
        plugins = _plugins(env, fit_i, bal_i, added)
        points: dict[str, list[Any]] = {
            "preFilter": [p for p in plugins if isinstance(p, PreFilterPlugin)],
            "filter": [p for p in plugins if isinstance(p, VectorFilterPlugin)],
            "preScore": [p for p in plugins if isinstance(p, PreScorePlugin)],
            "score": [p for p in plugins if isinstance(p, VectorScorePlugin)],
        }
        weights = {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1}
        fw = Framework("default-scheduler", points, weights, None, env.handle)
        fw.use_vector_paths = vector
        state = CycleState()
        _, s, _ = fw.run_pre_filter_plugins(state, pod, snap.nodes)
        if s is not None:
            results.append(("prefilter", _key(s)))
            continue
        n = snap.num_nodes
        order = np.array([(start + k) % n for k in range(n)], np.int64)
        out = fw.find_feasible(state, pod, snap, order, num_to_find)
        statuses = {snap.nodes[i].name: (_key(st_), st_.plugin) for i, st_ in out.statuses().items()}
        feasible = out.feasible.tolist()
        scores = None
        if feasible:
            nodes = [snap.nodes[i] for i in feasible]
            assert fw.run_pre_score_plugins(state, pod, nodes) is None
            total, per_plugin, err = fw.run_score_plugins(state, pod, snap, out.feasible)
            assert err is None
            scores = (total.tolist(), {k: v.tolist() for k, v in per_plugin.items()})
        results.append((feasible, out.processed, statuses, scores))
    assert results[0] == results[1]
