"""NodeResourcesFit filter and scoring strategies (noderesources/fit.go, least_allocated.go, most_allocated.go,
requested_to_capacity_ratio.go): cases and numbers from the upstream *_test.go tables."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.config.types import (
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import QueueingHint
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.gocompat.gomath import go_round
from kubesched.plugins.noderesources.fit import Fit
from kubesched.plugins.noderesources.resource_allocation import (
    LEAST_ALLOCATED,
    BrokenLinear,
    ResourceAllocationScorer,
    go_div,
)
from kubesched.testing import Env, make_node, make_pod

U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
EXT_A, EXT_B, HUGE = "example.com/aaa", "example.com/bbb", "hugepages-2Mi"
DEFAULT = [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]


def _rpod(*containers: dict[str, str], node: str = "", name: str = "p", init: list[dict[str, str]] | None = None):
    """st.MakePod().Req(...).Req(...): one container per request map (no container at all when none)."""
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "image": "i", "resources": {"requests": r}} for i, r in enumerate(containers)]
    }
    if init:
        spec["initContainers"] = [
            {"name": f"i{i}", "image": "i", "resources": {"requests": r}} for i, r in enumerate(init)
        ]
    return make_pod(name, node=node, spec=spec, uid=f"uid-{name}-{node}-{id(containers)}")


def _node(name: str, cpu: str = "10m", mem: str = "20", pods: str = "32", **extra: str):
    return make_node(name, cpu=cpu, mem=mem, pods=pods, extra={k.replace("_", "-"): v for k, v in extra.items()})


# ---------------------------------------------------------------- Filter (TestEnoughRequests)

FULL = {"cpu": "10m", "memory": "20"}


def _filter(pod, existing: list, args: NodeResourcesFitArgs | None = None, node=None) -> Status | None:
    node = node or make_node(
        "n1", cpu="10m", mem="20", pods="32", extra={EXT_A: "5", "ephemeral-storage": "20", HUGE: "5"}
    )
    env = Env([node], existing)
    pl = Fit(args)
    pi = PodInfo(pod)
    state = CycleState()
    assert pl.pre_filter(state, pi, env.snapshot.nodes) == (None, None)
    got = pl.filter(state, pi, env.node("n1"))
    v = pl.filter_all(state, pi, env.snapshot)
    if got is None:
        assert v is None
    else:
        assert v.failed.tolist() == [True]
        assert v.status(0) == got
    return got


@pytest.mark.parametrize(
    ("pod", "existing", "want"),
    [
        (_rpod(), [_rpod({"cpu": "10m", "memory": "20"}, node="n1")], None),
        (
            _rpod({"cpu": "1m", "memory": "1"}),
            [_rpod(FULL, node="n1")],
            Status(U, "Insufficient cpu", "Insufficient memory"),
        ),
        (
            _rpod({"cpu": "1m", "memory": "1"}, init=[{"cpu": "3m", "memory": "1"}]),
            [_rpod({"cpu": "8m", "memory": "19"}, node="n1")],
            Status(U, "Insufficient cpu"),
        ),
        (
            _rpod({"cpu": "1m", "memory": "1"}, init=[{"cpu": "1m", "memory": "3"}]),
            [_rpod({"cpu": "9m", "memory": "19"}, node="n1")],
            Status(U, "Insufficient memory"),
        ),
        (_rpod({"cpu": "1m", "memory": "1"}), [_rpod({"cpu": "9m", "memory": "19"}, node="n1")], None),
        (_rpod({"cpu": "11m", "memory": "1"}), [], Status(UU, "Insufficient cpu")),  # more than the whole node
        (
            _rpod({"cpu": "2m", "memory": "21"}),
            [_rpod({"cpu": "9m"}, node="n1")],
            Status(UU, "Insufficient cpu", "Insufficient memory"),
        ),
        (_rpod({EXT_A: "10"}), [], Status(UU, f"Insufficient {EXT_A}")),
        (_rpod({EXT_A: "3"}), [_rpod({EXT_A: "3"}, node="n1")], Status(U, f"Insufficient {EXT_A}")),
        (_rpod({EXT_A: "2"}), [_rpod({EXT_A: "3"}, node="n1")], None),
        (_rpod({EXT_B: "1"}), [], Status(UU, f"Insufficient {EXT_B}")),  # not on the node at all
        (_rpod({EXT_A: "0"}), [], None),  # zero requests are not checked
        (_rpod({HUGE: "6"}), [], Status(UU, f"Insufficient {HUGE}")),
        (
            _rpod({"ephemeral-storage": "15"}),
            [_rpod({"ephemeral-storage": "10"}, node="n1")],
            Status(U, "Insufficient ephemeral-storage"),
        ),
        (_rpod({"kubernetes.io/something": "1"}), [], Status(UU, "Insufficient kubernetes.io/something")),
    ],
)
def test_filter(pod, existing: list, want: Status | None) -> None:
    assert _filter(pod, existing) == want


@pytest.mark.parametrize(
    ("args", "want"),
    [
        (NodeResourcesFitArgs(ignored_resources=[EXT_B], scoring_strategy=ScoringStrategy(resources=DEFAULT)), None),
        (
            NodeResourcesFitArgs(
                ignored_resource_groups=["example.com"], scoring_strategy=ScoringStrategy(resources=DEFAULT)
            ),
            None,
        ),
        (
            NodeResourcesFitArgs(
                ignored_resource_groups=["example.org"], scoring_strategy=ScoringStrategy(resources=DEFAULT)
            ),
            Status(UU, f"Insufficient {EXT_B}"),
        ),
    ],
)
def test_ignored_extended_resources(args: NodeResourcesFitArgs, want: Status | None) -> None:
    assert _filter(_rpod({EXT_B: "1"}), [], args) == want


def test_native_prefixed_resources_cannot_be_ignored() -> None:
    args = NodeResourcesFitArgs(
        ignored_resources=["kubernetes.io/something"], scoring_strategy=ScoringStrategy(resources=DEFAULT)
    )
    assert _filter(_rpod({"kubernetes.io/something": "1"}), [], args) == Status(
        UU, "Insufficient kubernetes.io/something"
    )


def test_too_many_pods() -> None:
    node = make_node("n1", cpu="10m", mem="20", pods="1")
    assert _filter(_rpod(), [_rpod(node="n1")], node=node) == Status(U, "Too many pods")
    assert _filter(_rpod({"cpu": "1m"}), [_rpod(FULL, node="n1")], node=node) == Status(
        U, "Too many pods", "Insufficient cpu"
    )
    zero = make_node("n1", cpu="10m", mem="20", pods="0")
    assert _filter(_rpod(), [], node=zero) == Status(U, "Too many pods")


def test_filter_without_pre_filter_state_is_an_error() -> None:
    env = Env([make_node("n1")])
    with pytest.raises(RuntimeError, match='error reading "PreFilterNodeResourcesFit" from cycleState: not found'):
        Fit().filter(CycleState(), PodInfo(_rpod()), env.node("n1"))


def test_pod_overhead_and_sidecars_count_in_the_filter() -> None:
    node = make_node("n1", cpu="1", mem="1Gi")
    over = make_pod("o", "800m", spec={"overhead": {"cpu": "250m"}})
    assert _filter(over, [], node=node) == Status(UU, "Insufficient cpu")
    side = make_pod(
        "s",
        "600m",
        spec={
            "initContainers": [
                {"name": "s", "image": "i", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}}
            ]
        },
    )
    assert _filter(side, [], node=node) == Status(UU, "Insufficient cpu")


# ---------------------------------------------------------------- Scoring strategies


def _scores(strategy: ScoringStrategy, pod, nodes: list, existing: list) -> list[int]:
    env = Env(nodes, existing)
    pl = Fit(NodeResourcesFitArgs(scoring_strategy=strategy))
    pi = PodInfo(pod)
    state = CycleState()
    assert pl.pre_score(state, pi, env.snapshot.nodes) is None
    names = [n.metadata.name for n in nodes]
    per_node = [pl.score(state, pi, env.node(n))[0] for n in names]
    idx = np.array([env.node(n).index for n in names], np.int64)
    assert pl.score_all(state, pi, env.snapshot, idx).tolist() == per_node
    assert [pl.score(CycleState(), pi, env.node(n))[0] for n in names] == per_node  # without PreScore state
    return per_node


def _n(name: str, cpu: str, mem: str, **extra: str):
    """Extra resources as keyword arguments: abc_com__xyz="4" is abc.com/xyz."""
    return make_node(
        name, cpu=cpu, mem=mem, extra={k.replace("__", "/").replace("_", "."): v for k, v in extra.items()}
    )


REQ = (_rpod({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}),)
EXT = "abc.com/xyz"
EXT_SET = [*DEFAULT, ResourceSpec(EXT, 1)]

LEAST_CASES = [
    (
        "nothing scheduled, nothing requested",
        _rpod(),
        [_n("node1", "4000", "10000"), _n("node2", "4000", "10000")],
        [],
        DEFAULT,
        [100, 100],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        REQ[0],
        [_n("node1", "4000", "10000"), _n("node2", "6000", "10000")],
        [],
        DEFAULT,
        [37, 50],
    ),
    (
        "no resources requested, pods scheduled",
        _rpod(),
        [_n("node1", "4000", "10000"), _n("node2", "4000", "10000")],
        [_rpod(node="node1", name="a"), _rpod(node="node1", name="b"), _rpod(node="node2", name="c")],
        DEFAULT,
        [100, 100],
    ),
    (
        "no resources requested, pods scheduled with resources",
        _rpod(),
        [_n("node1", "10000", "20000"), _n("node2", "10000", "20000")],
        [
            _rpod({"cpu": "3000", "memory": "0"}, node="node1", name="a"),
            _rpod({"cpu": "3000", "memory": "0"}, node="node1", name="b"),
            _rpod({"cpu": "3000", "memory": "0"}, node="node2", name="c"),
            _rpod({"cpu": "3000", "memory": "5000"}, node="node2", name="d"),
        ],
        DEFAULT,
        [70, 57],
    ),
    (
        "resources requested, pods scheduled with resources",
        REQ[0],
        [_n("node1", "10000", "20000"), _n("node2", "10000", "20000")],
        [
            _rpod({"cpu": "3000", "memory": "0"}, node="node1", name="a"),
            _rpod({"cpu": "3000", "memory": "5000"}, node="node2", name="b"),
        ],
        DEFAULT,
        [57, 45],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        REQ[0],
        [_n("node1", "10000", "20000"), _n("node2", "10000", "50000")],
        [
            _rpod({"cpu": "3000", "memory": "0"}, node="node1", name="a"),
            _rpod({"cpu": "3000", "memory": "5000"}, node="node2", name="b"),
        ],
        DEFAULT,
        [57, 60],
    ),
    (
        "requested resources exceed node capacity",
        _rpod({"cpu": "3000", "memory": "0"}),
        [_n("node1", "4000", "10000"), _n("node2", "4000", "10000")],
        [
            _rpod({"cpu": "3000", "memory": "0"}, node="node1", name="a"),
            _rpod({"cpu": "3000", "memory": "5000"}, node="node2", name="b"),
        ],
        DEFAULT,
        [50, 25],
    ),
    (
        "zero node resources, pods scheduled with resources",
        _rpod(),
        [_n("node1", "0", "0"), _n("node2", "0", "0")],
        [_rpod({"cpu": "3000", "memory": "0"}, node="node1", name="a")],
        DEFAULT,
        [0, 0],
    ),
    (
        "different weight on CPU and memory",
        REQ[0],
        [_n("node1", "4000", "10000"), _n("node2", "6000", "10000")],
        [],
        [ResourceSpec("memory", 2), ResourceSpec("cpu", 1)],
        [41, 50],
    ),
    (
        "bypass extended resource if the pod does not request",
        REQ[0],
        [_n("node1", "6000", "10000"), _n("node2", "6000", "10000", abc_com__xyz="4")],
        [],
        EXT_SET,
        [50, 50],
    ),
    (
        "honor extended resource if the pod requests",
        _rpod({"cpu": "3000", "memory": "5000", EXT: "2"}),
        [_n("node1", "6000", "10000", abc_com__xyz="4"), _n("node2", "6000", "10000", abc_com__xyz="10")],
        [],
        EXT_SET,
        [50, 60],
    ),
    (
        "if the node doesn't have a resource",
        _rpod({"cpu": "3000", "memory": "4000"}),
        [_n("node1", "6000", "10000"), _n("node2", "6000", "10000", abc_com__xyz="4")],
        [],
        [ResourceSpec(EXT, 2), ResourceSpec("cpu", 1), ResourceSpec("memory", 1)],
        [55, 55],
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "existing", "resources", "want"), LEAST_CASES, ids=[c[0] for c in LEAST_CASES]
)
def test_least_allocated(name: str, pod, nodes, existing, resources, want: list[int]) -> None:
    assert _scores(ScoringStrategy(LEAST_ALLOCATED, resources), pod, nodes, existing) == want


MOST_CASES = [
    (
        "nothing scheduled, nothing requested",
        _rpod(),
        [_n("node1", "4000", "10000"), _n("node2", "4000", "10000")],
        [],
        DEFAULT,
        [0, 0],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        REQ[0],
        [_n("node1", "4000", "10000"), _n("node2", "6000", "10000")],
        [],
        DEFAULT,
        [62, 50],
    ),
    (
        "no resources requested, pods scheduled with resources",
        _rpod(),
        [_n("node1", "10000", "20000"), _n("node2", "10000", "20000")],
        [
            _rpod({"cpu": "3000", "memory": "0"}, node="node1", name="a"),
            _rpod({"cpu": "3000", "memory": "0"}, node="node1", name="b"),
            _rpod({"cpu": "3000", "memory": "0"}, node="node2", name="c"),
            _rpod({"cpu": "3000", "memory": "5000"}, node="node2", name="d"),
        ],
        DEFAULT,
        [30, 42],
    ),
    (
        "resources requested, pods scheduled with resources",
        REQ[0],
        [_n("node1", "10000", "20000"), _n("node2", "10000", "20000")],
        [
            _rpod({"cpu": "3000", "memory": "0"}, node="node1", name="a"),
            _rpod({"cpu": "3000", "memory": "5000"}, node="node2", name="b"),
        ],
        DEFAULT,
        [42, 55],
    ),
    (
        "requested resources at node capacity",
        _rpod({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        [_n("node1", "4000", "10000"), _n("node2", "10000", "50000")],
        [],
        DEFAULT,
        [95, 34],
    ),
    (
        "different weight on CPU and memory",
        REQ[0],
        [_n("node1", "4000", "10000"), _n("node2", "6000", "10000")],
        [],
        [ResourceSpec("memory", 2), ResourceSpec("cpu", 1)],
        [58, 50],
    ),
    (
        "honor extended resource if the pod requests",
        _rpod({"cpu": "3000", "memory": "5000", EXT: "2"}),
        [_n("node1", "6000", "10000", abc_com__xyz="4"), _n("node2", "6000", "10000", abc_com__xyz="10")],
        [],
        EXT_SET,
        [50, 40],
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "existing", "resources", "want"), MOST_CASES, ids=[c[0] for c in MOST_CASES]
)
def test_most_allocated(name: str, pod, nodes, existing, resources, want: list[int]) -> None:
    assert _scores(ScoringStrategy("MostAllocated", resources), pod, nodes, existing) == want


def _rtcr(shape: list[tuple[int, int]], resources: list[ResourceSpec] = DEFAULT) -> ScoringStrategy:
    return ScoringStrategy(
        "RequestedToCapacityRatio",
        resources,
        RequestedToCapacityRatioParam([UtilizationShapePoint(u, s) for u, s in shape]),
    )


DECREASING = [(0, 10), (100, 0)]


@pytest.mark.parametrize(
    ("pod", "nodes", "existing", "want"),
    [
        (
            _rpod(),
            [_n("node1", "4000", "10000"), _n("node2", "4000", "10000")],
            [_rpod(node="node1", name="a"), _rpod(node="node1", name="b")],
            [100, 100],
        ),
        (
            REQ[0],
            [_n("node1", "4000", "10000"), _n("node2", "6000", "10000")],
            [_rpod(node="node1", name="a"), _rpod(node="node1", name="b")],
            [38, 50],
        ),  # round(37.5) = 38
        (
            _rpod(),
            [_n("node1", "4000", "10000"), _n("node2", "6000", "10000")],
            [
                _rpod({"cpu": "3000", "memory": "5000"}, node="node1", name="a"),
                _rpod({"cpu": "3000", "memory": "5000"}, node="node2", name="b"),
            ],
            [38, 50],
        ),
    ],
)
def test_requested_to_capacity_ratio(pod, nodes, existing, want: list[int]) -> None:
    assert _scores(_rtcr(DECREASING), pod, nodes, existing) == want


@pytest.mark.parametrize(
    ("pod", "existing", "want"),
    [
        (_rpod(), [], [0, 0]),
        (_rpod({"intel.com/foo": "2"}), [], [2, 5]),
        (_rpod({"intel.com/foo": "2"}), [_rpod({"intel.com/foo": "2"}, node="node2", name="x")], [2, 10]),
        (_rpod({"intel.com/foo": "4"}), [], [5, 10]),
    ],
)
def test_resource_bin_packing_single_extended(pod, existing, want: list[int]) -> None:
    nodes = [_n("node1", "4000", "10000Mi", intel_com__foo="8"), _n("node2", "4000", "10000Mi", intel_com__foo="4")]
    strategy = _rtcr([(0, 0), (100, 1)], [ResourceSpec("intel.com/foo", 1)])
    assert _scores(strategy, pod, nodes, existing) == want


def test_resource_bin_packing_multiple_extended() -> None:
    nodes = [
        _n("node1", "4000", "10000Mi", intel_com__foo="8", intel_com__bar="4"),
        _n("node2", "4000", "10000Mi", intel_com__foo="4", intel_com__bar="8"),
    ]
    strategy = _rtcr([(0, 0), (100, 1)], [ResourceSpec("intel.com/foo", 3), ResourceSpec("intel.com/bar", 5)])
    assert _scores(strategy, _rpod(), nodes, []) == [0, 0]
    # node1: foo 2/8 -> 2, bar 2/4 -> 5: round((2*3 + 5*5) / 8) = 4; node2: foo 2/4 -> 5, bar 2/8 -> 2: round(25/8) = 3
    assert _scores(strategy, _rpod({"intel.com/foo": "2", "intel.com/bar": "2"}), nodes, []) == [4, 3]


def test_decreasing_shape_truncates_toward_zero() -> None:
    # shape (0,100) -> (30,0): at 10% utilization Go computes 100 + (-100*10)/30 = 100 - 33 = 67 (not 66)
    nodes = [_n("node1", "1000", "1000"), _n("node2", "1000", "1000"), _n("node3", "1000", "1000")]
    existing = [_rpod({"cpu": "200"}, node="node2", name="a"), _rpod({"cpu": "400"}, node="node3", name="b")]
    strategy = _rtcr([(0, 10), (30, 0)], [ResourceSpec("cpu", 1)])
    # node1: 10% -> 67; node2: 30% -> 0 (a zero resource score is left out: 0); node3: 50% -> past the shape -> 0
    assert _scores(strategy, _rpod({"cpu": "100"}), nodes, existing) == [67, 0, 0]


@pytest.mark.parametrize(
    ("points", "cases"),
    [
        (
            [(10, 1), (90, 9)],
            [
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
        ),
        ([(0, 2), (40, 10), (100, 0)], [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)]),
        ([(0, 2), (40, 2), (100, 2)], [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
        ([(0, 100), (30, 0)], [(10, 67), (20, 34), (29, 4), (1, 97)]),
    ],
)
def test_broken_linear_function(points: list[tuple[int, int]], cases: list[tuple[int, int]]) -> None:
    f = BrokenLinear(points)
    assert [f(p) for p, _ in cases] == [want for _, want in cases]
    assert f.vec(np.array([p for p, _ in cases], np.int64)).tolist() == [want for _, want in cases]


@pytest.mark.parametrize(
    ("a", "b", "q"), [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (0, 5, 0), (-1000, 30, -33)]
)
def test_go_div(a: int, b: int, q: int) -> None:
    assert go_div(a, b) == q


@pytest.mark.parametrize(("x", "r"), [(37.5, 38), (37.4999, 37), (-2.5, -3), (2.5, 3), (0.5, 1), (-0.4, 0)])
def test_go_round(x: float, r: int) -> None:
    assert go_round(x) == r


def test_scorer_pod_requests_use_non_zero_defaults_unless_requested() -> None:
    pi = PodInfo(make_pod("p", spec={"containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "i"}]}))
    non_zero = ResourceAllocationScorer(LEAST_ALLOCATED, DEFAULT, use_requested=False)
    assert non_zero.pod_requests(pi) == [200, 400 * 2**20]
    assert ResourceAllocationScorer(LEAST_ALLOCATED, DEFAULT, use_requested=True).pod_requests(pi) == [0, 0]


def test_scorer_non_zero_requests_with_pod_level_resources() -> None:
    pi = PodInfo(
        make_pod(
            "p",
            spec={
                "resources": {"requests": {"cpu": "1"}},
                "containers": [
                    {"name": "a", "image": "i", "resources": {"requests": {"memory": "100Mi"}}},
                    {"name": "b", "image": "i"},
                ],
            },
        )
    )
    # NodeResourcesFit's v1.34 scorer skips pod-level requests: 100m + 100m, not 1 cpu
    # (reference: this pod scores 80 on a 1-cpu node, ../../api/cases/quantities/fit-scoring-skips-pod-level.yaml).
    scorer = ResourceAllocationScorer(LEAST_ALLOCATED, DEFAULT, use_requested=False)
    assert scorer.pod_requests(pi) == [200, 300 * 2**20]
    # BalancedAllocation's does not.
    assert ResourceAllocationScorer(LEAST_ALLOCATED, DEFAULT, use_requested=True).pod_requests(pi) == [
        1000,
        100 * 2**20,
    ]


def test_scorer_keeps_the_last_pod_shape_only_for_pods_alike() -> None:
    """pod_requests and row_score reuse the last answer for replicas (one requests object), never for a pod whose
    requests differ, whatever the order the shapes come in."""

    def pod(name: str, cpu: str, mem: str | None = None) -> PodInfo:
        req = {"cpu": cpu, **({"memory": mem} if mem else {})}
        return PodInfo(
            make_pod(name, spec={"containers": [{"name": "c", "image": "i", "resources": {"requests": req}}]})
        )

    small, big, small2 = pod("a", "100m", "1Gi"), pod("b", "2", "1Gi"), pod("c", "100m", "1Gi")
    no_memory = pod("d", "100m")
    assert small.requests is small2.requests  # replicas share it (pod_resources)
    scorer = ResourceAllocationScorer(LEAST_ALLOCATED, DEFAULT, use_requested=False)
    snap = Env(nodes=[make_node("n")]).snapshot
    seen = []
    for pi in (small, small2, big, small, no_memory, small, no_memory):
        reqs = scorer.pod_requests(pi)
        seen.append(reqs)
        assert scorer.row_score(snap, reqs).key == (scorer, tuple(reqs))
    small_req, big_req, no_memory_req = [100, 2**30], [2000, 2**30], [100, 200 * 2**20]
    assert seen == [small_req, small_req, big_req, small_req, no_memory_req, small_req, no_memory_req]
    assert seen[1] is seen[0]  # replicas one after the other: the same list
    assert scorer.row_score(snap, seen[5]) is scorer.row_score(snap, seen[5])


# ---------------------------------------------------------------- queueing hints


def test_node_change_hint() -> None:
    _, node_ev = Fit().events_to_register()
    pod = make_pod("p", "2", "1Gi")
    small, big = make_node("n", cpu="1"), make_node("n", cpu="4")
    assert node_ev.hint(pod, None, small) == QueueingHint.QUEUE_SKIP
    assert node_ev.hint(pod, None, big) == QueueingHint.QUEUE
    assert node_ev.hint(pod, small, big) == QueueingHint.QUEUE
    assert node_ev.hint(pod, big, make_node("n", cpu="4", labels={"x": "y"})) == QueueingHint.QUEUE_SKIP
    assert node_ev.hint(pod, make_node("n", cpu="4", pods="1"), big) == QueueingHint.QUEUE  # more pods allowed


def test_pod_event_hint() -> None:
    pod_ev, _ = Fit().events_to_register()
    pod = make_pod("p", "2")
    assert pod_ev.hint(pod, make_pod("gone", "1", node="n1"), None) == QueueingHint.QUEUE
    assert pod_ev.hint(pod, make_pod("gone", "1"), None) == QueueingHint.QUEUE_SKIP  # never bound


@pytest.mark.parametrize("strategy", [LEAST_ALLOCATED, "MostAllocated", "BalancedAllocation"])
def test_one_row_scorer_is_the_reference_score(strategy: str) -> None:
    """The written-out cpu/memory arithmetic RowScores uses for one changed node (ResourceAllocationScorer._one_row)
    gives `score`'s number, whatever the amounts: ordinary ones, zero allocatable, beyond NARROW, wrapping."""
    import random

    from kubesched.framework.types import NodeInfo, Resource

    rng = random.Random(7)
    amounts = [0, 1, 3, 100, 999, 4000, 10**9, 32 * 2**30, 2**53 + 1, 2**54, 2**62, 2**63 - 1]
    for weights in ((1, 1), (3, 5)):
        resources = [ResourceSpec("cpu", weights[0]), ResourceSpec("memory", weights[1])]
        for use_requested in (False, True):
            scorer = ResourceAllocationScorer(strategy, resources, use_requested=use_requested)
            for _ in range(400):
                requests = (rng.choice(amounts), rng.choice(amounts))
                ni = NodeInfo()
                ni.allocatable = Resource(rng.choice(amounts), rng.choice(amounts))
                ni.requested = Resource(rng.choice(amounts), rng.choice(amounts))
                ni.non_zero_requested = Resource(rng.choice(amounts), rng.choice(amounts))
                assert scorer._one_row(requests)(ni) == scorer.score(ni, requests), (requests, ni)
