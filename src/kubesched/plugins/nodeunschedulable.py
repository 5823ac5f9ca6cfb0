"""NodeUnschedulable (framework/plugins/nodeunschedulable): cordoned nodes, unless tolerated."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api.core import Node, Pod, Taint
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interface import EnqueueExtensions, FilterVerdicts, VectorFilterPlugin
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.plugins import names

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_UNSCHEDULABLE_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect="NoSchedule")


def _tolerates_unschedulable(pod: Pod) -> bool:
    return any(t.tolerates(_UNSCHEDULABLE_TAINT) for t in pod.spec.tolerations)


class NodeUnschedulable(VectorFilterPlugin, EnqueueExtensions):
    name = names.NODE_UNSCHEDULABLE
    depends_on_node_pods = False

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None or not node.spec.unschedulable or _tolerates_unschedulable(pod.pod):
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSCHEDULABLE)

    def filter_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> FilterVerdicts | None:
        cordoned, any_cordoned = snapshot.node_cache("unschedulable", lambda: _cordoned(snapshot))
        if not any_cordoned or _tolerates_unschedulable(pod.pod):
            return None
        return FilterVerdicts.uniform(cordoned, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSCHEDULABLE))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), _node_change
            ),
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.UPDATE_POD_TOLERATION), _pod_toleration_change),
        ]


def _cordoned(snapshot: Snapshot) -> tuple[np.ndarray, bool]:
    """Which nodes are cordoned, and whether any is."""
    cordoned = np.array([bool(ni.node and ni.node.spec.unschedulable) for ni in snapshot.nodes], bool)
    return cordoned, bool(cordoned.any())


def _node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when a node becomes schedulable, or a schedulable node is added."""
    new_node: Node = new
    if new_node.spec.unschedulable:
        return QueueingHint.QUEUE_SKIP
    if old is None or old.spec.unschedulable:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _pod_toleration_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if new is None or new.metadata.uid != pod.metadata.uid:
        return QueueingHint.QUEUE_SKIP
    if old is not None and not _tolerates_unschedulable(old) and _tolerates_unschedulable(new):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
