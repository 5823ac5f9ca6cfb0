"""The binding cycle (pkg/scheduler/schedule_one.go: bindingCycle): WaitOnPermit, PreBind, Bind, PostBind.

A pod waiting at Permit, or after PreBind until a time, is parked (ParkedBinding)
and resumed by the Scheduler; in live mode the Bind call runs off the scheduling
thread (bind_runner, bind_caller) and the cycle ends here when it answers.

A mixin of the Scheduler (scheduler.py), which sets the attributes it reads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any

from kubesched.cache.cache import Cache, CacheError
from kubesched.framework.cycle_state import BIND_NOT_BEFORE, PRE_BIND_NEXT, CycleState
from kubesched.framework.events import EVENT_ASSIGNED_POD_DELETE
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.klog import enabled, info, kobj
from kubesched.metrics import Metrics
from kubesched.queue.nominator import CLEAR_NOMINATED_NODE, NominatingInfo
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.failure_handler import single_node_fit
from kubesched.scheduler.schedule_pod import ScheduleResult

log = logging.getLogger("kubesched.scheduler")

# bind_runner(pod, node, work, done): run work() (the binding's API calls) elsewhere, then done(status) here.
BindRunner = Callable[[PodInfo, str, Callable[[], Status | None], Callable[[Status | None], None]], None]
# bind_caller(pod, node, status_of, done): start the default binder's API call without waiting for it; when it
# ends, done(status_of(error or None)) runs here. What bind_runner does, when DefaultBinder alone binds the pod.
BindCaller = Callable[
    [PodInfo, str, Callable[[BaseException | None], Status | None], Callable[[Status | None], None]], None
]


# Scheduling cycles before the informers see what a binding cycle's PreBind wrote when the binding then waits
# (VolumeBinding's PersistentVolume updates, before it waits for the claims to bind). Upstream makes those API
# calls in the binding goroutine after Permit, as the next pod is being scheduled, and the watch events follow:
# a short next cycle is over before they arrive (the oracle, in every run under four timings: differential
# mixed-batch 940189). A binding's own events come one cycle sooner (schedule_one's late binding events).
PREBIND_WRITE_CYCLES = 2


@dataclass(slots=True)
class ParkedBinding:
    """A binding cycle waiting: at Permit (not_before None), or after PreBind until not_before."""

    fw: Framework
    state: CycleState
    result: ScheduleResult
    qpi: QueuedPodInfo
    start: float  # perf_counter() at its scheduling cycle's start (the attempt-duration metric)
    not_before: float | None = None


class BindingCycle:
    """The binding cycle; the Scheduler sets the attributes below (scheduler.py)."""

    client: Any
    cluster: Any
    now: Callable[[], float]
    cache: Cache
    queue: SchedulingQueue | None
    extenders: list[Any]
    metrics: Metrics
    bind_runner: BindRunner | None
    bind_caller: BindCaller | None
    _after_cycle: list[Callable[[], None]]
    _parked: list[ParkedBinding]

    if TYPE_CHECKING:  # the Scheduler's own (scheduler.py) and the FailureHandler's (failure_handler.py)

        def _run_after_cycle(self) -> None: ...

        def run_after_cycles(self, cycles: int, fn: Callable[[], None]) -> None: ...

        def handle_scheduling_failure(
            self, fw: Framework, qpi: QueuedPodInfo, status: Status, nominating: NominatingInfo | None, start: float
        ) -> None: ...

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
        s = _permit_wait_status(fw, qpi.pod_info, result, qpi.uid)
        if s is not None:
            self._binding_done(state, fw, result, qpi, s, start)
            return
        self.pre_bind(state, fw, result, qpi, start)

    def pre_bind(
        self, state: CycleState, fw: Framework, result: ScheduleResult, qpi: QueuedPodInfo, start: float
    ) -> None:
        """The PreBind plugins (after a wait, those it held back), then Bind, or parked while one waits."""
        pod = qpi.pod_info
        store = self.cluster.store
        buffered = len(store.pending)
        state.delete(BIND_NOT_BEFORE)
        s = fw.run_pre_bind_plugins(state, pod, result.suggested_host)
        if s is not None and s.is_rejected():
            s = single_node_fit(pod, result, s)
        if s is not None:
            self._binding_done(state, fw, result, qpi, s, start)
            return
        not_before = state.get(BIND_NOT_BEFORE)
        if not_before is not None and not_before > self.now():
            self._parked.append(ParkedBinding(fw, state, result, qpi, start, not_before))
            if self.bind_runner is None and len(store.pending) > buffered:
                # Simulated: hold PreBind's events back (live mode's arrive when they do).
                held = store.withhold(buffered)
                self.run_after_cycles(PREBIND_WRITE_CYCLES, lambda: store.redeliver(held))
            return
        if state.get(PRE_BIND_NEXT) is not None:
            # A wait that was already over: the plugins after the one that asked for it, now.
            self.pre_bind(state, fw, result, qpi, start)
            return
        self.queue.done(qpi.uid)  # type: ignore[union-attr]
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
        if enabled(log, 2):  # per pod: the arguments are built only when they are logged
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
        # (`self.extenders and`: no generator per pod when there are none, as usual.)
        if self.extenders and any(ext.is_binder() and ext.is_interested(pod) for ext in self.extenders):
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
        s = single_node_fit(pod, result, s)
    return s
