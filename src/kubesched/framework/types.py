"""PodInfo, NodeInfo, QueuedPodInfo (pkg/scheduler/framework/types.go).

A PodInfo is computed once per pod object: its requests as the scheduler
counts them, its host ports and its parsed affinity terms. A NodeInfo keeps
the node's pods and pre-summed integer resources, and a generation bumped on
every change so that snapshots and columns refresh only what changed.
types.go's Resource is in resource.py, its HostPortInfo in host_ports.py.
"""

from __future__ import annotations

import itertools
from datetime import datetime
from typing import TYPE_CHECKING, Any

from kubesched.api.int64 import wrap
from kubesched.framework.host_ports import HostPortInfo, pod_host_ports
from kubesched.framework.resource import Resource, allocatable_amounts, pod_resources

__all__ = [
    "HostPortInfo",
    "ImageStateSummary",
    "NodeInfo",
    "PodInfo",
    "QueuedPodInfo",
    "Resource",
    "next_generation",
    "pod_host_ports",
]

if TYPE_CHECKING:
    from kubesched.api.core import Node, Pod

_generation = itertools.count(1)


def next_generation() -> int:
    """A number larger than any handed out before: a NodeInfo's generation after a change."""
    return next(_generation)


class PodInfo:
    """A pod as the scheduler sees it, computed once per pod object."""

    __slots__ = (
        "__weakref__",
        "_affinity",
        "cache",
        "has_affinity",
        "has_required_anti_affinity",
        "host_ports",
        "key",
        "labels",
        "name",
        "namespace",
        "non0_cpu",
        "non0_mem",
        "pod",
        "priority",
        "requests",
        "uid",
    )

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        meta = pod.metadata
        self.uid = meta.uid
        self.name = meta.name
        self.namespace = meta.namespace
        self.key = f"{meta.namespace}/{meta.name}"
        self.labels = meta.labels
        self.priority = pod.spec.priority or 0
        # Shared between pods with the same resource spec: read-only.
        self.requests, self.non0_cpu, self.non0_mem = pod_resources(pod)
        self.host_ports = pod_host_ports(pod)
        aff = pod.spec.affinity
        self.has_affinity = aff is not None and (aff.pod_affinity is not None or aff.pod_anti_affinity is not None)
        self.has_required_anti_affinity = (
            aff is not None
            and aff.pod_anti_affinity is not None
            and bool(aff.pod_anti_affinity.required_during_scheduling_ignored_during_execution)
        )
        self._affinity: Any = None
        # Per-pod values plugins derive once (compiled selectors...), keyed by plugin name.
        self.cache: dict[str, Any] = {}

    def derive(self, pod: Pod) -> PodInfo:
        """The PodInfo of a newer (or older) object of the same pod.

        Bindings and status updates replace the pod object but keep its spec's
        parts: when those the derived fields come from are the same objects,
        they are reused instead of recomputed.
        """
        a, b = self.pod, pod
        sa, sb = a.spec, b.spec
        if not (
            a.metadata.uid == b.metadata.uid
            and a.metadata.labels is b.metadata.labels
            and sa.containers is sb.containers
            and sa.init_containers is sb.init_containers
            and sa.overhead is sb.overhead
            and sa.resources is sb.resources
            and sa.affinity is sb.affinity
            and sa.priority == sb.priority
        ):
            return PodInfo(pod)
        c = PodInfo.__new__(PodInfo)
        c.pod = pod
        c.uid, c.name, c.namespace, c.key, c.labels = self.uid, self.name, self.namespace, self.key, self.labels
        c.priority, c.requests, c.non0_cpu, c.non0_mem = self.priority, self.requests, self.non0_cpu, self.non0_mem
        c.host_ports = self.host_ports
        c.has_affinity, c.has_required_anti_affinity = self.has_affinity, self.has_required_anti_affinity
        c._affinity = self._affinity
        c.cache = {}
        return c

    @property
    def node_name(self) -> str:
        return self.pod.spec.node_name

    @property
    def start_time(self) -> datetime | None:
        return self.pod.status.start_time

    def affinity_terms(self) -> Any:
        """Parsed pod (anti-)affinity terms, built on first use by the InterPodAffinity plugin."""
        return self._affinity

    def set_affinity_terms(self, terms: Any) -> None:
        self._affinity = terms

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


class ImageStateSummary:
    """An image on a node: its size and on how many nodes it is (for ImageLocality)."""

    __slots__ = ("nodes", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.nodes: set[str] = set()

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)


class NodeInfo:
    """A node with its pods and pre-summed requests; `generation` changes on every update."""

    __slots__ = (
        "allocatable",
        "generation",
        "image_states",
        "index",
        "name",
        "node",
        "non_zero_requested",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "priority_sums",
        "pvc_ref_counts",
        "requested",
        "used_ports",
    )

    def __init__(self, node: Node | None = None) -> None:
        self.node: Node | None = None
        self.name = ""
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.used_ports = HostPortInfo()
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = Resource()
        self.image_states: dict[str, ImageStateSummary] = {}
        self.pvc_ref_counts: dict[str, int] = {}
        # Pod priority -> [summed requests, pod count]: what preemption may take away at a glance.
        self.priority_sums: dict[int, list[Any]] = {}
        self.generation = next_generation()
        self.index = -1
        if node is not None:
            self.set_node(node)

    def set_node(self, node: Node) -> None:
        self.node = node
        self.name = node.metadata.name
        alloc = node.status.allocatable or node.status.capacity
        self.allocatable = Resource.from_amounts(allocatable_amounts(alloc))
        self.generation = next_generation()

    def add_pod(self, pi: PodInfo) -> None:
        self.pods.append(pi)
        if pi.has_affinity:
            self.pods_with_affinity.append(pi)
        if pi.has_required_anti_affinity:
            self.pods_with_required_anti_affinity.append(pi)
        self._update(pi, 1)

    def remove_pod(self, pi: PodInfo) -> bool:
        """Remove by uid (swap with the last, as upstream's removeFromSlice does)."""
        uid = pi.uid
        if pi.has_affinity:
            _remove_from(self.pods_with_affinity, uid)
        if pi.has_required_anti_affinity:
            _remove_from(self.pods_with_required_anti_affinity, uid)
        removed = _remove_from(self.pods, uid)
        if removed is None:
            return False
        self._update(removed, -1)
        return True

    def replace_pod(self, old: PodInfo, new: PodInfo) -> bool:
        """remove_pod(old) then add_pod(new), when they count alike (the same requests, ports, volumes,
        priority and affinity): the pod lists end in the same order, the sums are left as they are.
        False, and nothing done, when they differ or `old` is not here."""
        if not (
            old.requests is new.requests
            and old.non0_cpu == new.non0_cpu
            and old.non0_mem == new.non0_mem
            and old.priority == new.priority
            and old.host_ports == new.host_ports
            and old.has_affinity == new.has_affinity
            and old.has_required_anti_affinity == new.has_required_anti_affinity
            and old.namespace == new.namespace
            and old.pod.spec.volumes is new.pod.spec.volumes
        ):
            return False
        uid = old.uid
        if not _move_to_end(self.pods, uid, new):
            return False
        if new.has_affinity:
            _move_to_end(self.pods_with_affinity, uid, new)
        if new.has_required_anti_affinity:
            _move_to_end(self.pods_with_required_anti_affinity, uid, new)
        self.generation = next_generation()
        return True

    def _update(self, pi: PodInfo, sign: int) -> None:
        req = pi.requests
        self.requested.add(req, sign)
        sums = self.priority_sums
        ps = sums.get(pi.priority)
        if ps is None:
            ps = sums[pi.priority] = [Resource(), 0]
        ps[0].add(req, sign)
        ps[1] += sign
        if ps[1] == 0:
            del sums[pi.priority]
        nz = self.non_zero_requested
        nz.milli_cpu = wrap(nz.milli_cpu + sign * pi.non0_cpu)
        nz.memory = wrap(nz.memory + sign * pi.non0_mem)
        if pi.host_ports:
            ports = self.used_ports
            for ip, proto, port in pi.host_ports:
                if sign > 0:
                    ports.add(ip, proto, port)
                else:
                    ports.remove(ip, proto, port)
        volumes = pi.pod.spec.volumes
        if volumes:
            ns = pi.namespace
            for v in volumes:
                if v.persistent_volume_claim is not None:
                    key = f"{ns}/{v.persistent_volume_claim.claim_name}"
                    n = self.pvc_ref_counts.get(key, 0) + sign
                    if n > 0:
                        self.pvc_ref_counts[key] = n
                    else:
                        self.pvc_ref_counts.pop(key, None)
        self.generation = next(_generation)

    def lower_priority_sums(self, priority: int) -> tuple[Resource, int]:
        """Summed requests and number of this node's pods with priority below `priority`."""
        total = Resource()
        count = 0
        for p, (r, n) in self.priority_sums.items():
            if p < priority:
                total.add(r)
                count += n
        return total, count

    def clone(self) -> NodeInfo:
        """A copy whose pod lists and sums can change without touching this one."""
        c = NodeInfo.__new__(NodeInfo)
        c.node = self.node
        c.name = self.name
        c.pods = list(self.pods)
        c.pods_with_affinity = list(self.pods_with_affinity)
        c.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        c.used_ports = self.used_ports.clone()
        c.requested = self.requested.clone()
        c.non_zero_requested = self.non_zero_requested.clone()
        c.allocatable = self.allocatable.clone()
        c.image_states = self.image_states
        c.pvc_ref_counts = dict(self.pvc_ref_counts)
        c.priority_sums = {p: [r.clone(), n] for p, (r, n) in self.priority_sums.items()}
        c.generation = self.generation
        c.index = self.index
        return c

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)}, requested={self.requested})"


def _move_to_end(lst: list[PodInfo], uid: str, new: PodInfo) -> bool:
    """_remove_from(lst, uid) then lst.append(new): the last pod takes the removed one's place."""
    # Usually the pod is the last one added (a binding confirmed right after its assumption): no scan.
    if lst and lst[-1].uid == uid:
        lst[-1] = new
        return True
    for i, p in enumerate(lst):
        if p.uid == uid:
            lst[i] = lst[-1]
            lst[-1] = new
            return True
    return False


def _remove_from(lst: list[PodInfo], uid: str) -> PodInfo | None:
    for i, p in enumerate(lst):
        if p.uid == uid:
            last = lst.pop()
            if i < len(lst):
                lst[i] = last
            return p
    return None


class QueuedPodInfo:
    """A pod in the scheduling queue, with what the queue knows of its attempts."""

    __slots__ = (
        "attempts",
        "backoff_expiration",
        "consecutive_errors_count",
        "gating_plugin",
        "gating_plugin_events",
        "initial_attempt_timestamp",
        "pending_plugins",
        "pod_info",
        "seq",
        "timestamp",
        "uid",
        "unschedulable_count",
        "unschedulable_plugins",
    )

    def __init__(self, pod_info: PodInfo, timestamp: float, seq: int) -> None:
        self.pod_info = pod_info
        # The pod's uid: `pod_info` is replaced only by newer objects of the same pod (an attribute, not a
        # property: the queue's heaps key every entry by it).
        self.uid = pod_info.uid
        self.timestamp = timestamp
        self.initial_attempt_timestamp: float | None = None
        self.attempts = 0
        self.unschedulable_count = 0
        self.consecutive_errors_count = 0
        self.unschedulable_plugins: set[str] = set()
        self.pending_plugins: set[str] = set()
        self.gating_plugin = ""
        self.gating_plugin_events: list[Any] = []
        self.backoff_expiration: float | None = None
        self.seq = seq

    @property
    def pod(self) -> Pod:
        return self.pod_info.pod

    def gated(self) -> bool:
        return bool(self.gating_plugin)

    def __repr__(self) -> str:
        return f"QueuedPodInfo({self.pod_info.key}, attempts={self.attempts})"
