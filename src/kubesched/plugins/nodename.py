"""NodeName (framework/plugins/nodename): a pod naming a node fits only that node."""

from __future__ import annotations

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, Resource
from kubesched.framework.interface import EnqueueExtensions, FilterVerdicts, VectorFilterPlugin
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.plugins import names

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName(VectorFilterPlugin, EnqueueExtensions):
    name = names.NODE_NAME
    depends_on_node_pods = False

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        want = pod.pod.spec.node_name
        if want and want != node_info.name:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)
        return None

    def filter_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> FilterVerdicts | None:
        want = pod.pod.spec.node_name
        if not want:
            return None
        failed = snapshot.node_names() != want
        return FilterVerdicts.uniform(np.asarray(failed, bool), Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]
