"""The scheduler cache (backend/cache/cache.go): nodes, the pods on them, assumed pods.

Pod state machine, as upstream draws it:

    +-------------------------------------------+  +----+
    |                            Add            |  |    |
    |                                           |  |    | Update
    +      Assume                Add            v  v    |
 Initial +--------> Assumed +------------+---> Added <--+
    ^                +   +               |       +
    |                |   |               |       |
    |         Forget |   |  Expire       |       | Remove
    |                v   v               |       v
    +-------------+  Initial             +---> Deleted

An assumed pod counts on its node as soon as the scheduling cycle picks it,
so that the next cycle sees it even before the binding is confirmed. With a
TTL of 0 (upstream's default) assumed pods never expire.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubesched.api.core import Node
from kubesched.cache.node_tree import NodeTree
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.types import ImageStateSummary, NodeInfo, PodInfo


class CacheError(RuntimeError):
    """An inconsistent cache operation (a bug in the caller, as upstream treats it)."""


@dataclass(slots=True)
class _PodState:
    info: PodInfo
    node: str
    deadline: float | None = None
    binding_finished: bool = False


class Cache:
    def __init__(self, ttl: float = 0.0) -> None:
        self.ttl = ttl
        self.nodes: dict[str, NodeInfo] = {}
        self.pod_states: dict[str, _PodState] = {}
        self.assumed: set[str] = set()
        self.image_states: dict[str, ImageStateSummary] = {}
        self.node_tree = NodeTree()
        self._dirty: dict[str, NodeInfo] = {}
        self._layout_changed = True
        self._node_objects_changed = False

    # ------------------------------------------------------------ pods

    def _node_info(self, name: str) -> NodeInfo:
        ni = self.nodes.get(name)
        if ni is None:
            ni = NodeInfo()
            ni.name = name
            self.nodes[name] = ni
        return ni

    def _add_to_node(self, pi: PodInfo, node: str) -> None:
        ni = self._node_info(node)
        ni.add_pod(pi)
        self._dirty[node] = ni

    def _remove_from_node(self, pi: PodInfo, node: str) -> None:
        ni = self.nodes.get(node)
        if ni is None or not ni.remove_pod(pi):
            raise CacheError(f"pod {pi.key} not found on node {node}")
        self._dirty[node] = ni
        if ni.node is None and not ni.pods:
            del self.nodes[node]

    def assume_pod(self, pi: PodInfo, node: str) -> None:
        if pi.uid in self.pod_states:
            raise CacheError(f"pod {pi.key} is in the cache, so can't be assumed")
        self._add_to_node(pi, node)
        self.pod_states[pi.uid] = _PodState(pi, node)
        self.assumed.add(pi.uid)

    def finish_binding(self, pi: PodInfo, now: float) -> None:
        st = self.pod_states.get(pi.uid)
        if st is not None and pi.uid in self.assumed:
            st.binding_finished = True
            st.deadline = now + self.ttl if self.ttl > 0 else None

    def forget_pod(self, pi: PodInfo) -> None:
        st = self.pod_states.get(pi.uid)
        if st is None or pi.uid not in self.assumed:
            raise CacheError(f"pod {pi.key} wasn't assumed so cannot be forgotten")
        self._remove_from_node(st.info, st.node)
        del self.pod_states[pi.uid]
        self.assumed.discard(pi.uid)

    def add_pod(self, pi: PodInfo) -> None:
        """An assigned pod seen by the informer: confirms an assumed pod, or adds it."""
        node = pi.node_name
        st = self.pod_states.get(pi.uid)
        if st is not None and pi.uid in self.assumed:
            # The binding is confirmed; the informer's version replaces the assumed one.
            ni = self.nodes.get(st.node) if st.node == node else None
            if ni is not None and ni.replace_pod(st.info, pi):
                self._dirty[node] = ni
            else:
                self._remove_from_node(st.info, st.node)
                self._add_to_node(pi, node)
            self.assumed.discard(pi.uid)
            # A fresh state (no deadline, binding not pending), in the assumed one's place.
            st.info, st.node, st.deadline, st.binding_finished = pi, node, None, False
            return
        if st is not None:
            raise CacheError(f"pod {pi.key} was already in added state")
        self._add_to_node(pi, node)
        self.pod_states[pi.uid] = _PodState(pi, node)

    def update_pod(self, old: PodInfo, new: PodInfo) -> None:
        st = self.pod_states.get(old.uid)
        if st is None or old.uid in self.assumed:
            raise CacheError(f"pod {old.key} is not added to scheduler cache, so cannot be updated")
        node = new.node_name
        # A status change (preemption's DisruptionTarget on every victim) counts alike: swapped in place, as the
        # binding's confirmation is (replace_pod leaves the pod lists as remove then add would).
        ni = self.nodes.get(node) if st.node == node else None
        if ni is not None and ni.node is not None and ni.replace_pod(st.info, new):
            self._dirty[node] = ni
        else:
            self._remove_from_node(st.info, st.node)
            self._add_to_node(new, node)
        self.pod_states[new.uid] = _PodState(new, node)

    def remove_pod(self, pi: PodInfo) -> None:
        st = self.pod_states.get(pi.uid)
        if st is None:
            raise CacheError(f"pod {pi.key} is not found in scheduler cache, so cannot be removed from it")
        self._remove_from_node(st.info, st.node)
        del self.pod_states[pi.uid]
        self.assumed.discard(pi.uid)

    def is_assumed(self, uid: str) -> bool:
        return uid in self.assumed

    def get_pod(self, uid: str) -> PodInfo | None:
        st = self.pod_states.get(uid)
        return st.info if st is not None else None

    def cleanup_expired_assumed_pods(self, now: float) -> list[PodInfo]:
        expired = []
        for uid in sorted(self.assumed):
            st = self.pod_states[uid]
            if st.binding_finished and st.deadline is not None and now > st.deadline:
                expired.append(st.info)
        for pi in expired:
            self.forget_pod(pi)
        return expired

    # ------------------------------------------------------------ nodes

    def add_node(self, node: Node) -> NodeInfo:
        name = node.metadata.name
        ni = self._node_info(name)
        if ni.node is not None:
            return self.update_node(ni.node, node)
        self._add_images(node, ni)
        ni.set_node(node)
        self.node_tree.add(name, node.metadata.labels)
        self._dirty[name] = ni
        self._layout_changed = True
        return ni

    def update_node(self, old: Node, new: Node) -> NodeInfo:
        name = new.metadata.name
        ni = self._node_info(name)
        if ni.node is None:
            return self.add_node(new)
        self._remove_images(ni.node, ni)
        self._add_images(new, ni)
        # A zone change moves the node in the tree, but UpdateSnapshot re-derives
        # its node list from the tree only when a node is added or removed.
        self.node_tree.update(name, ni.node.metadata.labels, new.metadata.labels)
        ni.set_node(new)
        self._dirty[name] = ni
        self._node_objects_changed = True
        return ni

    def remove_node(self, node: Node) -> None:
        name = node.metadata.name
        ni = self.nodes.get(name)
        if ni is None or ni.node is None:
            raise CacheError(f"node {name} is not found")
        self._remove_images(ni.node, ni)
        self.node_tree.remove(name, ni.node.metadata.labels)
        if ni.pods:
            # Keep the pods' accounting until they are deleted, as upstream does.
            ni.node = None
            ni.index = -1
        else:
            del self.nodes[name]
        self._layout_changed = True

    def _add_images(self, node: Node, ni: NodeInfo) -> None:
        summary: dict[str, ImageStateSummary] = {}
        for image in node.status.images:
            for name in image.names:
                st = self.image_states.get(name)
                if st is None:
                    st = ImageStateSummary(image.size_bytes)
                    self.image_states[name] = st
                st.nodes.add(node.metadata.name)
                summary.setdefault(name, st)
        ni.image_states = summary
        if node.status.images:
            self._node_objects_changed = True

    def _remove_images(self, node: Node, ni: NodeInfo) -> None:
        for image in node.status.images:
            for name in image.names:
                st = self.image_states.get(name)
                if st is not None:
                    st.nodes.discard(node.metadata.name)
                    if not st.nodes:
                        del self.image_states[name]
        ni.image_states = {}

    # ------------------------------------------------------------ snapshot

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring the snapshot up to date: rebuild when the node list changed, else refresh dirty rows."""
        if self._layout_changed:
            ordered = []
            for name in self.node_tree.list():
                ni = self.nodes.get(name)
                if ni is not None and ni.node is not None:
                    ordered.append(ni)
            for ni in self.nodes.values():
                if ni.node is None:
                    ni.index = -1
            snapshot.rebuild(ordered)
            self._layout_changed = False
            self._node_objects_changed = False
        elif self._dirty or self._node_objects_changed:
            snapshot.refresh(self._dirty.values(), self._node_objects_changed)
            self._node_objects_changed = False
        self._dirty.clear()

    def node_count(self) -> int:
        return self.node_tree.num_nodes
