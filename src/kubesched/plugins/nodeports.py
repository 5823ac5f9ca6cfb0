"""NodePorts (framework/plugins/nodeports): a host port may be used once per node (per ip and protocol)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kubesched.api.core import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterVerdicts,
    PreFilterPlugin,
    PreFilterResult,
    VectorFilterPlugin,
)
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import HostPortInfo, NodeInfo, PodInfo, pod_host_ports
from kubesched.plugins import names

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
_PRE_FILTER_KEY = "PreFilter" + names.NODE_PORTS


class _PreFilterState(tuple[tuple[str, str, int], ...]):
    def clone(self) -> _PreFilterState:
        return self


def _fits(ports: Sequence[tuple[str, str, int]], node_info: NodeInfo) -> bool:
    used = node_info.used_ports
    return not any(used.check_conflict(ip, proto, port) for ip, proto, port in ports)


class NodePorts(PreFilterPlugin, VectorFilterPlugin, EnqueueExtensions):
    name = names.NODE_PORTS

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.host_ports:
            return None, SKIP
        state.write(_PRE_FILTER_KEY, _PreFilterState(pod.host_ports))
        return None, None

    def _ports(self, state: CycleState, pod: PodInfo) -> Sequence[tuple[str, str, int]]:
        s = state.get(_PRE_FILTER_KEY)
        return s if s is not None else pod.host_ports

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        if _fits(self._ports(state, pod), node_info):
            return None
        return Status(Code.UNSCHEDULABLE, ERR_REASON)

    def filter_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> FilterVerdicts | None:
        ports = self._ports(state, pod)
        if not ports:
            return None
        failed = np.zeros(snapshot.num_nodes, bool)
        nodes = snapshot.nodes
        for i in np.flatnonzero(snapshot.columns.has_ports):
            if not _fits(ports, nodes[int(i)]):
                failed[i] = True
        if not failed.any():
            return None
        return FilterVerdicts.uniform(failed, Status(Code.UNSCHEDULABLE, ERR_REASON))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE), _pod_deleted),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
        ]


def _pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the deleted pod held a host port that conflicts with one this pod wants."""
    if old is None or (not old.spec.node_name and not old.status.nominated_node_name):
        return QueueingHint.QUEUE_SKIP
    ports = pod_host_ports(old)
    if not ports:
        return QueueingHint.QUEUE_SKIP
    in_use = HostPortInfo()
    for ip, proto, port in ports:
        in_use.add(ip, proto, port)
    if any(in_use.check_conflict(ip, proto, port) for ip, proto, port in pod_host_ports(pod)):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
