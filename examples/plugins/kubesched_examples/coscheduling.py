"""Coscheduling: gang scheduling by PodGroup, as kubernetes-sigs/scheduler-plugins' pkg/coscheduling does it.

Pods join a group with the label `scheduling.x-k8s.io/pod-group: <name>`; the
PodGroup object of that name (kubesched_examples.podgroup) says how many of
them must be placed together (`spec.minMember`). The plugin:

- QueueSort: higher priority first, then the older group (a pod without a
  group by its own age), then the pod's namespace/name, so that a group's
  pods leave the queue back to back;
- PreEnqueue and PreFilter: a pod whose group has fewer than minMember pods
  waits ("cannot find enough sibling pods"); PreFilter also refuses a group
  that failed within `podGroupBackoffSeconds` and, when the group sets
  `minResources`, a cluster without that much free capacity;
- Permit: a pod waits until minMember pods of its group are assumed or bound,
  then the whole group is allowed at once; the first pod to wait activates its
  siblings; the wait lasts the group's `scheduleTimeoutSeconds`, else
  `permitWaitingTimeSeconds`;
- Unreserve: when one pod of the group times out (or fails later), every pod of
  the group still waiting is rejected: all or nothing;
- PostFilter: when a pod of the group cannot be placed, the group's waiting
  pods are rejected at once instead of waiting for the timeout (unless the
  group is already complete, or less than 10% short of minMember).

Messages are scheduler-plugins' own. PreEnqueue is this example's addition:
with it, a pod of an incomplete group does not even enter the active queue.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any

import msgspec

from kubesched.plugin_api import (
    EPOCH,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EnqueueExtensions,
    EventResource,
    Handle,
    PermitPlugin,
    PodInfo,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    QueuedPodInfo,
    QueueSortPlugin,
    ReservePlugin,
    Status,
    format_quantity,
    parse_resource_list,
    to_amounts,
)
from kubesched_examples.podgroup import POD_GROUP_LABEL, PodGroup

NAME = "Coscheduling"
# util.DefaultWaitTime: the Permit wait when neither the group nor the args give one.
DEFAULT_WAIT_SECONDS = 60.0
# PostFilter leaves a group alone when it is at most this fraction short of minMember.
SMALL_GAP = 0.1


class CoschedulingArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """pluginConfig args (scheduler-plugins' CoschedulingArgs, same field names and defaults)."""

    permit_waiting_time_seconds: Annotated[int, msgspec.Meta(ge=0)] = 60
    pod_group_backoff_seconds: Annotated[int, msgspec.Meta(ge=0)] = 0


class Coscheduling(
    QueueSortPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PostFilterPlugin,
    PermitPlugin,
    ReservePlugin,
    EnqueueExtensions,
):
    name = NAME
    args_type = CoschedulingArgs

    def __init__(self, args: CoschedulingArgs, handle: Handle) -> None:
        self.handle = handle
        self.schedule_timeout = float(args.permit_waiting_time_seconds)
        self.backoff = float(args.pod_group_backoff_seconds)
        # Group -> time until which it passed the minResources check (permittedPG) / is refused (backedOffPG).
        self._permitted: dict[str, float] = {}
        self._backed_off: dict[str, float] = {}

    @classmethod
    def new(cls, args: Any, handle: Any) -> Coscheduling:
        return cls(args, handle)

    # ------------------------------------------------------------ groups

    def pod_group(self, pod: PodInfo) -> tuple[str, PodGroup | None]:
        """("namespace/name" of the pod's group or "", the PodGroup object or None)."""
        name = pod.labels.get(POD_GROUP_LABEL, "")
        if not name:
            return "", None
        full = f"{pod.namespace}/{name}"
        pg = self.handle.lister("PodGroup").get(full)
        return full, pg if isinstance(pg, PodGroup) else None

    def _members(self, namespace: str, group: str) -> list[Any]:
        """The group's pods the scheduler knows (bound or not), finished ones left out as its informer does."""
        return [
            p
            for p in self.handle.lister("Pod").list()
            if p.metadata.namespace == namespace
            and p.metadata.labels.get(POD_GROUP_LABEL) == group
            and p.status.phase not in ("Succeeded", "Failed")
        ]

    def assigned(self, namespace: str, group: str, other_than: str = "") -> int:
        """Pods of the group assumed or bound to a node (CalculateAssignedPods), the pod `other_than` left out.

        Upstream's snapshot does not hold the pod of the current cycle yet; here NodeInfos
        are live, so Permit leaves the pod it is asked about out by uid.
        """
        return sum(
            1
            for ni in self.handle.snapshot().nodes
            for p in ni.pods
            if p.namespace == namespace and p.labels.get(POD_GROUP_LABEL) == group and p.uid != other_than
        )

    def _wait_time(self, pg: PodGroup) -> float:
        """util.GetWaitTimeDuration: the group's own timeout, else the args', else 60 s."""
        if pg.spec.schedule_timeout_seconds is not None:
            return float(pg.spec.schedule_timeout_seconds)
        return self.schedule_timeout or DEFAULT_WAIT_SECONDS

    def _waiting_in_group(self, namespace: str, group: str) -> list[Any]:
        return [
            wp
            for wp in self.handle.waiting_pods()
            if wp.pod.namespace == namespace and wp.pod.labels.get(POD_GROUP_LABEL) == group
        ]

    # ------------------------------------------------------------ QueueSort

    def _created(self, q: QueuedPodInfo) -> datetime:
        _, pg = self.pod_group(q.pod_info)
        if pg is not None and pg.metadata.creation_timestamp is not None:
            return pg.metadata.creation_timestamp
        # A pod without a group by its own age (upstream: the queue's first attempt, the same instant).
        created = q.pod.metadata.creation_timestamp
        if created is not None:
            return created
        return EPOCH + timedelta(seconds=q.initial_attempt_timestamp or q.timestamp)

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = a.pod_info.priority, b.pod_info.priority
        if pa != pb:
            return pa > pb
        ta, tb = self._created(a), self._created(b)
        if ta == tb:
            return a.pod_info.key < b.pod_info.key
        return ta < tb

    def sort_key(self, qpi: QueuedPodInfo) -> tuple[Any, ...]:
        return (-qpi.pod_info.priority, self._created(qpi), qpi.pod_info.key)

    # ------------------------------------------------------------ PreEnqueue / PreFilter

    def _enough_siblings(self, pod: PodInfo, pg: PodGroup, stage: str) -> Status | None:
        n = len(self._members(pod.namespace, pg.metadata.name))
        if n < pg.spec.min_member:
            return Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f"{stage} pod {pod.name} cannot find enough sibling pods, "
                f"current pods number: {n}, minMember of group: {pg.spec.min_member}",
            )
        return None

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        _, pg = self.pod_group(pod)
        if pg is None:
            return None
        return self._enough_siblings(pod, pg, "pre-enqueue")

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Any) -> tuple[PreFilterResult | None, Status | None]:
        # UnschedulableAndUnresolvable throughout: preemption cannot make a group whole.
        full, pg = self.pod_group(pod)
        if pg is None:
            return None, None
        now = self.handle.now()
        if self._backed_off.get(full, -1.0) > now:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"podGroup {full} failed recently")
        s = self._enough_siblings(pod, pg, "pre-filter")
        if s is not None:
            return None, s
        if pg.spec.min_resources is None or self._permitted.get(full, -1.0) > now:
            return None, None
        gap = self._resource_gap(pg, full, nodes)
        if gap:
            listed = " ".join(f"{k}:{format_quantity(v, k)}" for k, v in sorted(gap.items()))
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"resource gap: map[{listed}]")
        self._permitted[full] = now + self.schedule_timeout
        return None, None

    def _resource_gap(self, pg: PodGroup, full: str, nodes: Any) -> dict[str, int]:
        """CheckClusterResource: what minResources (and minMember pod slots) the free capacity lacks.

        A node's free capacity counts the group's own pods on it as free.
        """
        need = to_amounts(parse_resource_list(pg.spec.min_resources or {}))
        need["pods"] = pg.spec.min_member
        namespace, _, group = full.partition("/")
        for ni in nodes:
            if ni.node is None:
                continue
            own = [p for p in ni.pods if p.namespace == namespace and p.labels.get(POD_GROUP_LABEL) == group]
            for name in list(need):
                if name == "pods":
                    free = ni.allocatable.allowed_pod_number - (len(ni.pods) - len(own))
                else:
                    used = ni.requested.get(name) - sum(p.requests.get(name) for p in own)
                    free = ni.allocatable.get(name) - used
                need[name] -= free
                if need[name] <= 0:
                    del need[name]
            if not need:
                return {}
        return need

    # ------------------------------------------------------------ PostFilter

    def post_filter(
        self, state: CycleState, pod: PodInfo, node_to_status: Any
    ) -> tuple[PostFilterResult | None, Status | None]:
        full, pg = self.pod_group(pod)
        if pg is None:
            return None, Status(Code.UNSCHEDULABLE, "can not find pod group")
        namespace, group, minimum = pod.namespace, pg.metadata.name, pg.spec.min_member
        assigned = self.assigned(namespace, group)
        # Enough pods are placed already: no reason to give the group up.
        if assigned >= minimum:
            return None, Status(Code.UNSCHEDULABLE)
        # A small gap: later pods may still complete the group.
        if minimum and (minimum - assigned) / minimum <= SMALL_GAP:
            return None, Status(Code.UNSCHEDULABLE)
        # One pod that cannot be placed makes the others unlikely: release the waiting ones now.
        for wp in self._waiting_in_group(namespace, group):
            wp.reject(self.name, "optimistic rejection in PostFilter")
        if self.backoff > 0 and len(self._members(namespace, group)) >= minimum:
            self._backed_off[full] = self.handle.now() + self.backoff
        self._permitted.pop(full, None)
        return None, Status(
            Code.UNSCHEDULABLE,
            f"PodGroup {full} gets rejected due to Pod {pod.name} is unschedulable even after PostFilter",
        )

    # ------------------------------------------------------------ Permit / Reserve

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        full, pg = self.pod_group(pod)
        if not full:
            return None, 0.0
        if pg is None:
            return Status(Code.UNSCHEDULABLE, "PodGroup not found"), 0.0
        namespace, group = pod.namespace, pg.metadata.name
        # The others already placed, and this one.
        assigned = self.assigned(namespace, group, other_than=pod.uid)
        if assigned + 1 >= pg.spec.min_member:
            for wp in self._waiting_in_group(namespace, group):
                wp.allow(self.name)
            return None, 0.0
        if assigned == 0:
            # The group's first pod to wait brings its siblings forward in the queue.
            siblings = [p for p in self._members(namespace, group) if p.metadata.uid != pod.uid]
            self.handle.activate([PodInfo(p) for p in siblings])
        return Status(Code.WAIT), self._wait_time(pg)

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        full, pg = self.pod_group(pod)
        if pg is None:
            return
        # One pod of the group gave up (timeout, rejection, failed bind): all the others give up too.
        for wp in self._waiting_in_group(pod.namespace, pg.metadata.name):
            wp.reject(self.name, "rejection in Unreserve")
        self._permitted.pop(full, None)

    # ------------------------------------------------------------ queueing

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A pod of the group added (or bound) may complete it.
        return [ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.ADD))]
