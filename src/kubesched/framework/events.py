"""Cluster events and queueing hints (k8s.io/kube-scheduler/framework, events).

A plugin says which events may make a pod it rejected schedulable
(`events_to_register`), each with an optional hint function that looks at
the changed object and answers QUEUE or QUEUE_SKIP.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from kubesched.api.core import Pod


class ActionType(int):
    """What happened to an object: bits, combined with `|` (ALL and UPDATE are combinations).

    An int with named constants rather than an IntFlag: IntFlag's `&` and `|` run in
    Python, and every cluster event is matched against every waiting pod's registered
    events with `&` (a C-level int operation here); CPython 3.11 also reads enum members
    through EnumType.__getattr__.
    """

    __slots__ = ()

    ADD: ClassVar[ActionType]
    DELETE: ClassVar[ActionType]
    UPDATE_NODE_ALLOCATABLE: ClassVar[ActionType]
    UPDATE_NODE_LABEL: ClassVar[ActionType]
    UPDATE_NODE_TAINT: ClassVar[ActionType]
    UPDATE_NODE_CONDITION: ClassVar[ActionType]
    UPDATE_NODE_ANNOTATION: ClassVar[ActionType]
    UPDATE_POD_LABEL: ClassVar[ActionType]
    UPDATE_POD_SCALE_DOWN: ClassVar[ActionType]
    UPDATE_POD_TOLERATION: ClassVar[ActionType]
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED: ClassVar[ActionType]
    UPDATE_POD_GENERATED_RESOURCE_CLAIM: ClassVar[ActionType]
    UPDATE_POD_OTHER: ClassVar[ActionType]
    ALL: ClassVar[ActionType]
    UPDATE: ClassVar[ActionType]

    def __or__(self, other: int) -> ActionType:
        return ActionType(int(self) | int(other))

    __ror__ = __or__

    def __repr__(self) -> str:
        return f"ActionType({_ACTION_LABELS.get(self, int(self))})"


ActionType.ADD = ActionType(1 << 0)
ActionType.DELETE = ActionType(1 << 1)
ActionType.UPDATE_NODE_ALLOCATABLE = ActionType(1 << 2)
ActionType.UPDATE_NODE_LABEL = ActionType(1 << 3)
ActionType.UPDATE_NODE_TAINT = ActionType(1 << 4)
ActionType.UPDATE_NODE_CONDITION = ActionType(1 << 5)
ActionType.UPDATE_NODE_ANNOTATION = ActionType(1 << 6)
ActionType.UPDATE_POD_LABEL = ActionType(1 << 7)
ActionType.UPDATE_POD_SCALE_DOWN = ActionType(1 << 8)
ActionType.UPDATE_POD_TOLERATION = ActionType(1 << 9)
ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED = ActionType(1 << 10)
ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM = ActionType(1 << 11)
ActionType.UPDATE_POD_OTHER = ActionType(1 << 12)
ActionType.ALL = ActionType((1 << 13) - 1)
ActionType.UPDATE = (
    ActionType.UPDATE_NODE_ALLOCATABLE
    | ActionType.UPDATE_NODE_LABEL
    | ActionType.UPDATE_NODE_TAINT
    | ActionType.UPDATE_NODE_CONDITION
    | ActionType.UPDATE_NODE_ANNOTATION
    | ActionType.UPDATE_POD_LABEL
    | ActionType.UPDATE_POD_SCALE_DOWN
    | ActionType.UPDATE_POD_TOLERATION
    | ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    | ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM
    | ActionType.UPDATE_POD_OTHER
)


_ACTION_LABELS = {
    ActionType.ADD: "Add",
    ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_TOLERATION: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.UPDATE_POD_OTHER: "UpdatePodOther",
    ActionType.ALL: "All",
    ActionType.UPDATE: "Update",
}


class Resource:
    """Event resources. ASSIGNED_POD and UNSCHEDULED_POD are internal refinements of POD."""

    POD = "Pod"
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULED_POD = "UnschedulablePod"
    NODE = "Node"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    CSI_NODE = "storage.k8s.io/CSINode"
    CSI_DRIVER = "storage.k8s.io/CSIDriver"
    CSI_STORAGE_CAPACITY = "storage.k8s.io/CSIStorageCapacity"
    STORAGE_CLASS = "storage.k8s.io/StorageClass"
    VOLUME_ATTACHMENT = "storage.k8s.io/VolumeAttachment"
    RESOURCE_CLAIM = "resource.k8s.io/ResourceClaim"
    RESOURCE_SLICE = "resource.k8s.io/ResourceSlice"
    DEVICE_CLASS = "resource.k8s.io/DeviceClass"
    WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: str
    action: ActionType
    custom_label: str = ""

    @property
    def label(self) -> str:
        if self.custom_label:
            return self.custom_label
        return f"{self.resource}{_ACTION_LABELS.get(self.action, str(int(self.action)))}"

    def is_wildcard(self) -> bool:
        return self.resource == Resource.WILDCARD and self.action == ActionType.ALL


def _match_resource(registered: str, incoming: str) -> bool:
    return (
        registered == Resource.WILDCARD
        or registered == incoming
        or (registered == Resource.POD and incoming in (Resource.ASSIGNED_POD, Resource.UNSCHEDULED_POD))
    )


def match_cluster_events(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """True when `incoming` is the same event as `registered`, or a more specific one."""
    return registered.is_wildcard() or (
        _match_resource(registered.resource, incoming.resource)
        and bool(registered.action & incoming.action)
        and incoming.action <= registered.action
    )


def match_any_cluster_event(event: ClusterEvent, registered: list[ClusterEvent]) -> bool:
    return any(match_cluster_events(r, event) for r in registered)


class QueueingHint(int):
    """A hint function's answer: QUEUE_SKIP or QUEUE (an int with named constants, as Code)."""

    __slots__ = ()

    QUEUE_SKIP: ClassVar[QueueingHint]
    QUEUE: ClassVar[QueueingHint]

    def __repr__(self) -> str:
        return "QueueingHint.QUEUE" if self else "QueueingHint.QUEUE_SKIP"


QueueingHint.QUEUE_SKIP = QueueingHint(0)
QueueingHint.QUEUE = QueueingHint(1)


# A hint function: (pod waiting to be scheduled, old object, new object) -> hint.
QueueingHintFn = Callable[["Pod", Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None


# Events the scheduler itself emits (pkg/scheduler/framework/events.go).
WILDCARD_EVENT = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "WildCard")
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "UnschedulableTimeout")
EVENT_FORCE_ACTIVATE = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "ForceActivate")
EVENT_ASSIGNED_POD_ADD = ClusterEvent(Resource.ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
EVENT_ASSIGNED_POD_UPDATE = ClusterEvent(Resource.ASSIGNED_POD, ActionType.UPDATE, "AssignedPodUpdate")
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.ADD, "UnschedulablePodAdd")
EVENT_UNSCHEDULED_POD_UPDATE = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.UPDATE, "UnschedulablePodUpdate")
EVENT_UNSCHEDULED_POD_DELETE = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.DELETE, "UnschedulablePodDelete")
EVENT_NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD)
EVENT_NODE_DELETE = ClusterEvent(Resource.NODE, ActionType.DELETE)

# Queue-internal labels (metrics only).
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
FORCE_ACTIVATE = "ForceActivate"


def unroll_wildcard_resource() -> list[ClusterEventWithHint]:
    """What a plugin without EnqueueExtensions is registered for: every change of everything."""
    return [
        ClusterEventWithHint(ClusterEvent(r, ActionType.ALL))
        for r in (
            Resource.POD,
            Resource.NODE,
            Resource.PERSISTENT_VOLUME,
            Resource.PERSISTENT_VOLUME_CLAIM,
            Resource.CSI_NODE,
            Resource.CSI_DRIVER,
            Resource.CSI_STORAGE_CAPACITY,
            Resource.STORAGE_CLASS,
            Resource.RESOURCE_CLAIM,
            Resource.DEVICE_CLASS,
        )
    ]


def pod_scheduling_property_changes(new: Pod, old: Pod) -> list[ClusterEvent]:
    """framework.PodSchedulingPropertiesChange: which specific updates an unscheduled pod saw."""
    r = Resource.ASSIGNED_POD if new.spec.node_name else Resource.UNSCHEDULED_POD
    events: list[ClusterEvent] = []
    if new.metadata.labels != old.metadata.labels:
        events.append(ClusterEvent(r, ActionType.UPDATE_POD_LABEL))
    if _requests_decreased(new, old):
        events.append(ClusterEvent(r, ActionType.UPDATE_POD_SCALE_DOWN))
    if old.spec.scheduling_gates and not new.spec.scheduling_gates:
        events.append(ClusterEvent(r, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED))
    if new.spec.tolerations != old.spec.tolerations:
        events.append(ClusterEvent(r, ActionType.UPDATE_POD_TOLERATION))
    if new.status.resource_claim_statuses != old.status.resource_claim_statuses:
        events.append(ClusterEvent(r, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM))
    if not events:
        events.append(ClusterEvent(r, ActionType.UPDATE_POD_OTHER))
    return events


def _requests_decreased(new: Pod, old: Pod) -> bool:
    """extractPodScaleDown: a request removed, or its MilliValue() lower than before (Go's int64s)."""
    a, b = old.spec, new.spec
    if (
        a.containers is b.containers
        and a.init_containers is b.init_containers
        and a.overhead is b.overhead
        and a.resources is b.resources
    ):
        # The very lists the requests are summed from (a status update): nothing to parse, nothing decreased.
        return False
    from kubesched.api.resources import pod_requests

    before, after = pod_requests(old), pod_requests(new)
    for name, q in before.items():
        now = after.get(name)
        if now is None or q.milli_value() > now.milli_value():
            return True
    return False
