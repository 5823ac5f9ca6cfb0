"""TaintToleration (framework/plugins/tainttoleration): cases from taint_toleration_test.go."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import QueueingHint
from kubesched.framework.interface import NodeScoreList
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.tainttoleration import TaintToleration
from kubesched.testing import Env, make_node, make_pod

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
PNS, NS = "PreferNoSchedule", "NoSchedule"


def _tol(key: str, value: str = "", effect: str = "", op: str = "") -> dict[str, Any]:
    return {k: v for k, v in {"key": key, "operator": op, "value": value, "effect": effect}.items() if v}


def _taint(key: str, value: str, effect: str) -> dict[str, Any]:
    return {"key": key, "value": value, "effect": effect}


def _pod(tolerations: list[dict[str, Any]]) -> PodInfo:
    return PodInfo(make_pod("pod1", spec={"tolerations": tolerations}))


@pytest.mark.parametrize(
    ("tolerations", "taints", "want"),
    [
        ([], [_taint("dedicated", "user1", NS)], Status(UU, "node(s) had untolerated taint {dedicated: user1}")),
        ([_tol("dedicated", "user1", NS)], [_taint("dedicated", "user1", NS)], None),
        (
            [_tol("dedicated", "user2", NS, "Equal")],
            [_taint("dedicated", "user1", NS)],
            Status(UU, "node(s) had untolerated taint {dedicated: user1}"),
        ),
        ([_tol("foo", effect=NS, op="Exists")], [_taint("foo", "bar", NS)], None),
        (
            [_tol("dedicated", "user2", NS, "Equal"), _tol("foo", effect=NS, op="Exists")],
            [_taint("dedicated", "user2", NS), _taint("foo", "bar", NS)],
            None,
        ),
        (
            [_tol("foo", "bar", PNS, "Equal")],
            [_taint("foo", "bar", NS)],
            Status(UU, "node(s) had untolerated taint {foo: bar}"),
        ),
        ([_tol("foo", "bar", op="Equal")], [_taint("foo", "bar", NS)], None),  # empty effect matches all
        ([_tol("dedicated", "user2", NS, "Equal")], [_taint("dedicated", "user1", PNS)], None),
        ([], [_taint("dedicated", "user1", PNS)], None),
        ([], [{"key": "dedicated", "effect": NS}], Status(UU, "node(s) had untolerated taint {dedicated: }")),
        # NoExecute is checked too; the first untolerated taint is reported
        (
            [_tol("a", op="Exists")],
            [_taint("a", "1", NS), _taint("b", "2", "NoExecute"), _taint("c", "3", NS)],
            Status(UU, "node(s) had untolerated taint {b: 2}"),
        ),
        ([_tol("", op="Exists")], [_taint("a", "1", NS), _taint("b", "2", "NoExecute")], None),
    ],
)
def test_filter(tolerations: list[dict[str, Any]], taints: list[dict[str, Any]], want: Status | None) -> None:
    env = Env([make_node("nodeA", taints=taints), make_node("clean")])
    pod = _pod(tolerations)
    pl = TaintToleration()
    got = pl.filter(CycleState(), pod, env.node("nodeA"))
    assert got == want
    assert pl.filter(CycleState(), pod, env.node("clean")) is None
    v = pl.filter_all(CycleState(), pod, env.snapshot)
    if want is None:
        assert v is None
    else:
        i = env.node("nodeA").index
        assert v.failed.tolist() == [j == i for j in range(2)]
        assert v.status(i) == want


def _scores(tolerations: list[dict[str, Any]], node_taints: list[list[dict[str, Any]]]) -> tuple[list[int], list[int]]:
    env = Env([make_node(f"node{i}", taints=t) for i, t in enumerate(node_taints)])
    pod = _pod(tolerations)
    pl = TaintToleration()
    state = CycleState()
    assert pl.pre_score(state, pod, env.snapshot.nodes) is None
    raw = [pl.score(state, pod, env.node(f"node{i}"))[0] for i in range(len(node_taints))]
    idx = np.array([env.node(f"node{i}").index for i in range(len(node_taints))], np.int64)
    assert pl.score_all(state, pod, env.snapshot, idx).tolist() == raw
    lst = NodeScoreList([f"node{i}" for i in range(len(node_taints))], np.array(raw, np.int64))
    assert pl.normalize_score(state, pod, lst) is None
    return raw, lst.scores.tolist()


@pytest.mark.parametrize(
    ("tolerations", "node_taints", "raw", "final"),
    [
        (
            [_tol("foo", "bar", PNS, "Equal")],
            [[_taint("foo", "bar", PNS)], [_taint("foo", "blah", PNS)]],
            [0, 1],
            [100, 0],
        ),
        (
            [_tol("cpu-type", "arm64", PNS, "Equal"), _tol("disk-type", "ssd", PNS, "Equal")],
            [
                [],
                [_taint("cpu-type", "arm64", PNS)],
                [_taint("cpu-type", "arm64", PNS), _taint("disk-type", "ssd", PNS)],
            ],
            [0, 0, 0],
            [100, 100, 100],
        ),
        (
            [_tol("foo", "bar", PNS, "Equal")],
            [
                [],
                [_taint("cpu-type", "arm64", PNS)],
                [_taint("cpu-type", "arm64", PNS), _taint("disk-type", "ssd", PNS)],
            ],
            [0, 1, 2],
            [100, 50, 0],
        ),
        (
            [_tol("cpu-type", "arm64", NS, "Equal"), _tol("disk-type", "ssd", NS, "Equal")],
            [
                [],
                [_taint("cpu-type", "arm64", NS)],
                [_taint("cpu-type", "arm64", PNS), _taint("disk-type", "ssd", PNS)],
            ],
            [0, 0, 2],
            [100, 100, 0],
        ),
        ([], [[], [_taint("cpu-type", "arm64", PNS)]], [0, 1], [100, 0]),
        # three untolerated on the worst node: 100 - 100*1/3 = 67 (Go integer division)
        (
            [],
            [[_taint("a", "1", PNS)], [_taint("a", "1", PNS), _taint("b", "1", PNS), _taint("c", "1", PNS)], []],
            [1, 3, 0],
            [67, 0, 100],
        ),
    ],
)
def test_score(tolerations, node_taints, raw: list[int], final: list[int]) -> None:
    assert _scores(tolerations, node_taints) == (raw, final)


def test_node_change_hint() -> None:
    ev = TaintToleration().events_to_register()
    node_hint, pod_hint = ev[0].hint, ev[1].hint
    pod = make_pod("p", spec={"tolerations": [_tol("a", op="Exists")]})
    tainted = make_node("n", taints=[_taint("b", "1", NS)])
    tolerated = make_node("n", taints=[_taint("a", "1", NS)])
    assert node_hint(pod, None, tolerated) == QueueingHint.QUEUE
    assert node_hint(pod, None, tainted) == QueueingHint.QUEUE_SKIP
    assert node_hint(pod, tainted, tolerated) == QueueingHint.QUEUE
    assert node_hint(pod, tolerated, tolerated) == QueueingHint.QUEUE_SKIP
    assert pod_hint(pod, pod, pod) == QueueingHint.QUEUE
    assert pod_hint(pod, None, make_pod("other")) == QueueingHint.QUEUE_SKIP


def test_score_follows_taint_changes_between_pods_alike() -> None:
    """score_all skips the counting while no node has a PreferNoSchedule taint (a per-snapshot cache):
    a taint added, changed or removed between two pods alike must show in the next pod's scores."""
    env = Env([make_node("node0"), make_node("node1", taints=[_taint("a", "b", NS)])])
    pl = TaintToleration()
    idx = np.array([0, 1], np.int64)

    def scores() -> list[int]:
        state = CycleState()
        pod = _pod([])
        assert pl.pre_score(state, pod, env.snapshot.nodes) is None
        assert pl.score_all(state, pod, env.snapshot, idx).tolist() == [
            pl.score(state, pod, ni)[0] for ni in env.snapshot.nodes
        ]
        return pl.score_all(state, pod, env.snapshot, idx).tolist()

    def retaint(name: str, taints: list[dict[str, Any]]) -> None:
        env.cache.update_node(env.cache.nodes[name].node, make_node(name, taints=taints))
        env.cache.update_snapshot(env.snapshot)

    assert scores() == [0, 0]
    retaint("node1", [_taint("a", "b", NS), _taint("c", "d", PNS)])
    assert scores() == [0, 1]
    retaint("node0", [_taint("c", "d", PNS), _taint("e", "f", PNS)])
    assert scores() == [2, 1]
    retaint("node0", [])
    retaint("node1", [_taint("a", "b", NS)])
    assert scores() == [0, 0]
