"""SchedulingGates (framework/plugins/schedulinggates): a pod with gates never enters activeQ."""

from __future__ import annotations

from typing import Any

from kubesched.api.core import Pod
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interface import EnqueueExtensions, PreEnqueuePlugin
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.plugins import names


class SchedulingGates(PreEnqueuePlugin, EnqueueExtensions):
    name = names.SCHEDULING_GATES

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        gates = pod.pod.spec.scheduling_gates
        if not gates:
            return None
        listed = " ".join(g.name for g in gates)
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"waiting for scheduling gates: [{listed}]")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED), self._gates_removed
            )
        ]

    @staticmethod
    def _gates_removed(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if new is not None and new.metadata.uid == pod.metadata.uid:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
