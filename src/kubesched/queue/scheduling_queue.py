"""The scheduling queue (backend/queue/scheduling_queue.go, active_queue.go, backoff_queue.go).

Three places a pending pod can be:
- activeQ: ready to be tried, ordered by the profile's QueueSort (priority, then time);
- backoffQ: tried and failed; waits out its backoff (initial 1 s, doubling per failure,
  at most 10 s) before going back to activeQ. When activeQ is empty, the head of
  backoffQ is popped at once (SchedulerPopFromBackoffQ, on in 1.34);
- unschedulablePods: rejected by some plugins; it stays there until a cluster event
  that one of those plugins registered (and whose queueing hint says QUEUE) moves
  it back, or until it has waited podMaxInUnschedulablePodsDuration (5 min).

Events that arrive while a pod is being scheduled ("in flight") are remembered, so
that a pod rejected in that cycle is requeued at once if one of them could help it.
Which event may help which pod, the plugins' queueing hints say (queueing_hints.py).
"""

from __future__ import annotations

import itertools
import logging
import math
import operator
from collections.abc import Callable, Iterable
from functools import cmp_to_key
from typing import Any

from kubesched.framework.events import (
    BACKOFF_COMPLETE,
    EVENT_ASSIGNED_POD_ADD,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    EVENT_UNSCHEDULED_POD_ADD,
    EVENT_UNSCHEDULED_POD_UPDATE,
    FORCE_ACTIVATE,
    SCHEDULE_ATTEMPT_FAILURE,
    ActionType,
    ClusterEvent,
    Resource,
    match_any_cluster_event,
    match_cluster_events,
    pod_scheduling_property_changes,
)
from kubesched.framework.interface import PreEnqueuePlugin, QueueSortPlugin
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.queue.heap import KeyedHeap
from kubesched.queue.nominator import NominatingInfo, Nominator
from kubesched.queue.queueing_hints import (
    QUEUE_AFTER_BACKOFF,
    QUEUE_IMMEDIATELY,
    QUEUE_SKIP,
    HintFunction,
    HintFunctionCache,
    InFlightEvent,
    QueueingHintMap,
    hint_for_in_flight,
    worth_requeuing,
)

__all__ = [
    "ACTIVE_Q",
    "BACKOFF_ORDERING_WINDOW",
    "BACKOFF_Q",
    "DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION",
    "QUEUE_AFTER_BACKOFF",
    "QUEUE_IMMEDIATELY",
    "QUEUE_SKIP",
    "UNSCHEDULABLE_Q",
    "HintFunction",
    "QueueingHintMap",
    "SchedulingQueue",
]

_log = logging.getLogger(__name__)

# The labels of the events a new or updated unscheduled pod enters with (ClusterEvent.label formats them).
_UNSCHEDULED_POD_ADD = EVENT_UNSCHEDULED_POD_ADD.label
_UNSCHEDULED_POD_UPDATE = EVENT_UNSCHEDULED_POD_UPDATE.label

DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION = 300.0
BACKOFF_ORDERING_WINDOW = 1.0

ACTIVE_Q = "Active"
BACKOFF_Q = "Backoff"
UNSCHEDULABLE_Q = "Unschedulable"


class SchedulingQueue:
    """activeQ, backoffQ (rejections and errors, in two heaps), the unschedulable pods and the nominator."""

    def __init__(
        self,
        queue_sort: QueueSortPlugin,
        clock: Callable[[], float],
        pre_enqueue_plugins: dict[str, list[PreEnqueuePlugin]] | None = None,
        queueing_hints: dict[str, QueueingHintMap] | None = None,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
        namespace_labels: Callable[[str], dict[str, str]] | None = None,
        on_event: Callable[[str, QueuedPodInfo, str], None] | None = None,
        window_phase: float = 0.0,
    ) -> None:
        self.clock = clock
        # The backoff windows start where the wall clock's seconds do: `window_phase` is the wall clock's
        # position within its second when `clock` reads 0 (Clock.second_phase).
        self.window_phase = window_phase
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self.pre_enqueue_plugins = pre_enqueue_plugins or {}
        self.queueing_hints = queueing_hints or {}
        self._interest: dict[ClusterEvent, bool] = {}
        self._hint_fns: HintFunctionCache = {}
        self.plugin_to_events: dict[str, list[ClusterEvent]] = {}
        for hint_map in self.queueing_hints.values():
            for ev, fns in hint_map.items():
                for h in fns:
                    self.plugin_to_events.setdefault(h.plugin, []).append(ev)
        self._namespace_labels = namespace_labels or (lambda _ns: {})
        self._on_event = on_event
        self._seq = itertools.count()

        sort_key = queue_sort.sort_key
        probe = None
        if type(queue_sort).sort_key is not QueueSortPlugin.sort_key:
            probe = sort_key
        if probe is not None:
            self._active_key: Callable[[QueuedPodInfo], Any] = probe
        else:
            less = queue_sort.less

            def cmp(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
                if less(a, b):
                    return -1
                if less(b, a):
                    return 1
                return (a.seq > b.seq) - (a.seq < b.seq)

            wrap = cmp_to_key(cmp)
            self._active_key = wrap
        active_key = self._active_key
        flat = probe is not None and queue_sort.sort_key_length is not None
        self.active_q: KeyedHeap[QueuedPodInfo] = KeyedHeap(active_key, _uid, flat=flat)
        self.backoff_q: KeyedHeap[QueuedPodInfo] = KeyedHeap(lambda q: (self._backoff_time(q), active_key(q)), _uid)
        self.error_backoff_q: KeyedHeap[QueuedPodInfo] = KeyedHeap(
            lambda q: (self._backoff_time(q), active_key(q)), _uid
        )
        self.unschedulable: dict[str, QueuedPodInfo] = {}
        self.nominator = Nominator()
        self.in_flight: dict[str, list[InFlightEvent]] = {}
        self.scheduling_cycle = 0

    # ------------------------------------------------------------ helpers

    def _new_queued(self, pi: PodInfo) -> QueuedPodInfo:
        return QueuedPodInfo(pi, self.clock(), next(self._seq))

    def _emit(self, what: str, qpi: QueuedPodInfo, event: str) -> None:
        if self._on_event is not None:
            self._on_event(what, qpi, event)

    def _failure_count(self, q: QueuedPodInfo) -> int:
        """The failures backoff grows with: consecutive errors if the last attempts erred, else rejections."""
        if q.consecutive_errors_count > 0:
            return q.consecutive_errors_count
        return q.unschedulable_count

    def _backoff_duration(self, count: int) -> float:
        d = self.initial_backoff
        for _ in range(1, count):
            if d > self.max_backoff - d:
                return self.max_backoff
            d += d
        return d

    def _backoff_time(self, q: QueuedPodInfo) -> float:
        count = self._failure_count(q)
        if count == 0:
            # Never failed: no backoff at all (not even the current window's), nothing cached.
            return -math.inf
        if q.backoff_expiration is None:
            # Aligned to the backoffQ ordering window (1 s) when popping from backoffQ is on.
            q.backoff_expiration = self._window_start(q.timestamp + self._backoff_duration(count))
        return q.backoff_expiration

    def is_backing_off(self, q: QueuedPodInfo) -> bool:
        """Still in backoff while its (aligned) expiry is not before the current window's start."""
        return self._backoff_time(q) >= self._window_start(self.clock())

    def _window_start(self, t: float) -> float:
        phase = self.window_phase
        return math.floor((t + phase) / BACKOFF_ORDERING_WINDOW) * BACKOFF_ORDERING_WINDOW - phase

    def _run_pre_enqueue(self, q: QueuedPodInfo) -> None:
        plugins = self.pre_enqueue_plugins.get(q.pod.spec.scheduler_name, ())
        gating = q.gating_plugin
        if gating:
            plugins = sorted(plugins, key=lambda p: p.name != gating)
        for pl in plugins:
            try:
                s = pl.pre_enqueue(q.pod_info)
            except Exception as err:  # noqa: BLE001 - contained: an Error status, which gates the pod (upstream)
                _log.error(
                    "PreEnqueue plugin %r raised for pod %s: %s: %s", pl.name, q.pod_info.key, type(err).__name__, err
                )
                s = Status.as_error(err, pl.name)
            if s is not None and s.code != Code.SUCCESS:
                q.unschedulable_plugins.add(pl.name)
                q.gating_plugin = pl.name
                q.gating_plugin_events = self.plugin_to_events.get(pl.name, [])
                return
        q.gating_plugin = ""

    # ------------------------------------------------------------ moving between queues

    def _move_to_active(self, q: QueuedPodInfo, event: str, from_backoff: bool = False) -> bool:
        if not from_backoff:
            self._run_pre_enqueue(q)
        if q.gated():
            uid = q.uid
            if uid in self.active_q or uid in self.backoff_q or uid in self.error_backoff_q:
                return False
            if uid not in self.unschedulable:
                self.unschedulable[uid] = q
                self._emit(UNSCHEDULABLE_Q, q, event)
            return False
        if q.initial_attempt_timestamp is None:
            q.initial_attempt_timestamp = self.clock()
        self.unschedulable.pop(q.uid, None)
        self.backoff_q.delete(q.uid)
        self.error_backoff_q.delete(q.uid)
        self.active_q.add_or_update(q)
        if event in (_UNSCHEDULED_POD_ADD, _UNSCHEDULED_POD_UPDATE):
            self.nominator.add(q.pod_info, None)
        self._emit(ACTIVE_Q, q, event)
        return True

    def _move_to_backoff(self, q: QueuedPodInfo, event: str) -> bool:
        self._run_pre_enqueue(q)
        if q.gated():
            if q.uid not in self.unschedulable:
                self.unschedulable[q.uid] = q
                self._emit(UNSCHEDULABLE_Q, q, event)
            return False
        self.unschedulable.pop(q.uid, None)
        if q.consecutive_errors_count > 0:
            self.error_backoff_q.add_or_update(q)
        else:
            self.backoff_q.add_or_update(q)
        self._emit(BACKOFF_Q, q, event)
        return True

    def _requeue_with_strategy(self, q: QueuedPodInfo, strategy: int, event: str) -> str:
        if strategy == QUEUE_SKIP:
            self.unschedulable[q.uid] = q
            self._emit(UNSCHEDULABLE_Q, q, event)
            return UNSCHEDULABLE_Q
        if strategy == QUEUE_AFTER_BACKOFF and self.is_backing_off(q):
            return BACKOFF_Q if self._move_to_backoff(q, event) else UNSCHEDULABLE_Q
        return ACTIVE_Q if self._move_to_active(q, event) else UNSCHEDULABLE_Q

    # ------------------------------------------------------------ public API

    def add(self, pi: PodInfo) -> None:
        """A new unscheduled pod."""
        self._move_to_active(self._new_queued(pi), _UNSCHEDULED_POD_ADD)

    def pop(self) -> QueuedPodInfo | None:
        """The next pod to try: head of activeQ, else head of backoffQ; None when both are empty."""
        q = self.active_q.pop()
        if q is None:
            q = self.backoff_q.pop()
            if q is None:
                return None
        q.attempts += 1
        q.backoff_expiration = None
        self.in_flight[q.uid] = []
        self.scheduling_cycle += 1
        q.unschedulable_plugins = set()
        q.pending_plugins = set()
        q.gating_plugin = ""
        q.gating_plugin_events = []
        return q

    def done(self, uid: str) -> None:
        self.in_flight.pop(uid, None)

    def is_in_flight(self, uid: str) -> bool:
        return uid in self.in_flight

    def add_unschedulable_if_not_present(self, q: QueuedPodInfo) -> str:
        """Put a pod back after a failed attempt; returns the queue it went to."""
        uid = q.uid
        events = self.in_flight.pop(uid, None) or []
        if uid in self.unschedulable or uid in self.active_q or uid in self.backoff_q:
            return ""
        if not q.unschedulable_plugins and not q.pending_plugins:
            q.consecutive_errors_count += 1
        else:
            q.unschedulable_count += 1
            q.consecutive_errors_count = 0
        q.timestamp = self.clock()
        q.backoff_expiration = None
        strategy = hint_for_in_flight(self.queueing_hints, q, events, self._hint_fns)
        return self._requeue_with_strategy(q, strategy, SCHEDULE_ATTEMPT_FAILURE)

    def _is_event_of_interest(self, event: ClusterEvent) -> bool:
        # The registrations never change after construction: remember the answer per event.
        known = self._interest.get(event)
        if known is None:
            known = self._interest[event] = event.is_wildcard() or any(
                match_cluster_events(registered, event)
                for hint_map in self.queueing_hints.values()
                for registered in hint_map
            )
        return known

    def _record_in_flight(self, event: ClusterEvent, old: Any, new: Any) -> None:
        if self.in_flight:
            e = InFlightEvent(event, old, new)
            for lst in self.in_flight.values():
                lst.append(e)

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
        pre_check: Callable[[QueuedPodInfo], bool] | None = None,
    ) -> None:
        if not self._is_event_of_interest(event):
            return
        if not self.unschedulable:  # nothing to move (the common case): the event only reaches the pods in flight
            self._record_in_flight(event, old, new)
            return
        pods = [q for q in self.unschedulable.values() if pre_check is None or pre_check(q)]
        self._move_pods(pods, event, old, new)

    def _move_pods(self, pods: Iterable[QueuedPodInfo], event: ClusterEvent, old: Any, new: Any) -> None:
        if not self._is_event_of_interest(event):
            return
        for q in list(pods):
            if q.gated() and not match_any_cluster_event(event, q.gating_plugin_events):
                continue
            strategy = worth_requeuing(self.queueing_hints, q, event, old, new, self._hint_fns)
            if strategy == QUEUE_SKIP:
                continue
            self.unschedulable.pop(q.uid, None)
            self._requeue_with_strategy(q, strategy, event.label)
        self._record_in_flight(event, old, new)

    def assigned_pod_added(self, pi: PodInfo, cross_topology: Callable[[QueuedPodInfo, PodInfo], bool]) -> None:
        """A bound pod appeared: only pods with cross-topology terms can be helped by it."""
        pods = [q for q in self.unschedulable.values() if cross_topology(q, pi)]
        self._move_pods(pods, EVENT_ASSIGNED_POD_ADD, None, pi.pod)

    def assigned_pod_updated(
        self,
        old: PodInfo,
        new: PodInfo,
        event: ClusterEvent,
        cross_topology: Callable[[QueuedPodInfo, PodInfo], bool],
    ) -> None:
        if match_cluster_events(ClusterEvent(Resource.POD, ActionType.UPDATE_POD_SCALE_DOWN), event):
            self.move_all_to_active_or_backoff(event, old.pod, new.pod)
        else:
            pods = [q for q in self.unschedulable.values() if cross_topology(q, new)]
            self._move_pods(pods, event, old.pod, new.pod)

    def activate(self, pods: Iterable[PodInfo]) -> None:
        from kubesched.framework.events import EVENT_FORCE_ACTIVATE

        for pi in pods:
            q = self.unschedulable.get(pi.uid)
            if q is None:
                # backoffQ holds both heaps; the pod leaves it before moving.
                q = self.backoff_q.delete(pi.uid)
                if q is None:
                    q = self.error_backoff_q.delete(pi.uid)
            if q is not None:
                # Unlike BackoffComplete, a forced activation runs the PreEnqueue plugins again.
                self._move_to_active(q, FORCE_ACTIVATE)
                continue
            lst = self.in_flight.get(pi.uid)
            if lst is not None:
                lst.append(InFlightEvent(EVENT_FORCE_ACTIVATE, None, pi.pod))

    def update(self, old: PodInfo, new: PodInfo) -> None:
        """An unscheduled pod changed."""
        uid = new.uid
        events = pod_scheduling_property_changes(new.pod, old.pod)
        lst = self.in_flight.get(uid)
        if lst is not None:
            for ev in events:
                lst.append(InFlightEvent(ev, old.pod, new.pod))
            return
        for heap in (self.active_q, self.backoff_q, self.error_backoff_q):
            q = heap.get(uid)
            if q is not None:
                q.pod_info = new
                heap.add_or_update(q)
                self.nominator.update(old, new)
                return
        q = self.unschedulable.get(uid)
        if q is not None:
            q.pod_info = new
            self.nominator.update(old, new)
            for ev in events:
                strategy = worth_requeuing(self.queueing_hints, q, ev, old.pod, new.pod, self._hint_fns)
                where = self._requeue_with_strategy(q, strategy, ev.label)
                if where in (ACTIVE_Q, BACKOFF_Q):
                    break
            return
        self._move_to_active(self._new_queued(new), _UNSCHEDULED_POD_UPDATE)

    def delete(self, pi: PodInfo) -> None:
        self.nominator.delete(pi)
        uid = pi.uid
        if self.active_q.delete(uid) is not None:
            return
        if self.backoff_q.delete(uid) is not None or self.error_backoff_q.delete(uid) is not None:
            return
        self.unschedulable.pop(uid, None)

    def flush_backoff_completed(self) -> None:
        for heap in (self.backoff_q, self.error_backoff_q):
            while True:
                q = heap.peek()
                if q is None or self.is_backing_off(q):
                    break
                heap.pop()
                self._move_to_active(q, BACKOFF_COMPLETE, from_backoff=True)

    def flush_unschedulable_leftover(self) -> None:
        now = self.clock()
        stale = [q for q in self.unschedulable.values() if now - q.timestamp > self.max_in_unschedulable]
        if stale:
            self._move_pods(stale, EVENT_UNSCHEDULABLE_TIMEOUT, None, None)

    # ------------------------------------------------------------ nominator

    def add_nominated_pod(self, pi: PodInfo, info: NominatingInfo | None) -> None:
        self.nominator.add(pi, info)

    def delete_nominated_pod_if_exists(self, pi: PodInfo) -> None:
        self.nominator.delete(pi)

    def nominated_pods_for_node(self, node: str) -> list[PodInfo]:
        return self.nominator.nominated_pods_for_node(node)

    # ------------------------------------------------------------ inspection

    def next_backoff_expiry(self) -> float | None:
        times = []
        for heap in (self.backoff_q, self.error_backoff_q):
            q = heap.peek()
            if q is not None:
                times.append(self._backoff_time(q))
        return min(times) if times else None

    def next_unschedulable_timeout(self) -> float | None:
        if not self.unschedulable:
            return None
        return min(q.timestamp for q in self.unschedulable.values()) + self.max_in_unschedulable

    def pending_counts(self) -> dict[str, int]:
        gated = sum(1 for q in self.unschedulable.values() if q.gated())
        return {
            "active": len(self.active_q),
            "backoff": len(self.backoff_q) + len(self.error_backoff_q),
            "unschedulable": len(self.unschedulable) - gated,
            "gated": gated,
        }

    def has_work(self) -> bool:
        return len(self.active_q) > 0 or len(self.backoff_q) > 0

    def find(self, uid: str) -> QueuedPodInfo | None:
        for heap in (self.active_q, self.backoff_q, self.error_backoff_q):
            q = heap.get(uid)
            if q is not None:
                return q
        return self.unschedulable.get(uid)


# The heaps' identity of an entry: its pod's uid.
_uid = operator.attrgetter("uid")
