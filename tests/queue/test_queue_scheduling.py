"""The scheduling queue (backend/queue/scheduling_queue.go, backoff_queue.go, active_queue.go)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.framework.events import (
    ActionType,
    ClusterEvent,
    QueueingHint,
    Resource,
)
from kubesched.framework.interface import PreEnqueuePlugin
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.prioritysort import PrioritySort
from kubesched.plugins.schedulinggates import SchedulingGates
from kubesched.queue.nominator import NominatingInfo
from kubesched.queue.scheduling_queue import (
    ACTIVE_Q,
    BACKOFF_Q,
    UNSCHEDULABLE_Q,
    HintFunction,
    SchedulingQueue,
)
from kubesched.testing import make_pod

PROFILE = "default-scheduler"
NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD)
NODE_LABEL = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL)
POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE)


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _queue(
    clock: Clock,
    hints: dict[ClusterEvent, list[HintFunction]] | None = None,
    pre_enqueue: list[PreEnqueuePlugin] | None = None,
    window_phase: float = 0.0,
) -> SchedulingQueue:
    if hints is None:
        hints = {
            NODE_ADD: [HintFunction("Fit", lambda pod, old, new: QueueingHint.QUEUE)],
            NODE_LABEL: [HintFunction("Fit", lambda pod, old, new: QueueingHint.QUEUE_SKIP)],
            POD_DELETE: [HintFunction("Ports", None)],
        }
        for e in SchedulingGates().events_to_register():
            hints.setdefault(e.event, []).append(HintFunction(SchedulingGates.name, e.hint))
    return SchedulingQueue(
        PrioritySort(),
        clock,
        pre_enqueue_plugins={PROFILE: pre_enqueue if pre_enqueue is not None else [SchedulingGates()]},
        queueing_hints={PROFILE: hints},
        window_phase=window_phase,
    )


def _pi(name: str, priority: int = 0, **kw: Any) -> PodInfo:
    return PodInfo(make_pod(name, priority=priority, **kw))


def _fail(q: SchedulingQueue, name: str, plugins: set[str] | None = None, pending: set[str] | None = None) -> str:
    """Pop `name` (must be the head) and report it unschedulable by `plugins`."""
    qpi = q.pop()
    assert qpi is not None and qpi.pod_info.name == name
    qpi.unschedulable_plugins = set(plugins or ())
    qpi.pending_plugins = set(pending or ())
    return q.add_unschedulable_if_not_present(qpi)


def _where(q: SchedulingQueue, pi: PodInfo) -> str:
    if pi.uid in q.active_q:
        return ACTIVE_Q
    if pi.uid in q.backoff_q or pi.uid in q.error_backoff_q:
        return BACKOFF_Q
    if pi.uid in q.unschedulable:
        return UNSCHEDULABLE_Q
    return ""


# ---------------------------------------------------------------- ordering


def test_priority_sort_then_arrival_time() -> None:
    clock = Clock()
    q = _queue(clock)
    for name, prio in [("low-1", 10), ("high-1", 100), ("low-2", 10), ("mid", 50), ("high-2", 100)]:
        q.add(_pi(name, prio))
        clock.t += 1
    order = [q.pop().pod_info.name for _ in range(5)]
    assert order == ["high-1", "high-2", "mid", "low-1", "low-2"]
    assert q.pop() is None


def test_same_priority_and_time_keep_arrival_order() -> None:
    q = _queue(Clock())
    for name in ["a", "b", "c"]:
        q.add(_pi(name))
    assert [q.pop().pod_info.name for _ in range(3)] == ["a", "b", "c"]


def test_pop_counts_attempts_and_clears_rejectors() -> None:
    clock = Clock()
    q = _queue(clock)
    pi = _pi("p")
    q.add(pi)
    qpi = q.pop()
    assert qpi.attempts == 1
    assert qpi.initial_attempt_timestamp == 1000.0
    assert q.is_in_flight(pi.uid)
    qpi.unschedulable_plugins = {"Fit"}
    q.add_unschedulable_if_not_present(qpi)
    assert not q.is_in_flight(pi.uid)
    clock.t += 100
    q.move_all_to_active_or_backoff(NODE_ADD)
    qpi = q.pop()
    assert qpi.attempts == 2
    assert qpi.unschedulable_plugins == set()
    assert qpi.initial_attempt_timestamp == 1000.0


# ---------------------------------------------------------------- backoff


@pytest.mark.parametrize(("failures", "seconds"), [(1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (6, 10), (12, 10)])
def test_backoff_doubles_from_one_second_up_to_ten(failures: int, seconds: int) -> None:
    clock = Clock(1000.0)
    q = _queue(clock)
    pi = _pi("p")
    q.add(pi)
    qpi = None
    for _ in range(failures):
        qpi = q.find(pi.uid)
        assert _fail(q, "p", {"Fit"}) == UNSCHEDULABLE_Q
        q.move_all_to_active_or_backoff(NODE_ADD)
        assert _where(q, pi) == BACKOFF_Q
        qpi = q.find(pi.uid)
    assert qpi.unschedulable_count == failures
    assert qpi.backoff_expiration == 1000.0 + seconds
    assert q.next_backoff_expiry() == 1000.0 + seconds


def test_backoff_expiration_is_truncated_to_the_one_second_window() -> None:
    clock = Clock(1000.7)
    q = _queue(clock)
    pi = _pi("p")
    q.add(pi)
    _fail(q, "p", {"Fit"})
    q.move_all_to_active_or_backoff(NODE_ADD)
    qpi = q.find(pi.uid)
    assert qpi.backoff_expiration == 1001.0  # 1000.7 + 1 s, truncated to the second
    clock.t = 1000.99
    assert q.is_backing_off(qpi)
    # Upstream compares with the start of the current window: the whole window of the expiry still backs off.
    clock.t = 1001.0
    assert q.is_backing_off(qpi)
    clock.t = 1001.99
    assert q.is_backing_off(qpi)
    clock.t = 1002.0
    assert not q.is_backing_off(qpi)


def test_backoff_windows_start_where_the_wall_clock_seconds_do() -> None:
    # The clock reads 0 half-way through a wall-clock second: windows run from x.5 to (x+1).5 on it.
    clock = Clock(0.3)
    q = _queue(clock, window_phase=0.5)
    early, late = _pi("early", 1), _pi("late", 9)
    q.add(early)
    _fail(q, "early", {"Fit"})  # failed at 0.3: expires 1.3, in the window [0.5, 1.5)
    clock.t = 0.6
    q.add(late)
    _fail(q, "late", {"Fit"})  # failed at 0.6: expires 1.6, in the window [1.5, 2.5)
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert (q.find(early.uid).backoff_expiration, q.find(late.uid).backoff_expiration) == (0.5, 1.5)
    # Earlier window first, whatever the priorities; with windows on whole seconds both share [1, 2).
    assert q.backoff_q.peek().pod_info.name == "early"
    clock.t = 1.49
    assert q.is_backing_off(q.find(early.uid))
    clock.t = 1.5
    assert not q.is_backing_off(q.find(early.uid))
    assert q.is_backing_off(q.find(late.uid))
    aligned = _queue(Clock(0.3))
    assert aligned._window_start(1.3) == aligned._window_start(1.6) == 1.0


def test_a_pod_that_never_failed_is_not_backing_off_even_in_its_arrival_window() -> None:
    clock = Clock(1000.5)
    q = _queue(clock)
    pi = _pi("p")
    q.add(pi)
    qpi = q.pop()
    assert qpi is not None
    assert not q.is_backing_off(qpi)
    assert qpi.backoff_expiration is None  # nothing cached before a failure


def test_backoff_completed_pods_are_flushed_to_active() -> None:
    clock = Clock()
    q = _queue(clock)
    a, b = _pi("a"), _pi("b")
    q.add(a)
    q.add(b)
    _fail(q, "a", {"Fit"})
    _fail(q, "b", {"Fit"})
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert (_where(q, a), _where(q, b)) == (BACKOFF_Q, BACKOFF_Q)
    q.flush_backoff_completed()
    assert (_where(q, a), _where(q, b)) == (BACKOFF_Q, BACKOFF_Q)
    clock.t += 1  # the expiry's own window: not yet
    q.flush_backoff_completed()
    assert (_where(q, a), _where(q, b)) == (BACKOFF_Q, BACKOFF_Q)
    clock.t += 1
    q.flush_backoff_completed()
    assert (_where(q, a), _where(q, b)) == (ACTIVE_Q, ACTIVE_Q)


def test_backoff_queue_orders_by_expiration_then_priority() -> None:
    clock = Clock(1000.2)
    q = _queue(clock)
    low, high = _pi("low", 1), _pi("high", 9)
    q.add(low)
    clock.t = 1000.4
    q.add(high)
    _fail(q, "high", {"Fit"})
    clock.t = 1000.3  # same 1 s window after alignment
    _fail(q, "low", {"Fit"})
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.backoff_q.peek().pod_info.name == "high"


def test_pop_falls_back_to_backoff_queue_when_active_is_empty() -> None:
    clock = Clock()
    q = _queue(clock)
    pi = _pi("p")
    q.add(pi)
    _fail(q, "p", {"Fit"})
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert _where(q, pi) == BACKOFF_Q
    assert q.is_backing_off(q.find(pi.uid))
    qpi = q.pop()  # activeQ is empty: the backoffQ head, still backing off
    assert qpi is not None and qpi.pod_info is pi
    assert qpi.attempts == 2
    assert _where(q, pi) == ""


def test_active_queue_wins_over_backoff_queue() -> None:
    clock = Clock()
    q = _queue(clock)
    a, b = _pi("a", 100), _pi("b", 0)
    q.add(a)
    _fail(q, "a", {"Fit"})
    q.move_all_to_active_or_backoff(NODE_ADD)
    q.add(b)
    assert q.pop().pod_info is b
    assert q.pop().pod_info is a


def test_pods_without_rejecting_plugins_go_to_backoff_with_error_counts() -> None:
    clock = Clock()
    q = _queue(clock)
    pi = _pi("p")
    q.add(pi)
    assert _fail(q, "p", set()) == BACKOFF_Q
    qpi = q.find(pi.uid)
    assert (qpi.consecutive_errors_count, qpi.unschedulable_count) == (1, 0)
    assert pi.uid in q.error_backoff_q
    assert q.pop() is None  # the error backoff queue is not popped early
    clock.t += 1
    q.flush_backoff_completed()
    assert q.pop() is None  # its expiry's window has only begun
    clock.t += 1
    q.flush_backoff_completed()
    assert _fail(q, "p", set()) == BACKOFF_Q
    assert q.find(pi.uid).consecutive_errors_count == 2
    assert q.find(pi.uid).backoff_expiration == clock.t + 2
    clock.t += 3
    q.flush_backoff_completed()
    # a rejection by a plugin resets the error count
    _fail(q, "p", {"Fit"})
    qpi = q.find(pi.uid)
    assert (qpi.consecutive_errors_count, qpi.unschedulable_count) == (0, 1)


# ---------------------------------------------------------------- events and hints


def test_unschedulable_pod_moves_only_when_a_rejecting_plugins_hint_says_queue() -> None:
    clock = Clock()
    q = _queue(clock)
    pi = _pi("p")
    q.add(pi)
    assert _fail(q, "p", {"Fit"}) == UNSCHEDULABLE_Q
    q.move_all_to_active_or_backoff(NODE_LABEL)  # Fit registered it, but its hint skips
    assert _where(q, pi) == UNSCHEDULABLE_Q
    q.move_all_to_active_or_backoff(POD_DELETE)  # registered only by another plugin
    assert _where(q, pi) == UNSCHEDULABLE_Q
    q.move_all_to_active_or_backoff(ClusterEvent(Resource.PERSISTENT_VOLUME, ActionType.ADD))  # nobody's
    assert _where(q, pi) == UNSCHEDULABLE_Q
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert _where(q, pi) == BACKOFF_Q  # still backing off


def test_event_after_backoff_goes_straight_to_active() -> None:
    clock = Clock()
    q = _queue(clock)
    pi = _pi("p")
    q.add(pi)
    _fail(q, "p", {"Fit"})
    clock.t += 5
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert _where(q, pi) == ACTIVE_Q


def test_plugin_without_hint_function_always_queues() -> None:
    q = _queue(Clock())
    pi = _pi("p")
    q.add(pi)
    _fail(q, "p", {"Ports"})
    q.move_all_to_active_or_backoff(POD_DELETE)
    assert _where(q, pi) == BACKOFF_Q


def test_a_failing_hint_function_queues_the_pod() -> None:
    def boom(pod: Any, old: Any, new: Any) -> QueueingHint:
        raise RuntimeError("hint failed")

    q = _queue(Clock(), hints={NODE_ADD: [HintFunction("Fit", boom)]})
    pi = _pi("p")
    q.add(pi)
    _fail(q, "p", {"Fit"})
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert _where(q, pi) == BACKOFF_Q


def test_more_specific_events_match_registered_ones() -> None:
    registered = ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT)
    q = _queue(Clock(), hints={registered: [HintFunction("Taint", None)]})
    pi = _pi("p")
    q.add(pi)
    _fail(q, "p", {"Taint"})
    q.move_all_to_active_or_backoff(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL))
    assert _where(q, pi) == UNSCHEDULABLE_Q
    q.move_all_to_active_or_backoff(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_TAINT))
    assert _where(q, pi) == BACKOFF_Q


def test_pending_plugin_queue_hint_means_queue_immediately() -> None:
    clock = Clock()
    q = _queue(clock)
    pi = _pi("p")
    q.add(pi)
    _fail(q, "p", pending={"Fit"})
    assert q.is_backing_off(q.find(pi.uid))
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert _where(q, pi) == ACTIVE_Q  # skips backoff


def test_events_while_in_flight_requeue_the_pod_on_failure() -> None:
    clock = Clock()
    q = _queue(clock)
    pi = _pi("p")
    q.add(pi)
    qpi = q.pop()
    q.move_all_to_active_or_backoff(NODE_ADD)  # happens during the scheduling cycle
    qpi.unschedulable_plugins = {"Fit"}
    assert q.add_unschedulable_if_not_present(qpi) == BACKOFF_Q
    assert not q.is_in_flight(pi.uid)


def test_in_flight_events_the_rejector_skips_leave_it_unschedulable() -> None:
    q = _queue(Clock())
    pi = _pi("p")
    q.add(pi)
    qpi = q.pop()
    q.move_all_to_active_or_backoff(NODE_LABEL)
    q.move_all_to_active_or_backoff(POD_DELETE)
    qpi.unschedulable_plugins = {"Fit"}
    assert q.add_unschedulable_if_not_present(qpi) == UNSCHEDULABLE_Q


def test_events_before_the_pop_are_not_replayed() -> None:
    q = _queue(Clock())
    pi = _pi("p")
    q.add(pi)
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert _fail(q, "p", {"Fit"}) == UNSCHEDULABLE_Q


# ---------------------------------------------------------------- PreEnqueue


def test_gated_pod_stays_in_the_unschedulable_pool_until_its_gates_go() -> None:
    q = _queue(Clock())
    gated = _pi("g", spec={"schedulingGates": [{"name": "example.com/wait"}]})
    q.add(gated)
    assert _where(q, gated) == UNSCHEDULABLE_Q
    qpi = q.find(gated.uid)
    assert qpi.gating_plugin == "SchedulingGates"
    assert qpi.unschedulable_plugins == {"SchedulingGates"}
    assert q.pending_counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}
    assert q.pop() is None
    q.move_all_to_active_or_backoff(NODE_ADD)  # not an event the gating plugin registered
    assert _where(q, gated) == UNSCHEDULABLE_Q
    ungated = PodInfo(make_pod("g"))
    q.update(gated, ungated)
    assert _where(q, ungated) == ACTIVE_Q
    assert q.pop().pod_info is ungated


class _Deny(PreEnqueuePlugin):
    name = "Deny"

    def __init__(self) -> None:
        self.allow: set[str] = set()

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        return None if pod.name in self.allow else Status(Code.UNSCHEDULABLE, "no")


def test_pre_enqueue_runs_again_when_the_pod_would_move() -> None:
    deny = _Deny()
    hints: dict[ClusterEvent, list[HintFunction]] = {NODE_ADD: [HintFunction("Deny", None)]}
    q = _queue(Clock(), hints=hints, pre_enqueue=[deny])
    pi = _pi("p")
    q.add(pi)
    assert _where(q, pi) == UNSCHEDULABLE_Q
    assert q.find(pi.uid).gating_plugin_events == [NODE_ADD]
    q.move_all_to_active_or_backoff(NODE_ADD)  # still denied
    assert _where(q, pi) == UNSCHEDULABLE_Q
    deny.allow.add("p")
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert _where(q, pi) == ACTIVE_Q


# ---------------------------------------------------------------- flush, delete, activate


def test_flush_moves_pods_older_than_five_minutes() -> None:
    clock = Clock(1000.0)
    q = _queue(clock)
    old, young = _pi("old"), _pi("young")
    q.add(old)
    _fail(q, "old", {"Fit"})
    clock.t = 1100.0
    q.add(young)
    _fail(q, "young", {"Fit"})
    clock.t = 1300.0  # exactly 300 s: not yet
    q.flush_unschedulable_leftover()
    assert (_where(q, old), _where(q, young)) == (UNSCHEDULABLE_Q, UNSCHEDULABLE_Q)
    assert q.next_unschedulable_timeout() == 1300.0
    clock.t = 1300.5
    q.flush_unschedulable_leftover()
    assert (_where(q, old), _where(q, young)) == (ACTIVE_Q, UNSCHEDULABLE_Q)


def test_delete_removes_the_pod_everywhere() -> None:
    q = _queue(Clock())
    a, b, c = _pi("a", 3), _pi("b", 2), _pi("c", 1)
    for p in (a, b, c):
        q.add(p)
    _fail(q, "a", {"Fit"})
    _fail(q, "b", {"Fit"})
    q.move_all_to_active_or_backoff(NODE_ADD)
    for p in (a, b, c):
        q.delete(p)
    assert q.find(a.uid) is None and q.find(b.uid) is None and q.find(c.uid) is None
    assert q.pop() is None


def test_activate_forces_an_unschedulable_pod_into_active() -> None:
    q = _queue(Clock())
    pi = _pi("p")
    q.add(pi)
    _fail(q, "p", {"Fit"})
    q.activate([pi])
    assert _where(q, pi) == ACTIVE_Q


def test_unscheduled_pod_add_registers_its_nomination() -> None:
    q = _queue(Clock())
    pod = make_pod("n")
    nominated = PodInfo(
        msgspec.structs.replace(pod, status=msgspec.structs.replace(pod.status, nominated_node_name="node-1"))
    )
    q.add(nominated)
    assert [p.uid for p in q.nominated_pods_for_node("node-1")] == [nominated.uid]
    q.delete(nominated)
    assert q.nominated_pods_for_node("node-1") == []
    pi = _pi("p")
    q.add_nominated_pod(pi, NominatingInfo("node-2", 1))
    assert [p.uid for p in q.nominated_pods_for_node("node-2")] == [pi.uid]


def test_update_in_active_queue_reorders_by_the_new_priority() -> None:
    clock = Clock()
    q = _queue(clock)
    a, b = _pi("a", 1), _pi("b", 5)
    q.add(a)
    clock.t += 1
    q.add(b)
    a2 = PodInfo(make_pod("a", priority=10))
    q.update(a, a2)
    assert q.pop().pod_info is a2
    assert q.pop().pod_info is b


def test_update_of_an_unknown_pod_adds_it_to_active() -> None:
    q = _queue(Clock())
    pi = _pi("p")
    q.update(pi, pi)
    assert _where(q, pi) == ACTIVE_Q


def test_force_activation_while_in_flight_requeues_on_failure() -> None:
    q = _queue(Clock())
    pi, other = _pi("p"), _pi("other")
    q.add(pi)
    q.add(other)
    qpi = q.pop()
    q.activate([other])  # another pod's activation is not for this one
    qpi.unschedulable_plugins = {"Fit"}
    assert q.add_unschedulable_if_not_present(qpi) == UNSCHEDULABLE_Q
    qpi = q.pop()  # "other"
    q.activate([qpi.pod_info])
    qpi.unschedulable_plugins = {"Fit"}
    assert q.add_unschedulable_if_not_present(qpi) == BACKOFF_Q


def test_force_activation_from_backoff_runs_pre_enqueue() -> None:
    deny = _Deny()
    deny.allow.add("p")
    q = _queue(Clock(), hints={NODE_ADD: [HintFunction("Fit", None)]}, pre_enqueue=[deny])
    pi = _pi("p")
    q.add(pi)
    _fail(q, "p", {"Fit"})
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert _where(q, pi) == BACKOFF_Q
    deny.allow.clear()
    q.activate([pi])
    assert _where(q, pi) == UNSCHEDULABLE_Q


def test_force_activation_takes_pods_from_the_error_backoff_heap() -> None:
    # backoffQueue.get/delete look in both heaps, so activate() finds a pod that failed with an error too.
    q = _queue(Clock())
    pi = _pi("p")
    q.add(pi)
    assert _fail(q, "p", set()) == BACKOFF_Q
    assert pi.uid in q.error_backoff_q
    q.activate([pi])
    assert _where(q, pi) == ACTIVE_Q
    assert pi.uid not in q.error_backoff_q
