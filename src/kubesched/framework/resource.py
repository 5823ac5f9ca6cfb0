"""Resource (framework.Resource): a pod's requests and a node's allocatable as Go's int64 sums.

Requests are computed once per distinct resource spec (replicas share one) and
allocatable once per distinct list (a cluster's nodes share few): both caches
are bounded.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    from kubesched.api.core import Pod


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


_RESOURCE_CACHE: dict[tuple[Any, ...], tuple[Resource, int, int]] = {}
_RESOURCE_CACHE_SIZE = 8192


def _resources_signature(pod: Pod) -> tuple[Any, ...]:
    # Made for every new pod object: list comprehensions (no generator per tuple), no loop over no init containers.
    spec = pod.spec
    init = spec.init_containers
    return (
        tuple([(tuple(c.resources.requests.items()), c.restart_policy) for c in init]) if init else (),
        tuple([tuple(c.resources.requests.items()) for c in spec.containers]),
        tuple(spec.overhead.items()),
        tuple(spec.resources.requests.items()) if spec.resources is not None else None,
    )


def pod_resources(pod: Pod) -> tuple[Resource, int, int]:
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


def allocatable_amounts(alloc: Mapping[str, Any]) -> dict[str, int]:
    """A node's allocatable as the scheduler's int64s, parsed once per distinct list (a cluster's nodes share few)."""
    key = tuple(alloc.items())
    hit = _ALLOCATABLE_CACHE.get(key)
    if hit is None:
        hit = to_amounts(parse_resource_list(alloc))
        if len(_ALLOCATABLE_CACHE) >= _RESOURCE_CACHE_SIZE:
            _ALLOCATABLE_CACHE.clear()
        _ALLOCATABLE_CACHE[key] = hit
    return dict(hit)
