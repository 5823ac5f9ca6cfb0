"""PrioritySort, SchedulingGates, NodeUnschedulable, NodeName (framework/plugins/...)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, QueueingHint, Resource
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.plugins.nodename import NodeName
from kubesched.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.plugins.prioritysort import PrioritySort
from kubesched.plugins.schedulinggates import SchedulingGates
from kubesched.testing import Env, make_node, make_pod

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def _qpi(name: str, priority: int | None, ts: float, seq: int = 0) -> QueuedPodInfo:
    return QueuedPodInfo(PodInfo(make_pod(name, priority=priority)), ts, seq)


# ---------------------------------------------------------------- PrioritySort


@pytest.mark.parametrize(
    ("a", "b", "less"),
    [
        ((10, 2.0), (5, 1.0), True),  # higher priority first, whatever the time
        ((5, 1.0), (10, 2.0), False),
        ((5, 1.0), (5, 2.0), True),  # same priority: earlier first
        ((5, 2.0), (5, 1.0), False),
        ((5, 1.0), (5, 1.0), False),
        ((None, 1.0), (0, 2.0), True),  # no priority counts as 0
        ((-1, 1.0), (None, 2.0), False),
    ],
)
def test_priority_sort_less(a: tuple[int | None, float], b: tuple[int | None, float], less: bool) -> None:
    pl = PrioritySort()
    qa, qb = _qpi("a", *a), _qpi("b", *b)
    assert pl.less(qa, qb) is less
    assert (pl.sort_key(qa) < pl.sort_key(qb)) is less


# ---------------------------------------------------------------- SchedulingGates


def test_scheduling_gates_pre_enqueue() -> None:
    pl = SchedulingGates()
    assert pl.pre_enqueue(PodInfo(make_pod("p"))) is None
    gated = PodInfo(make_pod("g", spec={"schedulingGates": [{"name": "foo"}, {"name": "bar"}]}))
    s = pl.pre_enqueue(gated)
    assert (s.code, s.message()) == (UU, "waiting for scheduling gates: [foo bar]")


def test_scheduling_gates_hint() -> None:
    (ev,) = SchedulingGates().events_to_register()
    assert (ev.event.resource, ev.event.action) == (Resource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    pod = make_pod("p")
    assert ev.hint(pod, pod, make_pod("p")) == QueueingHint.QUEUE
    assert ev.hint(pod, None, make_pod("other")) == QueueingHint.QUEUE_SKIP


# ---------------------------------------------------------------- NodeUnschedulable

UNSCHEDULABLE = "node(s) were unschedulable"


@pytest.mark.parametrize(
    ("tolerations", "unschedulable", "want"),
    [
        ([], False, None),
        ([], True, Status(UU, UNSCHEDULABLE)),
        ([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}], True, None),
        ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}], True, None),
        ([{"operator": "Exists"}], True, None),  # tolerates everything
        ([{"key": "node.kubernetes.io/unschedulable", "effect": "NoExecute"}], True, Status(UU, UNSCHEDULABLE)),
        ([{"key": "other", "operator": "Exists"}], True, Status(UU, UNSCHEDULABLE)),
    ],
)
def test_node_unschedulable_filter(tolerations: list[dict[str, Any]], unschedulable: bool, want: Status | None) -> None:
    env = Env([make_node("n1", unschedulable=unschedulable), make_node("n2")])
    pod = PodInfo(make_pod("p", spec={"tolerations": tolerations}))
    pl = NodeUnschedulable()
    got = pl.filter(CycleState(), pod, env.node("n1"))
    assert got == want
    verdicts = pl.filter_all(CycleState(), pod, env.snapshot)
    if want is None:
        assert verdicts is None or not verdicts.failed.any()
    else:
        assert verdicts.failed.tolist() == [True, False]
        assert verdicts.status(0) == want


def test_node_unschedulable_hints() -> None:
    evs = NodeUnschedulable().events_to_register()
    node_hint, pod_hint = evs[0].hint, evs[1].hint
    pod = make_pod("p")
    cordoned, free = make_node("n", unschedulable=True), make_node("n")
    assert node_hint(pod, None, free) == QueueingHint.QUEUE
    assert node_hint(pod, None, cordoned) == QueueingHint.QUEUE_SKIP
    assert node_hint(pod, cordoned, free) == QueueingHint.QUEUE
    assert node_hint(pod, free, free) == QueueingHint.QUEUE_SKIP
    assert node_hint(pod, free, cordoned) == QueueingHint.QUEUE_SKIP
    tolerant = make_pod("p", spec={"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]})
    assert pod_hint(pod, pod, tolerant) == QueueingHint.QUEUE
    assert pod_hint(pod, tolerant, tolerant) == QueueingHint.QUEUE_SKIP
    other = make_pod("q", spec={"tolerations": [{"operator": "Exists"}]})
    assert pod_hint(pod, make_pod("q"), other) == QueueingHint.QUEUE_SKIP


# ---------------------------------------------------------------- NodeName

NODE_NAME_REASON = "node(s) didn't match the requested node name"


@pytest.mark.parametrize(
    ("node_name", "want"),
    [("", [None, None]), ("n1", [None, Status(UU, NODE_NAME_REASON)]), ("gone", [Status(UU, NODE_NAME_REASON)] * 2)],
)
def test_node_name_filter(node_name: str, want: list[Status | None]) -> None:
    env = Env([make_node("n1"), make_node("n2")])
    pod = PodInfo(make_pod("p", node=node_name))
    pl = NodeName()
    assert [pl.filter(CycleState(), pod, ni) for ni in env.snapshot.nodes] == want
    verdicts = pl.filter_all(CycleState(), pod, env.snapshot)
    if node_name == "":
        assert verdicts is None
    else:
        assert verdicts.failed.tolist() == [w is not None for w in want]
        for i, w in enumerate(want):
            if w is not None:
                assert verdicts.status(i) == w
