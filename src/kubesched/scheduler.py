"""The Scheduler (pkg/scheduler/scheduler.go, schedule_one.go, eventhandlers.go).

schedule_one pops a pod and runs its scheduling cycle (PreFilter, Filter,
PostFilter on failure, PreScore, Score, select_host, assume, Reserve, Permit),
then its binding cycle (WaitOnPermit, PreBind, Bind, PostBind). Failures go
through handle_scheduling_failure: the pod goes back to the queue, gets the
PodScheduled=False condition with the FailedScheduling message, and an event.

The scheduler runs on one thread. Cluster changes reach it as watch events that
it drains between steps (`sync`), so a scheduling cycle always sees a stable
cache; a binding cycle waiting at Permit is parked and resumed later.
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import Any, NamedTuple, Protocol

import numpy as np

from kubesched.api.core import Node, Pod, PodCondition
from kubesched.cache.cache import Cache, CacheError
from kubesched.cluster.store import ADDED, DELETED, FINAL_STATE_UNKNOWN, MODIFIED
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework.cycle_state import BIND_NOT_BEFORE, CycleState
from kubesched.framework.diagnosis import EXTENDER_NAME, Diagnosis, FitError
from kubesched.framework.events import (
    EVENT_ASSIGNED_POD_ADD,
    EVENT_ASSIGNED_POD_DELETE,
    ActionType,
    ClusterEvent,
    Resource,
    pod_scheduling_property_changes,
    unroll_wildcard_resource,
)
from kubesched.framework.handle import Handle, Lister
from kubesched.framework.interface import EnqueueExtensions, PostFilterResult
from kubesched.framework.profile import FrameworkError, build_frameworks
from kubesched.framework.runtime import Framework
from kubesched.framework.snapshot import NodeSubset, Snapshot
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo, QueuedPodInfo
from kubesched.klog import info, kobj
from kubesched.metrics import Metrics
from kubesched.plugins.registry import Registry
from kubesched.queue.nominator import CLEAR_NOMINATED_NODE, MODE_OVERRIDE, NominatingInfo
from kubesched.queue.scheduling_queue import HintFunction, QueueingHintMap, SchedulingQueue

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"
POD_REASON_UNSCHEDULABLE = "Unschedulable"
POD_REASON_SCHEDULER_ERROR = "SchedulerError"
MAX_MESSAGE_LENGTH = 1024

# Upstream's messages at upstream's verbosities (kubesched.klog): silent unless `run` or `serve` set up logging.
log = logging.getLogger("kubesched.scheduler")

# bind_runner(pod, node, work, done): run work() (the binding's API calls) elsewhere, then done(status) here.
BindRunner = Callable[[PodInfo, str, Callable[[], Status | None], Callable[[Status | None], None]], None]
# bind_caller(pod, node, status_of, done): start the default binder's API call without waiting for it; when it
# ends, done(status_of(error or None)) runs here. What bind_runner does, when DefaultBinder alone binds the pod.
BindCaller = Callable[
    [PodInfo, str, Callable[[BaseException | None], Status | None], Callable[[Status | None], None]], None
]


@dataclass
class ScheduleResult:
    suggested_host: str = ""
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    nominating_info: NominatingInfo | None = None


class NodeScores(NamedTuple):
    """How the scored nodes of one cycle ranked: the arrays the cycle produced, as they are."""

    names: np.ndarray  # the scored nodes
    totals: np.ndarray  # their weighted totals, in the order of `names`
    per_plugin: dict[str, np.ndarray]  # each Score plugin's weighted scores, in the same order
    tied: np.ndarray  # positions in `names` of every node sharing the top total


class AttemptObserver(Protocol):
    """Told what each scheduling attempt decided, as it decides it.

    The reports of `simulate`, `explain`, `replay` and `capacity` are built from
    these calls (simulate/attempts.py keeps them); the scheduler keeps nothing of
    an attempt once it is over, so a scheduler that runs for months
    (`kubesched run`, `serve`'s built-in one) installs no observer and holds no
    record of pods that are gone. `now` is the scheduler's clock.
    """

    def attempt_started(self, pod: PodInfo, now: float) -> None:
        """A scheduling cycle begins for `pod`."""

    def node_chosen(self, pod: PodInfo, node: str, scores: NodeScores | None, now: float) -> None:
        """The cycle picked `node`; `scores` is None when only one node was feasible (nothing was scored)."""

    def attempt_failed(self, pod: PodInfo, reason: str, message: str, now: float) -> None:
        """The attempt failed (in either cycle): `reason` is the PodScheduled condition's, `message` its text."""


class _Error(Exception):
    """An Error status raised out of the algorithm."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


def num_feasible_nodes_to_find(percentage: int | None, num_all: int) -> int:
    """How many feasible nodes to look for: all below 100 nodes, else the adaptive percentage."""
    if num_all < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all
    pct = percentage or 0
    if pct == 0:
        pct = 50 - num_all // 125
        pct = max(pct, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    n = num_all * pct // 100
    return max(n, MIN_FEASIBLE_NODES_TO_FIND)


class Scheduler:
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
        self._parked: list[_ParkedBinding] = []
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
        self.handles: dict[str, Handle] = {}
        # State plugins share across profiles (e.g. DRA's in-flight allocations: one device, one claim).
        self.shared_plugin_state: dict[str, Any] = {}
        self.queue: SchedulingQueue | None = None
        self.profiles = build_frameworks(config, registry or Registry(), self._handle_for)
        self.queue = self._build_queue()
        self._subscribe()

    # ------------------------------------------------------------ construction

    def _lister(self, kind: str) -> Lister:
        store = self.cluster.store
        return Lister(lambda key: store.find(kind, key), lambda: store.iter(kind))

    def _handle_for(self, profile: str, fw: Framework | None) -> Handle:
        h = self.handles.get(profile)
        if h is None:
            h = Handle(
                profile,
                lambda: self.snapshot,
                self.client,
                self._lister,
                lambda: self.queue.nominator if self.queue is not None else None,
                self.now,
                self.rng,
                self._activate,
                lambda: self.extenders,
                extra=self.shared_plugin_state,
            )
            h.run_after_cycle = self._after_cycle.append  # type: ignore[attr-defined]
            h.run_after_cycles = self.run_after_cycles  # type: ignore[attr-defined]
            h.metrics_inc_preemption_attempts = self.metrics.preemption_attempts.inc  # type: ignore[attr-defined]
            h.metrics_observe_victims = self.metrics.preemption_victims.observe  # type: ignore[attr-defined]
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
        )

    def _subscribe(self) -> None:
        store = self.cluster.store
        store.subscribe("Pod", self._on_pod)
        store.subscribe("Node", self._on_node)
        for kind, resource in (
            ("PersistentVolume", Resource.PERSISTENT_VOLUME),
            ("PersistentVolumeClaim", Resource.PERSISTENT_VOLUME_CLAIM),
            ("StorageClass", Resource.STORAGE_CLASS),
            ("CSINode", Resource.CSI_NODE),
            ("CSIDriver", Resource.CSI_DRIVER),
            ("CSIStorageCapacity", Resource.CSI_STORAGE_CAPACITY),
            ("VolumeAttachment", Resource.VOLUME_ATTACHMENT),
            ("ResourceClaim", Resource.RESOURCE_CLAIM),
            ("ResourceSlice", Resource.RESOURCE_SLICE),
            ("DeviceClass", Resource.DEVICE_CLASS),
        ):
            store.subscribe(kind, self._generic_handler(resource))

    # ------------------------------------------------------------ event handlers

    def _responsible(self, pod: Pod) -> bool:
        return pod.spec.scheduler_name in self.profiles

    def _on_pod(self, etype: str, old: Pod | None, new: Pod | None) -> None:
        q = self.queue
        assert q is not None
        if etype == ADDED:
            assert new is not None
            if _terminal(new):
                # Upstream's pod informer lists no Succeeded/Failed pod (status.phase field selector).
                return
            if new.spec.node_name:
                self._add_assigned(new)
            elif self._responsible(new):
                q.add(self._info(new))
        elif etype == MODIFIED:
            assert old is not None and new is not None
            if old.spec.node_name:
                if _terminal(new):
                    self._delete_assigned(old)
                    self._infos.pop(old.metadata.uid, None)
                    return
                self._update_assigned(old, new)
            elif new.spec.node_name:
                self._add_assigned(new)
                if self._responsible(old):
                    self._delete_unscheduled(old)
            elif self._responsible(old):
                self._update_unscheduled(old, new)
        elif etype == DELETED:
            assert old is not None
            if old.spec.node_name:
                self._delete_assigned(old)
            else:
                if new is FINAL_STATE_UNKNOWN and self.cache.get_pod(old.metadata.uid) is not None:
                    # A relist found it gone; the unbound state we last saw is stale: we bound it meanwhile
                    # (assumed, maybe confirmed by nobody). Upstream's cache handler takes such tombstones too.
                    self._delete_assigned(old)
                if self._responsible(old):
                    self._delete_unscheduled(old)
            self._infos.pop(old.metadata.uid, None)

    def _info(self, pod: Pod) -> PodInfo:
        """The PodInfo of this pod object, derived from the last one made for the pod when possible."""
        uid = pod.metadata.uid
        pi = self._infos.get(uid)
        if pi is not None:
            if pi.pod is pod:
                return pi
            pi = pi.derive(pod)
        else:
            pi = PodInfo(pod)
        self._infos[uid] = pi
        return pi

    def _add_assigned(self, pod: Pod) -> None:
        pi = self._info(pod)
        try:
            self.cache.add_pod(pi)
        except CacheError:
            return
        self.queue.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_ADD, None, pod)  # type: ignore[union-attr]

    def _update_assigned(self, old: Pod, new: Pod) -> None:
        try:
            self.cache.update_pod(self._info(old), self._info(new))
        except CacheError:
            return
        for ev in pod_scheduling_property_changes(new, old):
            self.queue.move_all_to_active_or_backoff(ev, old, new)  # type: ignore[union-attr]

    def _delete_assigned(self, old: Pod) -> None:
        with contextlib.suppress(CacheError):
            self.cache.remove_pod(self._info(old))
        self.queue.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_DELETE, old, None)  # type: ignore[union-attr]

    def _update_unscheduled(self, old: Pod, new: Pod) -> None:
        if old.metadata.resource_version == new.metadata.resource_version:
            return
        if self.cache.is_assumed(new.metadata.uid):
            return
        q = self.queue
        assert q is not None
        q.update(self._info(old), self._info(new))
        nnn = old.status.nominated_node_name
        if nnn and nnn != new.status.nominated_node_name:
            prio = old.spec.priority or 0
            q.move_all_to_active_or_backoff(
                EVENT_ASSIGNED_POD_DELETE, old, None, lambda qp: qp.pod_info.priority <= prio
            )

    def _delete_unscheduled(self, old: Pod) -> None:
        q = self.queue
        assert q is not None
        pi = self._info(old)
        q.delete(pi)
        fw = self.profiles.get(old.spec.scheduler_name)
        rejected = False
        if fw is not None:
            wp = fw.waiting_pods.get(old.metadata.uid)
            if wp is not None:
                wp.reject("", "removed")
                rejected = True
        if rejected:
            q.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_DELETE, old, None)
        elif old.status.nominated_node_name:
            prio = old.spec.priority or 0
            q.move_all_to_active_or_backoff(
                EVENT_ASSIGNED_POD_DELETE, old, None, lambda qp: qp.pod_info.priority <= prio
            )

    def _on_node(self, etype: str, old: Node | None, new: Node | None) -> None:
        q = self.queue
        assert q is not None
        if etype == ADDED:
            assert new is not None
            self.cache.add_node(new)
            q.move_all_to_active_or_backoff(ClusterEvent(Resource.NODE, ActionType.ADD), None, new)
        elif etype == MODIFIED:
            assert old is not None and new is not None
            self.cache.update_node(old, new)
            for ev in node_scheduling_property_changes(new, old):
                q.move_all_to_active_or_backoff(ev, old, new)
        elif etype == DELETED:
            assert old is not None
            q.move_all_to_active_or_backoff(ClusterEvent(Resource.NODE, ActionType.DELETE), old, None)
            with contextlib.suppress(CacheError):
                self.cache.remove_node(old)

    def _generic_handler(self, resource: str) -> Callable[[str, Any, Any], None]:
        actions = {ADDED: ActionType.ADD, MODIFIED: ActionType.UPDATE, DELETED: ActionType.DELETE}

        def handle(etype: str, old: Any, new: Any) -> None:
            if etype == DELETED:
                new = None  # not FINAL_STATE_UNKNOWN: hints see a deletion as a deletion
            self.queue.move_all_to_active_or_backoff(ClusterEvent(resource, actions[etype]), old, new)  # type: ignore[union-attr]

        return handle

    def _activate(self, pods: Iterable[PodInfo]) -> None:
        self.queue.activate(pods)  # type: ignore[union-attr]

    # ------------------------------------------------------------ driving

    def sync(self) -> None:
        """Deliver pending watch events (the informers catching up)."""
        self.cluster.store.deliver()

    def schedule_one(self) -> bool:
        """Pop one pod and try to schedule it; False when no pod can be popped."""
        late, self._bind_events_late = self._bind_events_late, False
        if not late:
            self.sync()
        q = self.queue
        assert q is not None
        ripe, waiting = [], []
        for cycles, fn in self._during_cycles:
            (ripe if cycles <= 1 else waiting).append((cycles - 1, fn))
        self._during_cycles[:] = waiting
        overlapping = [fn for _, fn in ripe]
        qpi = q.pop()
        if late:
            self.sync()
            if qpi is None:
                qpi = q.pop()
        if qpi is None:
            # No cycle to overlap: the work finishes on its own.
            overlapping += [fn for _, fn in waiting]
            self._during_cycles.clear()
            if not overlapping:
                return False
            self._after_cycle[:0] = overlapping
            self._run_after_cycle()
            return True
        # Whatever this cycle does, the overlapping work ends after its scheduling part.
        self._after_cycle[:0] = overlapping
        pod = qpi.pod
        info(log, 4, "About to try and schedule pod", pod=kobj(qpi.pod_info.key))
        fw = self.profiles.get(pod.spec.scheduler_name)
        if fw is None or self._skip_pod_schedule(fw, qpi):
            q.done(qpi.uid)
            self._run_after_cycle()
            return True
        info(log, 3, "Attempting to schedule pod", pod=kobj(qpi.pod_info.key))
        state = CycleState()
        if self.before_cycle is not None:
            self.before_cycle(fw, qpi)
        # The attempt-duration metric's start (upstream's `start` in ScheduleOne), carried to both cycles' ends.
        start = perf_counter()
        if self.observer is not None:
            self.observer.attempt_started(qpi.pod_info, self.now())
        result, assumed, status = self.scheduling_cycle(state, fw, qpi)
        if status is not None and status.code != Code.SUCCESS:
            self.handle_scheduling_failure(fw, assumed, status, result.nominating_info, start)
            self._run_after_cycle()
            return True
        self._run_after_cycle()
        self.binding_cycle(state, fw, result, assumed, start)
        if self._after_cycle or self.bind_runner is not None:
            self._run_after_cycle()
        else:
            self._bind_events_late = True
        return True

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

    def _skip_pod_schedule(self, fw: Framework, qpi: QueuedPodInfo) -> bool:
        pod = qpi.pod
        if pod.metadata.deletion_timestamp is not None:
            self.client.record_event(
                "Warning",
                "FailedScheduling",
                "Scheduling",
                f"skip schedule deleting pod: {pod.metadata.namespace}/{pod.metadata.name}",
                qpi.pod_info.key,
            )
            info(log, 3, "Skip schedule deleting pod", pod=kobj(qpi.pod_info.key))
            return True
        return self.cache.is_assumed(qpi.uid)

    # ------------------------------------------------------------ scheduling cycle

    def scheduling_cycle(
        self, state: CycleState, fw: Framework, qpi: QueuedPodInfo
    ) -> tuple[ScheduleResult, QueuedPodInfo, Status | None]:
        pod = qpi.pod_info
        try:
            result = self.schedule_pod(fw, state, pod)
        except _Error as err:
            return ScheduleResult(nominating_info=CLEAR_NOMINATED_NODE), qpi, err.status
        except FitError as fit:
            if not fw.has_post_filter_plugins():
                return ScheduleResult(nominating_info=CLEAR_NOMINATED_NODE), qpi, _fit_status(fit)
            pf_result, pf_status = fw.run_post_filter_plugins(state, pod, fit.diagnosis.node_to_status)
            fit.diagnosis.post_filter_msg = pf_status.message()
            if pf_status.code == Code.ERROR:
                if self.log_errors:
                    log.error(
                        "Status after running PostFilter plugins for pod",
                        extra={"pod": kobj(pod.key), "status": pf_status.message()},
                    )
            else:
                info(
                    log,
                    5,
                    "Status after running PostFilter plugins for pod",
                    pod=kobj(pod.key),
                    status=pf_status.message(),
                )
            nominating = None
            if pf_result is not None and pf_result.mode != PostFilterResult.MODE_NOOP:
                nominating = NominatingInfo(pf_result.nominated_node_name, MODE_OVERRIDE)
            return ScheduleResult(nominating_info=nominating), qpi, _fit_status(fit)

        # Assume: the pod counts on the node from now on.
        assumed_pod = _with_node(pod.pod, result.suggested_host)
        assumed = pod.derive(assumed_pod)
        assumed_qpi = _requeued(qpi, assumed)
        try:
            self.cache.assume_pod(assumed, result.suggested_host)
        except CacheError as err:
            return ScheduleResult(nominating_info=CLEAR_NOMINATED_NODE), assumed_qpi, Status.as_error(err)
        self.queue.delete_nominated_pod_if_exists(assumed)  # type: ignore[union-attr]

        s = fw.run_reserve_plugins_reserve(state, assumed, result.suggested_host)
        if s is not None and s.code != Code.SUCCESS:
            self._unreserve_and_forget(fw, state, assumed, result.suggested_host)
            if s.is_rejected():
                return (
                    ScheduleResult(nominating_info=CLEAR_NOMINATED_NODE),
                    assumed_qpi,
                    _single_node_fit(assumed, result, s),
                )
            return ScheduleResult(nominating_info=CLEAR_NOMINATED_NODE), assumed_qpi, s

        s = fw.run_permit_plugins(state, assumed, result.suggested_host)
        if s is not None and s.code not in (Code.SUCCESS, Code.WAIT):
            self._unreserve_and_forget(fw, state, assumed, result.suggested_host)
            if s.is_rejected():
                return (
                    ScheduleResult(nominating_info=CLEAR_NOMINATED_NODE),
                    assumed_qpi,
                    _single_node_fit(assumed, result, s),
                )
            return ScheduleResult(nominating_info=CLEAR_NOMINATED_NODE), assumed_qpi, s
        return result, assumed_qpi, None

    def _unreserve_and_forget(self, fw: Framework, state: CycleState, pod: PodInfo, node: str) -> None:
        fw.run_reserve_plugins_unreserve(state, pod, node)
        with contextlib.suppress(CacheError):
            self.cache.forget_pod(pod)

    def schedule_pod(self, fw: Framework, state: CycleState, pod: PodInfo) -> ScheduleResult:
        self.cache.update_snapshot(self.snapshot)
        snap = self.snapshot
        if snap.num_nodes == 0:
            raise _Error(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_NODES_AVAILABLE))
        feasible, diagnosis = self.find_nodes_that_fit_pod(fw, state, pod)
        if len(feasible) == 0:
            raise FitError(pod.key, snap.num_nodes, diagnosis)
        if len(feasible) == 1:
            host = snap.nodes[int(feasible[0])].name
            if self.observer is not None:
                self.observer.node_chosen(pod, host, None, self.now())
            return ScheduleResult(host, 1 + len(diagnosis.node_to_status), 1)
        totals, per_plugin = self.prioritize_nodes(fw, state, pod, feasible)
        names = snap.node_names()[feasible]
        host, tied = self.select_host(names, totals)
        if self.observer is not None:
            self.observer.node_chosen(pod, host, NodeScores(names, totals, per_plugin, tied), self.now())
        return ScheduleResult(host, len(feasible) + len(diagnosis.node_to_status), len(feasible))

    def find_nodes_that_fit_pod(self, fw: Framework, state: CycleState, pod: PodInfo) -> tuple[np.ndarray, Diagnosis]:
        snap = self.snapshot
        diagnosis = Diagnosis()
        pre_res, s, unscheduled = fw.run_pre_filter_plugins(state, pod, snap.nodes)
        diagnosis.unschedulable_plugins = set(unscheduled)
        if s is not None and s.code != Code.SUCCESS:
            if not s.is_rejected():
                raise _Error(s)
            diagnosis.node_to_status.absent = s
            diagnosis.pre_filter_msg = s.message()
            diagnosis.add_plugin_status(s)
            return np.zeros(0, np.int64), diagnosis

        nnn = pod.pod.status.nominated_node_name
        if nnn:
            ni = snap.get(nnn)
            if ni is not None:
                feasible = self._find_nodes_that_pass_filters(
                    fw, state, pod, diagnosis, np.array([ni.index], np.int64), rotate=False
                )
                feasible = self._find_nodes_that_pass_extenders(pod, feasible, diagnosis)
                if len(feasible):
                    return feasible, diagnosis

        if pre_res is None or pre_res.all_nodes():
            candidates = np.arange(snap.num_nodes, dtype=np.int64)
        else:
            idx = [snap.node_map[n].index for n in (pre_res.node_names or ()) if n in snap.node_map]
            candidates = np.array(sorted(idx), np.int64)
            diagnosis.node_to_status.absent = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(unscheduled))}]",
            )
        feasible = self._find_nodes_that_pass_filters(fw, state, pod, diagnosis, candidates, rotate=True)
        before = len(feasible)
        feasible = self._find_nodes_that_pass_extenders(pod, feasible, diagnosis)
        if len(feasible) != before:
            diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        return feasible, diagnosis

    def _find_nodes_that_pass_filters(
        self, fw: Framework, state: CycleState, pod: PodInfo, diagnosis: Diagnosis, nodes: np.ndarray, rotate: bool
    ) -> np.ndarray:
        n = len(nodes)
        if n == 0:
            return nodes
        to_find = num_feasible_nodes_to_find(fw.percentage_of_nodes_to_score, n)
        start = self.next_start_node_index % n
        order = np.concatenate([nodes[start:], nodes[:start]]) if start else nodes
        if not fw.has_filter_plugins():
            feasible = order[:to_find]
            if rotate:
                self._advance_start(len(feasible))
            return feasible
        outcome = fw.find_feasible(state, pod, self.snapshot, order, to_find)
        if outcome.error is not None:
            raise _Error(outcome.error)
        # The failed nodes' statuses only serve when nothing fits (message, preemption), or when
        # extenders may still reject the feasible ones: build them only then.
        if len(outcome.feasible) == 0 or self.extenders:
            groups = outcome.groups()
            diagnosis.node_to_status.add_groups(self.snapshot, groups)
            for _, st in groups:
                diagnosis.add_plugin_status(st)
        if rotate:
            self._advance_start(len(outcome.feasible) + outcome.num_failed)
        return outcome.feasible

    def _advance_start(self, processed: int) -> None:
        total = self.snapshot.num_nodes
        if total:
            self.next_start_node_index = (self.next_start_node_index + processed) % total

    def _find_nodes_that_pass_extenders(self, pod: PodInfo, feasible: np.ndarray, diagnosis: Diagnosis) -> np.ndarray:
        self._extender_nodes = None
        if not self.extenders or len(feasible) == 0:
            return feasible
        from kubesched.extender.runner import ExtenderError, filter_with_extenders

        try:
            res = filter_with_extenders(self.extenders, pod, feasible, self.snapshot, diagnosis.node_to_status)
        except ExtenderError as err:
            raise _Error(Status.as_error(err)) from None
        if res.replaced:
            self._extender_nodes = res.nodes
        return res.feasible

    def prioritize_nodes(
        self, fw: Framework, state: CycleState, pod: PodInfo, feasible: np.ndarray
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        snap = self.snapshot
        if not self.extenders and not fw.has_score_plugins():
            return np.ones(len(feasible), np.int64), {}
        idx = feasible
        nodes: Sequence[NodeInfo] = NodeSubset(snap.nodes, feasible)
        if self._extender_nodes is not None:
            # An extender answered with Node objects: score its fresh, pod-less NodeInfos, in a snapshot of their own.
            nodes = self._extender_nodes
            snap = Snapshot()
            snap.rebuild(list(nodes))
            idx = np.arange(len(nodes), dtype=np.int64)
        s = fw.run_pre_score_plugins(state, pod, nodes)
        if s is not None:
            raise _Error(s)
        totals, per_plugin, s = fw.run_score_plugins(state, pod, snap, idx)
        if s is not None or totals is None:
            raise _Error(s or Status.as_error("score failed"))
        if self.extenders:
            from kubesched.extender.runner import prioritize_with_extenders

            totals = totals + prioritize_with_extenders(self.extenders, pod, nodes)
        return totals, per_plugin

    def select_host(self, names: np.ndarray, totals: np.ndarray) -> tuple[str, np.ndarray]:
        """The highest total; ties are broken uniformly at random (seeded), as upstream's reservoir sampling.

        Returns the host and the positions (in `names`) of all nodes sharing the top score.
        """
        tied_idx = np.flatnonzero(totals == totals.max())
        if len(tied_idx) == 1:
            return str(names[int(tied_idx[0])]), tied_idx
        return str(names[int(tied_idx[self.rng.randrange(len(tied_idx))])]), tied_idx

    # ------------------------------------------------------------ binding cycle

    def binding_cycle(
        self, state: CycleState, fw: Framework, result: ScheduleResult, qpi: QueuedPodInfo, start: float
    ) -> None:
        wp = fw.waiting_pods.get(qpi.uid)
        if wp is not None and not wp.is_resolved():
            self._parked.append(_ParkedBinding(fw, state, result, qpi, start))
            return
        self._finish_binding_cycle(state, fw, result, qpi, start)

    def _finish_binding_cycle(
        self, state: CycleState, fw: Framework, result: ScheduleResult, qpi: QueuedPodInfo, start: float
    ) -> None:
        pod = qpi.pod_info
        host = result.suggested_host
        s: Status | None = None
        wp = fw.waiting_pods.get(qpi.uid)
        if wp is not None:
            fw.waiting_pods.remove(qpi.uid)
            r = wp.result
            if r is not None and r.code != Code.SUCCESS:
                s = r if r.is_rejected() else Status.as_error(f"waiting on permit for pod: {r.message()}", r.plugin)
                if s.is_rejected():
                    s = _single_node_fit(pod, result, s)
        if s is None:
            s = fw.run_pre_bind_plugins(state, pod, host)
            if s is not None and s.is_rejected():
                s = _single_node_fit(pod, result, s)
        if s is not None:
            self._binding_done(state, fw, result, qpi, s, start)
            return
        self.queue.done(qpi.uid)  # type: ignore[union-attr]
        not_before = state.get(BIND_NOT_BEFORE)
        if not_before is not None and not_before > self.now():
            self._parked.append(_ParkedBinding(fw, state, result, qpi, start, not_before))
            return
        self._bind_step(state, fw, result, qpi, start)

    def _bind_step(
        self, state: CycleState, fw: Framework, result: ScheduleResult, qpi: QueuedPodInfo, start: float
    ) -> None:
        """After PreBind: the Bind call (off this thread in live mode), then the binding cycle's end."""
        pod = qpi.pod_info
        host = result.suggested_host
        if self.bind_runner is not None:

            def done(st: Status | None) -> None:
                self._binding_done(state, fw, result, qpi, self._bound(pod, host, st), start)
                self._run_after_cycle()

            if self.bind_caller is not None and self._binds_by_default(fw, pod):
                self.bind_caller(pod, host, fw.default_bind_status, done)
            else:
                self.bind_runner(pod, host, lambda: self._run_binders(fw, state, pod, host), done)
            return
        self._binding_done(state, fw, result, qpi, self._bind(fw, state, pod, host), start)

    def _binding_done(
        self,
        state: CycleState,
        fw: Framework,
        result: ScheduleResult,
        qpi: QueuedPodInfo,
        s: Status | None,
        start: float,
    ) -> None:
        if s is not None and s.code != Code.SUCCESS:
            self._handle_binding_cycle_error(state, fw, qpi, result, s, start)
            return
        info(
            log,
            2,
            "Successfully bound pod to node",
            pod=kobj(qpi.pod_info.key),
            node=result.suggested_host,
            evaluatedNodes=result.evaluated_nodes,
            feasibleNodes=result.feasible_nodes,
        )
        self.metrics.observe_scheduled(fw.profile_name, qpi.attempts, perf_counter() - start)
        fw.run_post_bind_plugins(state, qpi.pod_info, result.suggested_host)

    def _bind(self, fw: Framework, state: CycleState, pod: PodInfo, host: str) -> Status | None:
        return self._bound(pod, host, self._run_binders(fw, state, pod, host))

    def _binds_by_default(self, fw: Framework, pod: PodInfo) -> bool:
        """Whether DefaultBinder alone binds this pod (no binder extender wants it): an API call, nothing else."""
        if any(ext.is_binder() and ext.is_interested(pod) for ext in self.extenders):
            return False
        return fw.binds_by_default

    def _run_binders(self, fw: Framework, state: CycleState, pod: PodInfo, host: str) -> Status | None:
        """The API part of binding: a binder extender, else the Bind plugins. Touches no scheduler state."""
        s: Status | None
        bound = False
        s = None
        for ext in self.extenders:
            if not ext.is_binder() or not ext.is_interested(pod):
                continue
            try:
                ext.bind(pod, host)
            except Exception as err:  # noqa: BLE001 - the extender's failure is the binding's failure
                if ext.is_ignorable():
                    continue  # upstream: an ignorable binder's error hands the pod to the next binder
                s = Status.as_error(err)
            bound = True
            break
        if not bound:
            s = fw.run_bind_plugins(state, pod, host)
        return s

    def _bound(self, pod: PodInfo, host: str, s: Status | None) -> Status | None:
        """After the API answered: the cache learns the binding finished; success is recorded as an event."""
        self.cache.finish_binding(pod, self.now())
        if s is None or s.code == Code.SUCCESS:
            self.client.record_event(
                "Normal", "Scheduled", "Binding", f"Successfully assigned {pod.namespace}/{pod.name} to {host}", pod.key
            )
            return None
        info(log, 1, "Failed to bind pod", pod=kobj(pod.key))
        return s

    def _handle_binding_cycle_error(
        self, state: CycleState, fw: Framework, qpi: QueuedPodInfo, result: ScheduleResult, s: Status, start: float
    ) -> None:
        pod = qpi.pod_info
        fw.run_reserve_plugins_unreserve(state, pod, result.suggested_host)
        q = self.queue
        assert q is not None
        try:
            self.cache.forget_pod(pod)
        except CacheError:
            pass
        else:
            if s.is_rejected():
                self._after_cycle.append(
                    lambda: q.move_all_to_active_or_backoff(
                        EVENT_ASSIGNED_POD_DELETE, pod.pod, None, lambda other: other.uid != pod.uid
                    )
                )
            else:
                q.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_DELETE, pod.pod, None)
        self.handle_scheduling_failure(fw, qpi, s, CLEAR_NOMINATED_NODE, start)

    def resume_parked(self) -> bool:
        """Finish the binding cycles whose wait ended: Permit allowed, rejected or timed out; PreBind's time came."""
        now = self.now()
        progressed = False
        still: list[_ParkedBinding] = []
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
                self._bind_step(p.state, p.fw, p.result, p.qpi, p.start)
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
        deadlines = []
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

    # ------------------------------------------------------------ failures

    def handle_scheduling_failure(
        self, fw: Framework, qpi: QueuedPodInfo, status: Status, nominating: NominatingInfo | None, start: float
    ) -> None:
        q = self.queue
        assert q is not None
        reason = POD_REASON_UNSCHEDULABLE if status.is_rejected() else POD_REASON_SCHEDULER_ERROR
        pod = qpi.pod
        err = status.error
        msg = status.message()
        if isinstance(err, FitError):
            qpi.unschedulable_plugins = set(err.diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(err.diagnosis.pending_plugins)
        self.metrics.observe_failure(fw.profile_name, reason, perf_counter() - start)
        if self.observer is not None:
            self.observer.attempt_failed(qpi.pod_info, reason, msg, self.now())
        ref = kobj(qpi.pod_info.key)
        if isinstance(err, FitError):
            info(log, 2, "Unable to schedule pod; no fit; waiting", pod=ref, err=msg)
        elif msg == ERR_NO_NODES_AVAILABLE and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            info(log, 2, "Unable to schedule pod; no nodes are registered to the cluster; waiting", pod=ref)
        elif self.log_errors:
            log.error("Error scheduling pod; retrying", extra={"err": msg, "pod": ref})

        cached = self.client.get_pod(pod.metadata.namespace, pod.metadata.name)
        called_done = False
        if cached is None:
            info(log, 0, "Pod doesn't exist in informer cache", pod=ref, err=f'pod "{pod.metadata.name}" not found')
        elif cached.spec.node_name:
            info(
                log,
                0,
                "Pod has been assigned to node. Abort adding it back to queue.",
                pod=ref,
                node=cached.spec.node_name,
            )
        else:
            qpi.pod_info = PodInfo(cached) if cached is not qpi.pod_info.pod else qpi.pod_info
            q.add_unschedulable_if_not_present(qpi)
            called_done = True
        q.add_nominated_pod(qpi.pod_info, nominating)
        if not called_done:
            q.done(qpi.uid)
        # The event is recorded even for a pod already gone (deleted while it was being bound), as upstream
        # does: it says why the pod never ran. Its status is not written: upstream's patch would get a 404.
        self.client.record_event(
            "Warning", "FailedScheduling", "Scheduling", msg[:MAX_MESSAGE_LENGTH], qpi.pod_info.key
        )
        if cached is None:
            return
        nnn: str | None = None
        if (
            nominating is not None
            and nominating.mode == MODE_OVERRIDE
            and cached.status.nominated_node_name != nominating.nominated_node_name
        ):
            nnn = nominating.nominated_node_name
        # CalculatePodConditionObservedGeneration with PodObservedGenerationTracking on: the generation of the
        # pod this cycle scheduled (not of the informer's newer copy).
        cond = PodCondition(
            type="PodScheduled",
            status="False",
            observed_generation=pod.metadata.generation,
            reason=reason,
            message=msg,
        )
        self.client.update_pod_status(
            pod.metadata.namespace, pod.metadata.name, condition=cond, nominated_node_name=nnn
        )


@dataclass(slots=True)
class _ParkedBinding:
    """A binding cycle waiting: at Permit (not_before None), or after PreBind until not_before."""

    fw: Framework
    state: CycleState
    result: ScheduleResult
    qpi: QueuedPodInfo
    start: float  # perf_counter() at its scheduling cycle's start (the attempt-duration metric)
    not_before: float | None = None


def _terminal(pod: Pod) -> bool:
    return pod.status.phase in ("Succeeded", "Failed")


def _with_node(pod: Pod, node: str) -> Pod:
    import msgspec

    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node))


def _requeued(qpi: QueuedPodInfo, pi: PodInfo) -> QueuedPodInfo:
    """A copy of the queued pod carrying another PodInfo (the assumed one)."""
    c = QueuedPodInfo(pi, qpi.timestamp, qpi.seq)
    c.initial_attempt_timestamp = qpi.initial_attempt_timestamp
    c.attempts = qpi.attempts
    c.unschedulable_count = qpi.unschedulable_count
    c.consecutive_errors_count = qpi.consecutive_errors_count
    return c


def _fit_status(fit: FitError) -> Status:
    # The status outlives the cycle: drop the traceback, whose frames would hold the whole cycle's state.
    fit.__traceback__ = None
    return Status(Code.UNSCHEDULABLE, fit.message(), error=fit)


def _single_node_fit(pod: PodInfo, result: ScheduleResult, s: Status) -> Status:
    d = Diagnosis()
    d.node_to_status.set(result.suggested_host, s)
    d.add_plugin_status(s)
    fit = FitError(pod.key, 1, d)
    return Status(s.code, fit.message(), error=fit)


def node_scheduling_property_changes(new: Node, old: Node) -> list[ClusterEvent]:
    """framework.NodeSchedulingPropertiesChange: the specific updates a node saw."""
    events = []
    if new.spec.unschedulable != old.spec.unschedulable:
        events.append(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_TAINT))
    if new.status.allocatable != old.status.allocatable:
        events.append(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE))
    if new.metadata.labels != old.metadata.labels:
        events.append(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL))
    if new.spec.taints != old.spec.taints:
        events.append(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_TAINT))
    if new.status.conditions != old.status.conditions:
        events.append(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_CONDITION))
    if new.metadata.annotations != old.metadata.annotations:
        events.append(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_ANNOTATION))
    return events
