"""The nominator (backend/queue/nominator.go): which pods are nominated to which node.

A pod that preempted others is nominated to the node it freed; until it binds,
filters on that node run with it counted (see Framework.run_filter_plugins_with_nominated_pods).
"""

from __future__ import annotations

from collections.abc import Callable

from kubesched.framework.pod_sums import ExtraSums, NominationColumns
from kubesched.framework.types import NodeInfo, PodInfo

MODE_NOOP = 0
MODE_OVERRIDE = 1


class NominatingInfo:
    __slots__ = ("mode", "nominated_node_name")

    def __init__(self, nominated_node_name: str = "", mode: int = MODE_NOOP) -> None:
        self.nominated_node_name = nominated_node_name
        self.mode = mode


CLEAR_NOMINATED_NODE = NominatingInfo("", MODE_OVERRIDE)


class Nominator:
    def __init__(self, is_pod_unbound: Callable[[PodInfo], bool] | None = None) -> None:
        # node name -> uids in nomination order; uid -> node; uid -> latest PodInfo
        self.nominated_pods: dict[str, list[str]] = {}
        self.pod_to_node: dict[str, str] = {}
        self.pods: dict[str, PodInfo] = {}
        self._is_pod_unbound = is_pod_unbound
        self._columns: NominationColumns | None = None

    def add(self, pi: PodInfo, info: NominatingInfo | None) -> None:
        self.delete(pi)
        if info is not None and info.mode == MODE_OVERRIDE:
            node = info.nominated_node_name
        else:
            node = pi.pod.status.nominated_node_name
            if not node:
                return
        if not node:
            return
        if self._is_pod_unbound is not None and not self._is_pod_unbound(pi):
            # Removed or already bound: nothing to nominate.
            return
        self.pod_to_node[pi.uid] = node
        self.pods[pi.uid] = pi
        uids = self.nominated_pods.setdefault(node, [])
        if pi.uid not in uids:
            uids.append(pi.uid)
        if self._columns is not None:
            self._columns.add(node, pi, 1)

    def delete(self, pi: PodInfo) -> None:
        if not self.pod_to_node and not self.pods:
            return  # no pod nominated anywhere (the usual case): every queue add and delete comes here
        node = self.pod_to_node.pop(pi.uid, None)
        stored = self.pods.pop(pi.uid, None)
        if node is None:
            return
        if self._columns is not None and stored is not None:
            self._columns.add(node, stored, -1)
        uids = self.nominated_pods.get(node)
        if uids is not None:
            if pi.uid in uids:
                uids.remove(pi.uid)
            if not uids:
                del self.nominated_pods[node]

    def update(self, old: PodInfo, new: PodInfo) -> None:
        """UpdateNominatedPod: keep a nomination made in memory if the update did not carry one."""
        info: NominatingInfo | None = None
        node = self.pod_to_node.get(old.uid)
        if node and not old.pod.status.nominated_node_name and not new.pod.status.nominated_node_name:
            info = NominatingInfo(node, MODE_OVERRIDE)
        self.delete(old)
        self.add(new, info)

    def nominated_node(self, uid: str) -> str:
        return self.pod_to_node.get(uid, "")

    def nominated_pods_for_node(self, node: str) -> list[PodInfo]:
        return [self.pods[u] for u in self.nominated_pods.get(node, ())]

    def has_nominations(self) -> bool:
        return bool(self.nominated_pods)

    def sums_at_least(self, nodes: list[NodeInfo], pod: PodInfo) -> ExtraSums | None:
        """Per node of `nodes` (a snapshot's node list), the nominated pods `pod` must yield to, summed.

        Those are the pods of equal or higher priority, `pod` itself excluded; None when there are none.
        """
        if not self.nominated_pods:
            return None
        cols = self._columns
        if cols is None or cols.nodes is not nodes:
            cols = self._columns = NominationColumns(nodes)
            for uid, node in self.pod_to_node.items():
                cols.add(node, self.pods[uid], 1)
        own_node = self.pod_to_node.get(pod.uid)
        own = (own_node, self.pods[pod.uid]) if own_node is not None else None
        return cols.at_least(pod.priority, own)
