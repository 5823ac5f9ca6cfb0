"""The Scheduler (pkg/scheduler/scheduler.go): its construction and what drives it.

New builds the profiles' frameworks, the queue (with each plugin's queueing
hints), the cache and snapshot, and subscribes the event handlers
(eventhandlers.py); the cycles themselves are in schedule_one.py. Both are
mixins of the one Scheduler class, so that the per-pod path is plain method
calls, as upstream's methods on its sched.

The scheduler runs on one thread. Cluster changes reach it as watch events that
it drains between steps (`sync`), so a scheduling cycle always sees a stable
cache; a binding cycle waiting at Permit is parked and resumed later.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any

from kubesched.cache.cache import Cache
from kubesched.cluster.clock import Clock
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework.events import unroll_wildcard_resource
from kubesched.framework.handle import Lister
from kubesched.framework.interface import EnqueueExtensions
from kubesched.framework.profile import FrameworkError, build_frameworks
from kubesched.framework.profile_handle import ProfileHandle, new_handle
from kubesched.framework.runtime import Framework
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.types import NodeInfo, PodInfo, QueuedPodInfo
from kubesched.metrics import Metrics
from kubesched.plugins.registry import Registry
from kubesched.queue.scheduling_queue import HintFunction, QueueingHintMap, SchedulingQueue
from kubesched.scheduler.eventhandlers import EventHandlers
from kubesched.scheduler.observer import AttemptObserver
from kubesched.scheduler.schedule_one import BindCaller, BindRunner, ParkedBinding, SchedulingCycle


class Scheduler(SchedulingCycle, EventHandlers):
    """One scheduler: its profiles, queue and cache, fed by a cluster's watch events (`cluster.store`)."""

    def __init__(
        self,
        cluster: Any,
        config: KubeSchedulerConfiguration,
        *,
        clock: Callable[[], float],
        seed: int = 0,
        registry: Registry | None = None,
        extenders: list[Any] | None = None,
    ) -> None:
        self.cluster = cluster
        self.client = cluster.client
        self.config = config
        self.now = clock
        self.rng = random.Random(seed)
        self.cache = Cache()
        self.snapshot = Snapshot()
        if extenders is None:
            from kubesched.extender.build import build_extenders

            # Before the frameworks: it may set NodeResourcesFit's ignoredResources (buildExtenders).
            extenders = build_extenders(config)
        self.extenders = list(extenders)
        # Set by the extender filter when an extender without node cache replaced the feasible
        # nodes by fresh, pod-less NodeInfos: scoring must see those (upstream scores what Filter returned).
        self._extender_nodes: list[NodeInfo] | None = None
        self.metrics = Metrics()
        self.next_start_node_index = 0
        self._after_cycle: list[Callable[[], None]] = []
        # Work upstream does in a goroutine while the scheduling loop goes on (asynchronous preemption's
        # API calls), with the number of scheduling cycles it takes: it runs, and its watch events
        # arrive, once that many more cycles have ended, or as soon as no pod is left to attempt.
        self._during_cycles: list[tuple[int, Callable[[], None]]] = []
        # Binding cycles waiting: at Permit, or after PreBind until a time (see BIND_NOT_BEFORE).
        self._parked: list[ParkedBinding] = []
        # Upstream binds in a goroutine and pops the next pod at once: the binding's watch events reach the
        # queue while that pod is in flight (so a failure there may be retried after backoff, as in-flight
        # events decide). Set after a synchronous binding cycle: the next pop comes before the delivery.
        self._bind_events_late = False
        # uid -> the PodInfo last made for the pod (see _info).
        self._infos: dict[str, PodInfo] = {}
        # Reports install one (see AttemptObserver); None: nothing is recorded.
        self.observer: AttemptObserver | None = None
        # `kubesched explain`: called with the profile and the popped pod just before its scheduling cycle.
        self.before_cycle: Callable[[Framework, QueuedPodInfo], None] | None = None
        # Live mode: runs the API part of binding (binder extender / Bind plugins) off this thread, as upstream's
        # binding goroutine does; the rest of the binding cycle completes here when done(status) is called.
        # None: bind inline.
        self.bind_runner: BindRunner | None = None
        self.bind_caller: BindCaller | None = None
        # Log failed attempts as errors ("Error scheduling pod; retrying"), as kube-scheduler does: in live and
        # serve. A simulation reports them in its output instead of on stderr.
        self.log_errors = False
        self.handles: dict[str, ProfileHandle] = {}
        self._listers: dict[str, Lister] = {}
        # State plugins share across profiles (e.g. DRA's in-flight allocations: one device, one claim).
        self.shared_plugin_state: dict[str, Any] = {}
        self.queue: SchedulingQueue | None = None
        self.profiles = build_frameworks(config, registry or Registry(), self._handle_for)
        self.queue = self._build_queue()
        self._subscribe()

    # ------------------------------------------------------------ construction

    def _lister(self, kind: str) -> Lister:
        lister = self._listers.get(kind)
        if lister is None:
            store = self.cluster.store
            lister = self._listers[kind] = Lister(lambda key: store.find(kind, key), lambda: store.iter(kind))
        return lister

    def _handle_for(self, profile: str, fw: Framework | None) -> ProfileHandle:
        h = self.handles.get(profile)
        if h is None:
            h = new_handle(
                profile,
                self.client,
                snapshot=lambda: self.snapshot,
                lister=self._lister,
                nominator=lambda: self.queue.nominator if self.queue is not None else None,
                now=self.now,
                rng=self.rng,
                activate=self._activate,
                extenders=lambda: self.extenders,
                extra=self.shared_plugin_state,
                run_after_cycles=self.run_after_cycles,
                count_preemption_attempt=self.metrics.preemption_attempts.inc,
                observe_victims=self.metrics.preemption_victims.observe,
            )
            self.handles[profile] = h
        if fw is not None:
            h.framework = fw
        return h

    def _build_queue(self) -> SchedulingQueue:
        hints: dict[str, QueueingHintMap] = {}
        pre_enqueue: dict[str, list[Any]] = {}
        for name, fw in self.profiles.items():
            hmap: QueueingHintMap = {}
            for pl in fw.enqueue_extensions():
                events = unroll_wildcard_resource()
                if isinstance(pl, EnqueueExtensions):
                    try:
                        events = pl.events_to_register()
                    except Exception as err:  # a plugin's bug refuses the profile at start-up, in one line
                        msg = f'plugin "{pl.name}": events_to_register raised {type(err).__name__}: {err}'
                        raise FrameworkError(msg) from err
                for e in events:
                    hmap.setdefault(e.event, []).append(HintFunction(pl.name, e.hint))
            hints[name] = hmap
            pre_enqueue[name] = list(fw.pre_enqueue_plugins)
        first = next(iter(self.profiles.values()))
        return SchedulingQueue(
            first.queue_sort(),
            self.now,
            pre_enqueue_plugins=pre_enqueue,
            queueing_hints=hints,
            initial_backoff=float(self.config.pod_initial_backoff_seconds),
            max_backoff=float(self.config.pod_max_backoff_seconds),
            window_phase=self._second_phase(),
        )

    def _second_phase(self) -> float:
        """The cluster clock's position within a wall-clock second at its zero (0 when it has none)."""
        clock = getattr(getattr(self.cluster, "store", None), "clock", None)
        return clock.second_phase() if isinstance(clock, Clock) else 0.0

    def _activate(self, pods: Iterable[PodInfo]) -> None:
        self.queue.activate(pods)  # type: ignore[union-attr]

    # ------------------------------------------------------------ driving

    def sync(self) -> None:
        """Deliver pending watch events (the informers catching up)."""
        self.cluster.store.deliver()

    def run_after_cycles(self, cycles: int, fn: Callable[[], None]) -> None:
        """Run fn once `cycles` more scheduling cycles have ended (0: at the end of this one)."""
        if cycles <= 0:
            self._after_cycle.append(fn)
        else:
            self._during_cycles.append((cycles, fn))

    def _run_after_cycle(self) -> None:
        """Work upstream does off the scheduling goroutine (async preemption, deferred requeues), then events."""
        self.sync()
        while self._after_cycle:
            self._after_cycle.pop(0)()
            self.sync()

    def resume_parked(self) -> bool:
        """Finish the binding cycles whose wait ended: Permit allowed, rejected or timed out; PreBind's time came."""
        now = self.now()
        progressed = False
        still: list[ParkedBinding] = []
        parked, self._parked = self._parked, []
        for p in parked:
            if p.not_before is not None:
                ready = p.not_before <= now
            else:
                wp = p.fw.waiting_pods.get(p.qpi.uid)
                if wp is not None:
                    wp.expire(now)
                ready = wp is None or wp.is_resolved()
            if not ready:
                still.append(p)
                continue
            if p.not_before is not None:
                self.pre_bind(p.state, p.fw, p.result, p.qpi, p.start)
            else:
                self._finish_binding_cycle(p.state, p.fw, p.result, p.qpi, p.start)
            self._run_after_cycle()
            self.sync()
            progressed = True
        # Cycles parked again while resuming (a Permit wait that ended in a PreBind wait) come after.
        self._parked = still + self._parked
        return progressed

    def next_parked_deadline(self) -> float | None:
        """When the next parked binding cycle can move on by itself (a Permit timeout, a PreBind wait's end)."""
        deadlines: list[float] = []
        for p in self._parked:
            if p.not_before is not None:
                deadlines.append(p.not_before)
                continue
            wp = p.fw.waiting_pods.get(p.qpi.uid)
            if wp is not None:
                d = wp.next_deadline()
                if d is not None:
                    deadlines.append(d)
        return min(deadlines, default=None)

    def has_parked(self) -> bool:
        return bool(self._parked)
