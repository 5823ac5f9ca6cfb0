"""Queueing hints (isPodWorthRequeuing): whether a cluster event may make a rejected pod schedulable.

A pod rejected by some plugins is requeued by an event only if one of those
plugins registered it and its hint function says QUEUE. The answer is a
strategy: skip (stay unschedulable), after backoff, or at once (a plugin that
left the pod pending, such as a Permit wait, is now satisfied).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesched.framework.events import ClusterEvent, QueueingHint, QueueingHintFn, match_cluster_events
from kubesched.framework.types import QueuedPodInfo

# queueingStrategy
QUEUE_SKIP = 0
QUEUE_AFTER_BACKOFF = 1
QUEUE_IMMEDIATELY = 2


@dataclass(frozen=True, slots=True)
class HintFunction:
    """A plugin's hint for one registered event (None: always QUEUE)."""

    plugin: str
    fn: QueueingHintFn | None


# Per profile: registered event -> hint functions of the plugins that registered it.
QueueingHintMap = dict[ClusterEvent, list[HintFunction]]


class InFlightEvent:
    """A cluster event that arrived while a pod was being scheduled, kept for that pod's requeue decision."""

    __slots__ = ("event", "new", "old")

    def __init__(self, event: ClusterEvent, old: Any, new: Any) -> None:
        self.event = event
        self.old = old
        self.new = new


# (profile, incoming event) -> the hint functions of the registered events it matches, in registration order.
HintFunctionCache = dict[tuple[str, ClusterEvent], list[HintFunction]]


def hint_for_in_flight(
    hints: dict[str, QueueingHintMap],
    q: QueuedPodInfo,
    events: list[InFlightEvent],
    cache: HintFunctionCache | None = None,
) -> int:
    """The strategy for a pod just rejected, from the events that arrived during its attempt."""
    if not q.unschedulable_plugins and not q.pending_plugins:
        return QUEUE_AFTER_BACKOFF
    strategy = QUEUE_SKIP
    for e in events:
        s = worth_requeuing(hints, q, e.event, e.old, e.new, cache)
        if s == QUEUE_IMMEDIATELY:
            return s
        if s == QUEUE_AFTER_BACKOFF:
            strategy = s
            if not q.pending_plugins:
                return s
    return strategy


def worth_requeuing(
    hints: dict[str, QueueingHintMap],
    q: QueuedPodInfo,
    event: ClusterEvent,
    old: Any,
    new: Any,
    cache: HintFunctionCache | None = None,
) -> int:
    """The strategy for an unschedulable pod on `event`: what the hints of the plugins that rejected it say.

    `cache` (the queue's: registrations never change once it is built) keeps, per profile and event, the
    hint functions whose registered event matches, so that each pod of each event does not match them all.
    """
    unschedulable, pending = q.unschedulable_plugins, q.pending_plugins
    if not unschedulable and not pending:
        return QUEUE_AFTER_BACKOFF
    if event.is_wildcard():
        if new is not None:
            uid = getattr(getattr(new, "metadata", None), "uid", None)
            if uid != q.uid:
                return QUEUE_SKIP
        return QUEUE_AFTER_BACKOFF
    profile = q.pod.spec.scheduler_name
    hint_map = hints.get(profile)
    if hint_map is None:
        return QUEUE_AFTER_BACKOFF
    fns = cache.get((profile, event)) if cache is not None else None
    if fns is None:
        fns = [h for registered, hs in hint_map.items() if match_cluster_events(registered, event) for h in hs]
        if cache is not None:
            cache[(profile, event)] = fns
    strategy = QUEUE_SKIP
    for h in fns:
        if h.plugin not in unschedulable and h.plugin not in pending:
            continue
        if h.fn is None:
            hint = QueueingHint.QUEUE
        else:
            try:
                hint = h.fn(q.pod, old, new)
            except Exception:  # noqa: BLE001 - a failing hint must not strand the pod
                hint = QueueingHint.QUEUE
        if hint == QueueingHint.QUEUE_SKIP:
            continue
        if h.plugin in pending:
            return QUEUE_IMMEDIATELY
        if not pending:
            return QUEUE_AFTER_BACKOFF
        strategy = QUEUE_AFTER_BACKOFF
    return strategy
