"""PodTopologySpread PreScore / Score / NormalizeScore, default constraints and Go arithmetic."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from topology_harness import raw_scores, run_filter, scores

from kubesched.api.decode import decode
from kubesched.config.types import PodTopologySpreadArgs, TopologySpreadConstraintArg
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.gocompat.gomath import go_log, go_round, go_round_array
from kubesched.plugins.podtopologyspread.plugin import PodTopologySpread
from kubesched.testing import Env, make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def soft(key: str, skew: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": "s"}},
        **extra,
    }


def incoming(*constraints: dict[str, Any], **meta: Any) -> Any:
    meta.setdefault("labels", {"app": "s"})
    return make_pod("p", spec={"topologySpreadConstraints": list(constraints)}, **meta)


def s_pod(name: str, node: str, **kw: Any) -> Any:
    kw.setdefault("labels", {"app": "s"})
    return make_pod(name, node=node, **kw)


def cluster(pods: list[Any] = (), objects: list[Any] = (), extra_nodes: list[Any] = ()) -> Env:  # type: ignore[assignment]
    nodes = [
        make_node("a1", labels={ZONE: "a"}),
        make_node("a2", labels={ZONE: "a"}),
        make_node("b1", labels={ZONE: "b"}),
        *extra_nodes,
    ]
    return Env(nodes, pods, objects)


def plugin(env: Env, args: PodTopologySpreadArgs | None = None) -> PodTopologySpread:
    return PodTopologySpread.new(args, env.handle)


def test_zone_and_hostname_scores() -> None:
    env = cluster([s_pod("1", "a1"), s_pod("2", "a1"), s_pod("3", "b1")])
    pod = env.pod_info(incoming(soft(ZONE), soft(HOST, 2)))
    # zone: 2 domains -> log 4; a 2, b 1. hostname: 3 nodes -> log 5, + 1 (maxSkew 2).
    w2, w3 = go_log(4.0), go_log(5.0)
    want = {
        "a1": go_round(2 * w2 + 2 * w3 + 1),
        "a2": go_round(2 * w2 + 0 * w3 + 1),
        "b1": go_round(1 * w2 + 1 * w3 + 1),
    }
    assert raw_scores(plugin(env), env, pod) == {n: int(v) for n, v in want.items()}
    got = scores(plugin(env), env, pod)
    lo, hi = min(want.values()), max(want.values())
    assert got == {n: int(100 * (hi + lo - v) // hi) for n, v in want.items()}


def test_nodes_missing_a_key_are_ignored_and_score_zero() -> None:
    env = cluster([s_pod("1", "a1")], extra_nodes=[make_node("nz")])
    pod = env.pod_info(incoming(soft(ZONE)))
    got = scores(plugin(env), env, pod)
    assert got is not None and got["nz"] == 0
    # Ignored nodes do not count as hostname domains either, nor shift the others.
    assert got == {"a1": 0, "a2": 0, "b1": 100, "nz": 0}


def test_domains_come_from_feasible_nodes_but_counts_from_all_nodes() -> None:
    env = cluster([s_pod("1", "a1"), s_pod("2", "a1"), s_pod("3", "b1")])
    pod = env.pod_info(incoming(soft(ZONE)))
    # Only a2 and b1 are feasible; a1's pods still count for zone a.
    assert raw_scores(plugin(env), env, pod, ["a2", "b1"]) == {
        "a2": int(go_round(2 * go_log(4.0))),
        "b1": int(go_round(1 * go_log(4.0))),
    }


def test_node_affinity_policy_in_scoring() -> None:
    env = cluster([s_pod("1", "a1"), s_pod("2", "a1")])
    sel = {"nodeSelector": {ZONE: "b"}}
    pod = env.pod_info(make_pod("p", labels={"app": "s"}, spec={"topologySpreadConstraints": [soft(ZONE)], **sel}))
    # Honor: zone a's nodes do not match the selector, so their pods are not counted.
    assert raw_scores(plugin(env), env, pod, ["a2", "b1"]) == {"a2": 0, "b1": 0}
    pod = env.pod_info(
        make_pod(
            "p",
            labels={"app": "s"},
            spec={"topologySpreadConstraints": [soft(ZONE, nodeAffinityPolicy="Ignore")], **sel},
        )
    )
    assert raw_scores(plugin(env), env, pod, ["a2", "b1"]) == {"a2": int(go_round(2 * go_log(4.0))), "b1": 0}


def test_prescore_skips_without_soft_constraints() -> None:
    env = cluster()
    pl = plugin(env)
    for pod in (
        make_pod("p"),
        make_pod("p", spec={"topologySpreadConstraints": [{**soft(ZONE), "whenUnsatisfiable": "DoNotSchedule"}]}),
    ):
        s = pl.pre_score(CycleState(), env.pod_info(pod), env.snapshot.nodes)
        assert s is not None and s.code == Code.SKIP


def _owned(name: str, node: str = "", kind: str = "ReplicaSet", api: str = "apps/v1") -> Any:
    ref = {"apiVersion": api, "kind": kind, "name": "owner", "uid": "u", "controller": True}
    raw = {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "labels": {"app": "web"},
            "ownerReferences": [ref],
        },
        "spec": {"containers": [{"name": "c", "image": "i"}], **({"nodeName": node} if node else {})},
    }
    return decode("Pod", raw)


def test_system_default_constraints_need_a_selecting_owner_or_service() -> None:
    rs = (
        "ReplicaSet",
        decode(
            "ReplicaSet",
            {
                "metadata": {"name": "owner", "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"app": "web"}}},
            },
        ),
    )
    env = cluster([_owned("w1", "a1"), _owned("w2", "a1")], [rs], extra_nodes=[make_node("nz")])
    pl = plugin(env)
    # No selecting object: nothing to spread.
    assert raw_scores(pl, env, env.pod_info(make_pod("lonely", labels={"app": "web"}))) is None
    pod = env.pod_info(_owned("w3"))
    # System defaults: hostname (maxSkew 3) and zone (maxSkew 5), ScheduleAnyway only.
    assert run_filter(pl, env, pod) == dict.fromkeys(["a1", "a2", "b1", "nz"])
    raw = raw_scores(pl, env, pod)
    hw, zw = go_log(6.0), go_log(5.0)  # 4 hostnames; zones a, b and "" (nz has no zone label)
    assert raw == {
        "a1": int(go_round(2 * hw + 2 + 2 * zw + 4)),
        "a2": int(go_round(0 * hw + 2 + 2 * zw + 4)),
        "b1": int(go_round(0 * hw + 2 + 0 * zw + 4)),
        "nz": int(go_round(0 * hw + 2)),  # no zone label: only hostname spreading applies
    }


def test_service_selector_feeds_system_defaults() -> None:
    svc = (
        "Service",
        decode("Service", {"metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}),
    )
    env = cluster([make_pod("w1", labels={"app": "web"}, node="b1")], [svc])
    raw = raw_scores(plugin(env), env, env.pod_info(make_pod("w2", labels={"app": "web"})))
    assert raw is not None and raw["b1"] > raw["a1"] == raw["a2"]


def test_list_defaulting_uses_configured_constraints() -> None:
    svc = (
        "Service",
        decode("Service", {"metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}),
    )
    pods = [make_pod("w1", labels={"app": "web"}, node="a1"), make_pod("w2", labels={"app": "web"}, node="a2")]
    env = cluster(pods, [svc])
    args = PodTopologySpreadArgs(
        default_constraints=[
            TopologySpreadConstraintArg(max_skew=1, topology_key=ZONE, when_unsatisfiable="DoNotSchedule")
        ],
        defaulting_type="List",
    )
    got = run_filter(plugin(env, args), env, env.pod_info(make_pod("w3", labels={"app": "web"})))
    assert {n for n, s in got.items() if s is None} == {"b1"}
    # List with no constraints: no defaults at all.
    none = PodTopologySpreadArgs(default_constraints=[], defaulting_type="List")
    assert raw_scores(plugin(env, none), env, env.pod_info(make_pod("w3", labels={"app": "web"}))) is None


def test_normalize_reverses_with_integer_arithmetic() -> None:
    env = cluster([s_pod(str(i), "a1") for i in range(3)])
    pod = env.pod_info(incoming(soft(HOST)))
    got = scores(plugin(env), env, pod)
    # raw: a1 = round(3 * log 5) = 5, others 0 -> max 5, min 0: 100 * (5 + 0 - s) / 5.
    assert got == {"a1": 0, "a2": 100, "b1": 100}


def test_go_round_and_log() -> None:
    assert [go_round(x) for x in (0.5, 1.5, 2.5, -2.5, 2.4999999999999996)] == [1.0, 2.0, 3.0, -3.0, 2.0]
    xs = np.array([0.5, 1.5, 2.5, 3.49, 7.0])
    assert go_round_array(xs).tolist() == [1.0, 2.0, 3.0, 3.0, 7.0]
    assert go_log(1.0) == 0.0 and go_log(2.0) == math.log(2.0)
    for n in range(1, 5000):
        assert abs(go_log(float(n)) - math.log(n)) <= math.ulp(math.log(n)) if n > 1 else go_log(1.0) == 0.0
