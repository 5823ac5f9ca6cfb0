"""The event handlers (pkg/scheduler/eventhandlers.go): watch events into the cache and the queue.

Assigned pods and nodes go to the cache, unscheduled pods of our profiles to
the queue; every change is also a cluster event that may move unschedulable
pods back to activeQ or backoffQ (their plugins' queueing hints decide).
A mixin of the Scheduler (scheduler.py), as upstream's handlers are methods of
its sched: they read the same cache, queue and profiles.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from kubesched.api.core import Node, Pod
from kubesched.cache.cache import Cache, CacheError
from kubesched.cluster.store import ADDED, DELETED, FINAL_STATE_UNKNOWN, MODIFIED
from kubesched.framework.events import (
    EVENT_ASSIGNED_POD_ADD,
    EVENT_ASSIGNED_POD_DELETE,
    ActionType,
    ClusterEvent,
    Resource,
    pod_scheduling_property_changes,
)
from kubesched.framework.runtime import Framework
from kubesched.framework.types import PodInfo
from kubesched.queue.scheduling_queue import SchedulingQueue

# The kinds whose changes only move pods in the queue (the plugins read them through listers).
_QUEUE_ONLY_KINDS = (
    ("PersistentVolume", Resource.PERSISTENT_VOLUME),
    ("PersistentVolumeClaim", Resource.PERSISTENT_VOLUME_CLAIM),
    ("StorageClass", Resource.STORAGE_CLASS),
    ("CSINode", Resource.CSI_NODE),
    ("CSIDriver", Resource.CSI_DRIVER),
    ("CSIStorageCapacity", Resource.CSI_STORAGE_CAPACITY),
    ("VolumeAttachment", Resource.VOLUME_ATTACHMENT),
    ("ResourceClaim", Resource.RESOURCE_CLAIM),
    ("ResourceSlice", Resource.RESOURCE_SLICE),
    ("DeviceClass", Resource.DEVICE_CLASS),
)


class EventHandlers:
    """addAllEventHandlers and the handlers it installs; the Scheduler sets the attributes below."""

    cluster: Any
    cache: Cache
    queue: SchedulingQueue | None
    profiles: dict[str, Framework]
    _infos: dict[str, PodInfo]

    def _subscribe(self) -> None:
        """addAllEventHandlers: the store calls these on every watch event it delivers (sync)."""
        store = self.cluster.store
        store.subscribe("Pod", self._on_pod)
        store.subscribe("Node", self._on_node)
        for kind, resource in _QUEUE_ONLY_KINDS:
            store.subscribe(kind, self._generic_handler(resource))

    # ------------------------------------------------------------ pods

    def _responsible(self, pod: Pod) -> bool:
        return pod.spec.scheduler_name in self.profiles

    def _on_pod(self, etype: str, old: Pod | None, new: Pod | None) -> None:
        q = self.queue
        assert q is not None
        if etype == ADDED:
            assert new is not None
            if _terminal(new):
                # Upstream's pod informer lists no Succeeded/Failed pod (status.phase field selector).
                return
            if new.spec.node_name:
                self._add_assigned(new)
            elif self._responsible(new):
                q.add(self._info(new))
        elif etype == MODIFIED:
            assert old is not None and new is not None
            if old.spec.node_name:
                if _terminal(new):
                    self._delete_assigned(old)
                    self._infos.pop(old.metadata.uid, None)
                    return
                self._update_assigned(old, new)
            elif new.spec.node_name:
                self._add_assigned(new)
                if self._responsible(old):
                    self._delete_unscheduled(old)
            elif self._responsible(old):
                self._update_unscheduled(old, new)
        elif etype == DELETED:
            assert old is not None
            if old.spec.node_name:
                self._delete_assigned(old)
            else:
                if new is FINAL_STATE_UNKNOWN and self.cache.get_pod(old.metadata.uid) is not None:
                    # A relist found it gone; the unbound state we last saw is stale: we bound it meanwhile
                    # (assumed, maybe confirmed by nobody). Upstream's cache handler takes such tombstones too.
                    self._delete_assigned(old)
                if self._responsible(old):
                    self._delete_unscheduled(old)
            self._infos.pop(old.metadata.uid, None)

    def _info(self, pod: Pod) -> PodInfo:
        """The PodInfo of this pod object, derived from the last one made for the pod when possible."""
        uid = pod.metadata.uid
        pi = self._infos.get(uid)
        if pi is not None:
            if pi.pod is pod:
                return pi
            pi = pi.derive(pod)
        else:
            pi = PodInfo(pod)
        self._infos[uid] = pi
        return pi

    def _add_assigned(self, pod: Pod) -> None:
        pi = self._info(pod)
        try:
            self.cache.add_pod(pi)
        except CacheError:
            return
        self.queue.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_ADD, None, pod)  # type: ignore[union-attr]

    def _update_assigned(self, old: Pod, new: Pod) -> None:
        try:
            self.cache.update_pod(self._info(old), self._info(new))
        except CacheError:
            return
        for ev in pod_scheduling_property_changes(new, old):
            self.queue.move_all_to_active_or_backoff(ev, old, new)  # type: ignore[union-attr]

    def _delete_assigned(self, old: Pod) -> None:
        with contextlib.suppress(CacheError):
            self.cache.remove_pod(self._info(old))
        self.queue.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_DELETE, old, None)  # type: ignore[union-attr]

    def _update_unscheduled(self, old: Pod, new: Pod) -> None:
        if old.metadata.resource_version == new.metadata.resource_version:
            return
        if self.cache.is_assumed(new.metadata.uid):
            return
        q = self.queue
        assert q is not None
        q.update(self._info(old), self._info(new))
        nnn = old.status.nominated_node_name
        if nnn and nnn != new.status.nominated_node_name:
            prio = old.spec.priority or 0
            q.move_all_to_active_or_backoff(
                EVENT_ASSIGNED_POD_DELETE, old, None, lambda qp: qp.pod_info.priority <= prio
            )

    def _delete_unscheduled(self, old: Pod) -> None:
        q = self.queue
        assert q is not None
        # The queue and the nominator read the uid only: the PodInfo last made for the pod does (often the bound
        # one, just made), rather than one more derived for this old object.
        pi = self._infos.get(old.metadata.uid)
        q.delete(pi if pi is not None else self._info(old))
        fw = self.profiles.get(old.spec.scheduler_name)
        rejected = False
        if fw is not None:
            wp = fw.waiting_pods.get(old.metadata.uid)
            if wp is not None:
                wp.reject("", "removed")
                rejected = True
        if rejected:
            q.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_DELETE, old, None)
        elif old.status.nominated_node_name:
            prio = old.spec.priority or 0
            q.move_all_to_active_or_backoff(
                EVENT_ASSIGNED_POD_DELETE, old, None, lambda qp: qp.pod_info.priority <= prio
            )

    # ------------------------------------------------------------ nodes and the rest

    def _on_node(self, etype: str, old: Node | None, new: Node | None) -> None:
        q = self.queue
        assert q is not None
        if etype == ADDED:
            assert new is not None
            self.cache.add_node(new)
            q.move_all_to_active_or_backoff(ClusterEvent(Resource.NODE, ActionType.ADD), None, new)
        elif etype == MODIFIED:
            assert old is not None and new is not None
            self.cache.update_node(old, new)
            for ev in node_scheduling_property_changes(new, old):
                q.move_all_to_active_or_backoff(ev, old, new)
        elif etype == DELETED:
            assert old is not None
            q.move_all_to_active_or_backoff(ClusterEvent(Resource.NODE, ActionType.DELETE), old, None)
            with contextlib.suppress(CacheError):
                self.cache.remove_node(old)

    def _generic_handler(self, resource: str) -> Callable[[str, Any, Any], None]:
        actions = {ADDED: ActionType.ADD, MODIFIED: ActionType.UPDATE, DELETED: ActionType.DELETE}

        def handle(etype: str, old: Any, new: Any) -> None:
            if etype == DELETED:
                new = None  # not FINAL_STATE_UNKNOWN: hints see a deletion as a deletion
            self.queue.move_all_to_active_or_backoff(ClusterEvent(resource, actions[etype]), old, new)  # type: ignore[union-attr]

        return handle


def _terminal(pod: Pod) -> bool:
    return pod.status.phase in ("Succeeded", "Failed")


def node_scheduling_property_changes(new: Node, old: Node) -> list[ClusterEvent]:
    """framework.NodeSchedulingPropertiesChange: the specific updates a node saw."""
    events: list[ClusterEvent] = []
    if new.spec.unschedulable != old.spec.unschedulable:
        events.append(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_TAINT))
    if new.status.allocatable != old.status.allocatable:
        events.append(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE))
    if new.metadata.labels != old.metadata.labels:
        events.append(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL))
    if new.spec.taints != old.spec.taints:
        events.append(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_TAINT))
    if new.status.conditions != old.status.conditions:
        events.append(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_CONDITION))
    if new.metadata.annotations != old.metadata.annotations:
        events.append(ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_ANNOTATION))
    return events
