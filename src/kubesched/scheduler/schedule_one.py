"""The scheduling and binding cycles (pkg/scheduler/schedule_one.go).

schedule_one pops a pod and runs its scheduling cycle (PreFilter, Filter,
PostFilter on failure, PreScore, Score, select_host, assume, Reserve, Permit),
then its binding cycle (WaitOnPermit, PreBind, Bind, PostBind). Failures go
through handle_scheduling_failure: the pod goes back to the queue, gets the
PodScheduled=False condition with the FailedScheduling message, and an event.

A mixin of the Scheduler (scheduler.py), which sets the attributes it reads:
the cycles are methods, found on the class as upstream's are on its sched,
with no layer between the run loop and them.
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.core import Pod, PodCondition
from kubesched.cache.cache import Cache, CacheError
from kubesched.framework.cycle_state import BIND_NOT_BEFORE, CycleState
from kubesched.framework.diagnosis import EXTENDER_NAME, Diagnosis, FitError
from kubesched.framework.events import EVENT_ASSIGNED_POD_DELETE
from kubesched.framework.interface import PostFilterResult
from kubesched.framework.runtime import Framework
from kubesched.framework.snapshot import NodeSubset, Snapshot
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo, QueuedPodInfo
from kubesched.klog import info, kobj
from kubesched.metrics import Metrics
from kubesched.queue.nominator import CLEAR_NOMINATED_NODE, MODE_OVERRIDE, NominatingInfo
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.observer import AttemptObserver, NodeScores

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


@dataclass(slots=True)
class ParkedBinding:
    """A binding cycle waiting: at Permit (not_before None), or after PreBind until not_before."""

    fw: Framework
    state: CycleState
    result: ScheduleResult
    qpi: QueuedPodInfo
    start: float  # perf_counter() at its scheduling cycle's start (the attempt-duration metric)
    not_before: float | None = None


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


class SchedulingCycle:
    """ScheduleOne and what it runs; the Scheduler sets the attributes below (scheduler.py)."""

    client: Any
    now: Callable[[], float]
    rng: random.Random
    cache: Cache
    snapshot: Snapshot
    queue: SchedulingQueue | None
    profiles: dict[str, Framework]
    extenders: list[Any]
    metrics: Metrics
    next_start_node_index: int
    observer: AttemptObserver | None
    before_cycle: Callable[[Framework, QueuedPodInfo], None] | None
    bind_runner: BindRunner | None
    bind_caller: BindCaller | None
    log_errors: bool
    _extender_nodes: list[NodeInfo] | None
    _after_cycle: list[Callable[[], None]]
    _during_cycles: list[tuple[int, Callable[[], None]]]
    _parked: list[ParkedBinding]
    _bind_events_late: bool

    if TYPE_CHECKING:  # the Scheduler's own (scheduler.py)

        def sync(self) -> None: ...

        def _run_after_cycle(self) -> None: ...

    # ------------------------------------------------------------ schedule_one

    def schedule_one(self) -> bool:
        """Pop one pod and try to schedule it; False when no pod can be popped."""
        late, self._bind_events_late = self._bind_events_late, False
        if not late:
            self.sync()
        q = self.queue
        assert q is not None
        overlapping, waiting = self._ripe_overlapping_work()
        qpi = q.pop()
        if late:
            self.sync()
            if qpi is None:
                qpi = q.pop()
        if qpi is None:
            return self._no_pod_to_attempt(overlapping, waiting)
        # Whatever this cycle does, the overlapping work ends after its scheduling part.
        self._after_cycle[:0] = overlapping
        info(log, 4, "About to try and schedule pod", pod=kobj(qpi.pod_info.key))
        fw = self.profiles.get(qpi.pod.spec.scheduler_name)
        if fw is None or self._skip_pod_schedule(fw, qpi):
            q.done(qpi.uid)
            self._run_after_cycle()
            return True
        self._attempt(fw, qpi)
        return True

    def _ripe_overlapping_work(self) -> tuple[list[Callable[[], None]], list[tuple[int, Callable[[], None]]]]:
        """One more cycle begins: the work whose cycles are over (it ends with this one), and the rest."""
        ripe: list[tuple[int, Callable[[], None]]] = []
        waiting: list[tuple[int, Callable[[], None]]] = []
        for cycles, fn in self._during_cycles:
            (ripe if cycles <= 1 else waiting).append((cycles - 1, fn))
        self._during_cycles[:] = waiting
        return [fn for _, fn in ripe], waiting

    def _no_pod_to_attempt(
        self, overlapping: list[Callable[[], None]], waiting: list[tuple[int, Callable[[], None]]]
    ) -> bool:
        """No cycle to overlap: the work finishes on its own. False when there was none."""
        overlapping += [fn for _, fn in waiting]
        self._during_cycles.clear()
        if not overlapping:
            return False
        self._after_cycle[:0] = overlapping
        self._run_after_cycle()
        return True

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

    def _attempt(self, fw: Framework, qpi: QueuedPodInfo) -> None:
        """The scheduling cycle, then the binding cycle, or the failure handling."""
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
            return
        self._run_after_cycle()
        self.binding_cycle(state, fw, result, assumed, start)
        if self._after_cycle or self.bind_runner is not None:
            self._run_after_cycle()
        else:
            self._bind_events_late = True

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
            nominating = self._post_filter(fw, state, pod, fit)
            return ScheduleResult(nominating_info=nominating), qpi, _fit_status(fit)

        # Assume: the pod counts on the node from now on.
        assumed = pod.derive(_with_node(pod.pod, result.suggested_host))
        assumed_qpi = _requeued(qpi, assumed)
        try:
            self.cache.assume_pod(assumed, result.suggested_host)
        except CacheError as err:
            return ScheduleResult(nominating_info=CLEAR_NOMINATED_NODE), assumed_qpi, Status.as_error(err)
        self.queue.delete_nominated_pod_if_exists(assumed)  # type: ignore[union-attr]
        s = self._reserve_and_permit(fw, state, assumed, result)
        if s is not None:
            return ScheduleResult(nominating_info=CLEAR_NOMINATED_NODE), assumed_qpi, s
        return result, assumed_qpi, None

    def _post_filter(self, fw: Framework, state: CycleState, pod: PodInfo, fit: FitError) -> NominatingInfo | None:
        """No node fits: the PostFilter plugins (preemption) may nominate one. The nomination the pod gets."""
        if not fw.has_post_filter_plugins():
            return CLEAR_NOMINATED_NODE
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
        if pf_result is not None and pf_result.mode != PostFilterResult.MODE_NOOP:
            return NominatingInfo(pf_result.nominated_node_name, MODE_OVERRIDE)
        return None

    def _reserve_and_permit(
        self, fw: Framework, state: CycleState, assumed: PodInfo, result: ScheduleResult
    ) -> Status | None:
        """Reserve, then Permit (a Wait passes). A failure unreserves and forgets the pod: its status, else None."""
        host = result.suggested_host
        s = fw.run_reserve_plugins_reserve(state, assumed, host)
        if s is not None and s.code != Code.SUCCESS:
            self._unreserve_and_forget(fw, state, assumed, host)
            return _single_node_fit(assumed, result, s) if s.is_rejected() else s
        s = fw.run_permit_plugins(state, assumed, host)
        if s is not None and s.code not in (Code.SUCCESS, Code.WAIT):
            self._unreserve_and_forget(fw, state, assumed, host)
            return _single_node_fit(assumed, result, s) if s.is_rejected() else s
        return None

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
            self._parked.append(ParkedBinding(fw, state, result, qpi, start))
            return
        self._finish_binding_cycle(state, fw, result, qpi, start)

    def _finish_binding_cycle(
        self, state: CycleState, fw: Framework, result: ScheduleResult, qpi: QueuedPodInfo, start: float
    ) -> None:
        """After WaitOnPermit: PreBind, then Bind now or, when PreBind asked for a wait, parked until then."""
        pod = qpi.pod_info
        s = _permit_wait_status(fw, pod, result, qpi.uid)
        if s is None:
            s = fw.run_pre_bind_plugins(state, pod, result.suggested_host)
            if s is not None and s.is_rejected():
                s = _single_node_fit(pod, result, s)
        if s is not None:
            self._binding_done(state, fw, result, qpi, s, start)
            return
        self.queue.done(qpi.uid)  # type: ignore[union-attr]
        not_before = state.get(BIND_NOT_BEFORE)
        if not_before is not None and not_before > self.now():
            self._parked.append(ParkedBinding(fw, state, result, qpi, start, not_before))
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

    # ------------------------------------------------------------ failures

    def handle_scheduling_failure(
        self, fw: Framework, qpi: QueuedPodInfo, status: Status, nominating: NominatingInfo | None, start: float
    ) -> None:
        """The pod back to the queue (unless gone or bound meanwhile), an event, and its PodScheduled condition."""
        reason = POD_REASON_UNSCHEDULABLE if status.is_rejected() else POD_REASON_SCHEDULER_ERROR
        pod = qpi.pod  # the pod this attempt scheduled: qpi may take the informer's newer copy below
        msg = status.message()
        self._report_failure(fw, qpi, status, reason, msg, start)
        cached = self._requeue_failed(qpi, pod, nominating)
        # The event is recorded even for a pod already gone (deleted while it was being bound), as upstream
        # does: it says why the pod never ran. Its status is not written: upstream's patch would get a 404.
        self.client.record_event(
            "Warning", "FailedScheduling", "Scheduling", msg[:MAX_MESSAGE_LENGTH], qpi.pod_info.key
        )
        if cached is None:
            return
        self._update_failed_pod_status(pod, cached, reason, msg, nominating)

    def _report_failure(
        self, fw: Framework, qpi: QueuedPodInfo, status: Status, reason: str, msg: str, start: float
    ) -> None:
        """What the queue, the metrics, the observer and the log learn of the failure."""
        err = status.error
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

    def _requeue_failed(self, qpi: QueuedPodInfo, pod: Pod, nominating: NominatingInfo | None) -> Pod | None:
        """Back to the unschedulable pods, with the informer's copy, if that copy is still unbound.

        Returns that copy (None: the pod is gone).
        """
        q = self.queue
        assert q is not None
        ref = kobj(qpi.pod_info.key)
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
        return cached

    def _update_failed_pod_status(
        self, pod: Pod, cached: Pod, reason: str, msg: str, nominating: NominatingInfo | None
    ) -> None:
        """updatePod: PodScheduled=False with the failure's reason and message, and the nominated node if new."""
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


def _permit_wait_status(fw: Framework, pod: PodInfo, result: ScheduleResult, uid: str) -> Status | None:
    """WaitOnPermit's answer, the pod no longer waiting: None when allowed (or it never waited)."""
    wp = fw.waiting_pods.get(uid)
    if wp is None:
        return None
    fw.waiting_pods.remove(uid)
    r = wp.result
    if r is None or r.code == Code.SUCCESS:
        return None
    s = r if r.is_rejected() else Status.as_error(f"waiting on permit for pod: {r.message()}", r.plugin)
    if s.is_rejected():
        s = _single_node_fit(pod, result, s)
    return s


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
