"""PodInfo, Resource, NodeInfo (pkg/scheduler/framework/types.go).

A PodInfo is computed once per pod object: its requests as the scheduler
counts them, its host ports and its parsed affinity terms. A NodeInfo keeps
the node's pods and pre-summed integer resources, and a generation bumped on
every change so that snapshots and columns refresh only what changed.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from kubesched.api.int64 import MAX_INT64, MIN_INT64, wrap
from kubesched.api.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    is_scalar_resource_name,
    parse_resource_list,
    pod_requests,
    to_amounts,
)

if TYPE_CHECKING:
    from kubesched.api.core import Node, Pod

_generation = itertools.count(1)


def next_generation() -> int:
    return next(_generation)


def pod_host_ports(pod: Pod) -> list[tuple[str, str, int]]:
    """The (ip, protocol, port) host ports a pod holds while it runs (schedutil.GetHostPorts).

    A regular init container has exited before the pod's containers start, so
    only sidecar (restartPolicy Always) init containers and regular containers
    keep their ports.
    """
    sidecars = (c for c in pod.spec.init_containers if c.restart_policy == "Always")
    return [
        (p.host_ip, p.protocol, p.host_port)
        for c in itertools.chain(sidecars, pod.spec.containers)
        for p in c.ports
        if p.host_port > 0
    ]


class Resource:
    """Pre-summed integer resources: millicores, bytes, pod count, scalar resources.

    Every amount is an int64 as Go holds it: sums wrap around as Go's `+=` does.
    """

    __slots__ = ("allowed_pod_number", "ephemeral_storage", "memory", "milli_cpu", "scalar")

    def __init__(
        self,
        milli_cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        allowed_pod_number: int = 0,
        scalar: dict[str, int] | None = None,
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar: dict[str, int] = scalar if scalar is not None else {}

    @classmethod
    def from_amounts(cls, amounts: dict[str, int]) -> Resource:
        """framework.NewResource from integer amounts (cpu already in millicores)."""
        r = cls()
        for name, v in amounts.items():
            if name == CPU:
                r.milli_cpu += v
            elif name == MEMORY:
                r.memory += v
            elif name == PODS:
                r.allowed_pod_number += v
            elif name == EPHEMERAL_STORAGE:
                r.ephemeral_storage += v
            elif is_scalar_resource_name(name):
                r.scalar[name] = r.scalar.get(name, 0) + v
        return r

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def add(self, other: Resource, sign: int = 1) -> None:
        cpu = self.milli_cpu + sign * other.milli_cpu
        mem = self.memory + sign * other.memory
        eph = self.ephemeral_storage + sign * other.ephemeral_storage
        if MIN_INT64 <= cpu <= MAX_INT64 and MIN_INT64 <= mem <= MAX_INT64 and MIN_INT64 <= eph <= MAX_INT64:
            self.milli_cpu, self.memory, self.ephemeral_storage = cpu, mem, eph
        else:
            self.milli_cpu, self.memory, self.ephemeral_storage = wrap(cpu), wrap(mem), wrap(eph)
        scalar = self.scalar
        for k, v in other.scalar.items():
            scalar[k] = wrap(scalar.get(k, 0) + sign * v)

    def is_zero(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or self.scalar)

    def clone(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number, dict(self.scalar))

    def __repr__(self) -> str:
        return (
            f"Resource(cpu={self.milli_cpu}m, memory={self.memory}, eph={self.ephemeral_storage}, "
            f"pods={self.allowed_pod_number}, scalar={self.scalar})"
        )


DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"


def _sanitize(ip: str, protocol: str) -> tuple[str, str]:
    return ip or DEFAULT_BIND_ALL_HOST_IP, protocol or "TCP"


class HostPortInfo(dict[str, set[tuple[str, int]]]):
    """Used host ports: ip → {(protocol, port)}; 0.0.0.0 conflicts with every ip."""

    def add(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = _sanitize(ip, protocol)
        self.setdefault(ip, set()).add((protocol, port))

    def remove(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = _sanitize(ip, protocol)
        m = self.get(ip)
        if m is not None:
            m.discard((protocol, port))
            if not m:
                del self[ip]

    def check_conflict(self, ip: str, protocol: str, port: int) -> bool:
        if port <= 0:
            return False
        ip, protocol = _sanitize(ip, protocol)
        pp = (protocol, port)
        if ip == DEFAULT_BIND_ALL_HOST_IP:
            return any(pp in m for m in self.values())
        for key in (DEFAULT_BIND_ALL_HOST_IP, ip):
            m = self.get(key)
            if m is not None and pp in m:
                return True
        return False

    def clone(self) -> HostPortInfo:
        c = HostPortInfo()
        for k, v in self.items():
            c[k] = set(v)
        return c


_RESOURCE_CACHE: dict[tuple[Any, ...], tuple[Resource, int, int]] = {}
_RESOURCE_CACHE_SIZE = 8192


def _resources_signature(pod: Pod) -> tuple[Any, ...]:
    spec = pod.spec
    return (
        tuple((tuple(c.resources.requests.items()), c.restart_policy) for c in spec.init_containers),
        tuple(tuple(c.resources.requests.items()) for c in spec.containers),
        tuple(spec.overhead.items()),
        tuple(spec.resources.requests.items()) if spec.resources is not None else None,
    )


def _pod_resources(pod: Pod) -> tuple[Resource, int, int]:
    """(requests, non-zero cpu, non-zero memory) — shared by pods with the same resource spec (replicas)."""
    key = _resources_signature(pod)
    hit = _RESOURCE_CACHE.get(key)
    if hit is not None:
        return hit
    requests = Resource.from_amounts(to_amounts(pod_requests(pod)))
    if pod.spec.containers or pod.spec.init_containers:
        non0 = to_amounts(pod_requests(pod, non_missing=True))
        non0_cpu, non0_mem = non0.get(CPU, 0), non0.get(MEMORY, 0)
    else:
        non0_cpu, non0_mem = requests.milli_cpu, requests.memory
    if len(_RESOURCE_CACHE) >= _RESOURCE_CACHE_SIZE:
        _RESOURCE_CACHE.clear()
    _RESOURCE_CACHE[key] = (requests, non0_cpu, non0_mem)
    return requests, non0_cpu, non0_mem


_ALLOCATABLE_CACHE: dict[tuple[Any, ...], dict[str, int]] = {}


def _allocatable_amounts(alloc: Mapping[str, Any]) -> dict[str, int]:
    """A node's allocatable as the scheduler's int64s, parsed once per distinct list (a cluster's nodes share few)."""
    key = tuple(alloc.items())
    hit = _ALLOCATABLE_CACHE.get(key)
    if hit is None:
        hit = to_amounts(parse_resource_list(alloc))
        if len(_ALLOCATABLE_CACHE) >= _RESOURCE_CACHE_SIZE:
            _ALLOCATABLE_CACHE.clear()
        _ALLOCATABLE_CACHE[key] = hit
    return dict(hit)


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
        self.requests, self.non0_cpu, self.non0_mem = _pod_resources(pod)
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
        self.allocatable = Resource.from_amounts(_allocatable_amounts(alloc))
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

    def _update(self, pi: PodInfo, sign: int) -> None:
        self.requested.add(pi.requests, sign)
        ps = self.priority_sums.get(pi.priority)
        if ps is None:
            ps = self.priority_sums[pi.priority] = [Resource(), 0]
        ps[0].add(pi.requests, sign)
        ps[1] += sign
        if ps[1] == 0:
            del self.priority_sums[pi.priority]
        nz = self.non_zero_requested
        nz.milli_cpu = wrap(nz.milli_cpu + sign * pi.non0_cpu)
        nz.memory = wrap(nz.memory + sign * pi.non0_mem)
        ports = self.used_ports
        for ip, proto, port in pi.host_ports:
            if sign > 0:
                ports.add(ip, proto, port)
            else:
                ports.remove(ip, proto, port)
        ns = pi.namespace
        for v in pi.pod.spec.volumes:
            if v.persistent_volume_claim is not None:
                key = f"{ns}/{v.persistent_volume_claim.claim_name}"
                n = self.pvc_ref_counts.get(key, 0) + sign
                if n > 0:
                    self.pvc_ref_counts[key] = n
                else:
                    self.pvc_ref_counts.pop(key, None)
        self.generation = next_generation()

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
        "unschedulable_count",
        "unschedulable_plugins",
    )

    def __init__(self, pod_info: PodInfo, timestamp: float, seq: int) -> None:
        self.pod_info = pod_info
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

    @property
    def uid(self) -> str:
        return self.pod_info.uid

    def gated(self) -> bool:
        return bool(self.gating_plugin)

    def __repr__(self) -> str:
        return f"QueuedPodInfo({self.pod_info.key}, attempts={self.attempts})"
