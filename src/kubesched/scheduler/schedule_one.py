"""ScheduleOne and the scheduling cycle (pkg/scheduler/schedule_one.go).

schedule_one pops a pod and runs its scheduling cycle (PreFilter, Filter,
PostFilter on failure, PreScore, Score, select_host, assume, Reserve, Permit),
then its binding cycle (WaitOnPermit, PreBind, Bind, PostBind). Failures go
through handle_scheduling_failure: the pod goes back to the queue, gets the
PodScheduled=False condition with the FailedScheduling message, and an event.

schedule_pod.py holds the algorithm (the nodes that fit, their scores, the
host), binding_cycle.py the binding cycle, failure_handler.py the failure
handling. All are mixins of the Scheduler (scheduler.py), which sets the
attributes they read: the cycles are methods, found on the class as upstream's
are on its sched, with no layer between the run loop and them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from time import perf_counter
from typing import TYPE_CHECKING

import msgspec

from kubesched.api.core import Pod
from kubesched.cache.cache import CacheError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import FitError
from kubesched.framework.interface import PostFilterResult
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.klog import enabled, info, kobj
from kubesched.queue.nominator import CLEAR_NOMINATED_NODE, MODE_OVERRIDE, NominatingInfo
from kubesched.scheduler.binding_cycle import BindCaller, BindingCycle, BindRunner, ParkedBinding
from kubesched.scheduler.failure_handler import (
    MAX_MESSAGE_LENGTH,
    POD_REASON_SCHEDULER_ERROR,
    POD_REASON_UNSCHEDULABLE,
    FailureHandler,
    fit_status,
    single_node_fit,
)
from kubesched.scheduler.schedule_pod import (
    ERR_NO_NODES_AVAILABLE,
    MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND,
    MIN_FEASIBLE_NODES_TO_FIND,
    ScheduleError,
    ScheduleResult,
    SchedulingAlgorithm,
    num_feasible_nodes_to_find,
)

__all__ = [
    "ERR_NO_NODES_AVAILABLE",
    "MAX_MESSAGE_LENGTH",
    "MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND",
    "MIN_FEASIBLE_NODES_TO_FIND",
    "POD_REASON_SCHEDULER_ERROR",
    "POD_REASON_UNSCHEDULABLE",
    "BindCaller",
    "BindRunner",
    "ParkedBinding",
    "ScheduleResult",
    "SchedulingCycle",
    "num_feasible_nodes_to_find",
]

# Upstream's messages at upstream's verbosities (kubesched.klog): silent unless `run` or `serve` set up logging.
log = logging.getLogger("kubesched.scheduler")


class SchedulingCycle(SchedulingAlgorithm, BindingCycle, FailureHandler):
    """ScheduleOne and what it runs; the Scheduler sets the attributes below (scheduler.py)."""

    profiles: dict[str, Framework]
    before_cycle: Callable[[Framework, QueuedPodInfo], None] | None
    _during_cycles: list[tuple[int, Callable[[], None]]]
    _bind_events_late: bool

    if TYPE_CHECKING:  # the Scheduler's own (scheduler.py)

        def sync(self) -> None: ...

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
        if enabled(log, 4):  # per pod: the arguments are built only when they are logged
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
        if not self._during_cycles:
            return [], []
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
        if enabled(log, 3):
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
        except ScheduleError as err:
            return ScheduleResult(nominating_info=CLEAR_NOMINATED_NODE), qpi, err.status
        except FitError as fit:
            nominating = self._post_filter(fw, state, pod, fit)
            return ScheduleResult(nominating_info=nominating), qpi, fit_status(fit)

        # Assume: the pod counts on the node from now on.
        assumed = pod.derive(_with_node(pod.pod, result.suggested_host))
        # Upstream assumes a copy of the queued pod; nothing reads the popped one after this cycle (the queue
        # holds it no more, a failure requeues the assumed one), so it carries the assumed pod itself.
        qpi.pod_info = assumed
        assumed_qpi = qpi
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
            return single_node_fit(assumed, result, s) if s.is_rejected() else s
        s = fw.run_permit_plugins(state, assumed, host)
        if s is not None and s.code not in (Code.SUCCESS, Code.WAIT):
            self._unreserve_and_forget(fw, state, assumed, host)
            return single_node_fit(assumed, result, s) if s.is_rejected() else s
        return None

    def _unreserve_and_forget(self, fw: Framework, state: CycleState, pod: PodInfo, node: str) -> None:
        fw.run_reserve_plugins_unreserve(state, pod, node)
        with contextlib.suppress(CacheError):
            self.cache.forget_pod(pod)


def _with_node(pod: Pod, node: str) -> Pod:
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node))
