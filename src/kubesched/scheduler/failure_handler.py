"""handleSchedulingFailure (pkg/scheduler/schedule_one.go): a failed attempt's pod back to the queue, and why.

The pod goes back to the unschedulable pods (or backoff) with the informer's
copy, gets the PodScheduled=False condition with the FailedScheduling message,
and an event; the metrics, the observer and the log learn of it.

A mixin of the Scheduler (scheduler.py), which sets the attributes it reads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from time import perf_counter
from typing import TYPE_CHECKING, Any

from kubesched.api.core import Pod, PodCondition
from kubesched.framework.diagnosis import Diagnosis, FitError
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.klog import info, kobj
from kubesched.metrics import Metrics
from kubesched.queue.nominator import MODE_OVERRIDE, NominatingInfo
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.observer import AttemptObserver
from kubesched.scheduler.schedule_pod import ERR_NO_NODES_AVAILABLE

if TYPE_CHECKING:
    from kubesched.scheduler.schedule_pod import ScheduleResult

POD_REASON_UNSCHEDULABLE = "Unschedulable"
POD_REASON_SCHEDULER_ERROR = "SchedulerError"
MAX_MESSAGE_LENGTH = 1024

log = logging.getLogger("kubesched.scheduler")


class FailureHandler:
    """handleSchedulingFailure and its steps; the Scheduler sets the attributes below (scheduler.py)."""

    client: Any
    now: Callable[[], float]
    queue: SchedulingQueue | None
    metrics: Metrics
    observer: AttemptObserver | None
    log_errors: bool

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


def fit_status(fit: FitError) -> Status:
    """The Unschedulable status of a FitError (no node fits), carrying it for the failure handling."""
    # The status outlives the cycle: drop the traceback, whose frames would hold the whole cycle's state.
    fit.__traceback__ = None
    return Status(Code.UNSCHEDULABLE, fit.message(), error=fit)


def single_node_fit(pod: PodInfo, result: ScheduleResult, s: Status) -> Status:
    """A rejection on the chosen node (Reserve, Permit, PreBind) worded as a FitError over that one node."""
    d = Diagnosis()
    d.node_to_status.set(result.suggested_host, s)
    d.add_plugin_status(s)
    fit = FitError(pod.key, 1, d)
    return Status(s.code, fit.message(), error=fit)
