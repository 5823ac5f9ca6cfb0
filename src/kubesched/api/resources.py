"""Resource names and a pod's effective requests (k8s.io/component-helpers/resource).

The scheduler keeps every amount as an int: millicores for cpu, Value()
(rounded up) for everything else. Sums are taken exactly, on quantities,
and rounded once at the end, as upstream sums resource.Quantity values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING

from kubesched.api.quantity import parse_quantity, scheduler_amount

if TYPE_CHECKING:
    from kubesched.api.core import Container, Pod

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# schedutil.DefaultMilliCPURequest / DefaultMemoryRequest: what a container
# without a request counts as when spreading by score.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

_NON_MISSING = {CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000), MEMORY: Fraction(DEFAULT_MEMORY_REQUEST)}

_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def is_prefixed_native_resource(name: str) -> bool:
    return "kubernetes.io/" in name


def is_native_resource(name: str) -> bool:
    return "/" not in name or is_prefixed_native_resource(name)


def _is_qualified_name(value: str) -> bool:
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
            return False
    else:
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME.match(name))


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: a domain-prefixed, non-native, valid name."""
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return _is_qualified_name("requests." + name)


def is_hugepage_resource_name(name: str) -> bool:
    return name.startswith("hugepages-")


def is_attachable_volume_resource_name(name: str) -> bool:
    return name.startswith("attachable-volumes-")


def is_scalar_resource_name(name: str) -> bool:
    """schedutil.IsScalarResourceName: resources kept in Resource.ScalarResources."""
    return (
        is_extended_resource_name(name)
        or is_hugepage_resource_name(name)
        or is_prefixed_native_resource(name)
        or is_attachable_volume_resource_name(name)
    )


def parse_resource_list(raw: Mapping[str, object]) -> dict[str, Fraction]:
    """Parse a ResourceList; raises QuantityError naming nothing (callers add the path)."""
    return {name: parse_quantity(q) for name, q in raw.items()}


def _add(into: dict[str, Fraction], other: Mapping[str, Fraction]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, Fraction(0)) + v


def _max(into: dict[str, Fraction], other: Mapping[str, Fraction]) -> None:
    for k, v in other.items():
        cur = into.get(k)
        if cur is None or v > cur:
            into[k] = v


def _container_requests(c: Container, defaults: Mapping[str, Fraction]) -> dict[str, Fraction]:
    reqs = parse_resource_list(c.resources.requests)
    for k, v in defaults.items():
        if k not in reqs:
            reqs[k] = v
    return reqs


def _aggregate_container_requests(pod: Pod, defaults: Mapping[str, Fraction]) -> dict[str, Fraction]:
    reqs: dict[str, Fraction] = {}
    for c in pod.spec.containers:
        _add(reqs, _container_requests(c, defaults))
    sidecars: dict[str, Fraction] = {}
    init_max: dict[str, Fraction] = {}
    for c in pod.spec.init_containers:
        creqs = _container_requests(c, defaults)
        if c.restart_policy == "Always":
            # A restartable (sidecar) init container keeps running beside the
            # app containers, and beside every init container after it.
            _add(reqs, creqs)
            _add(sidecars, creqs)
            step = dict(sidecars)
        else:
            step = dict(creqs)
            _add(step, sidecars)
        _max(init_max, step)
    _max(reqs, init_max)
    return reqs


POD_LEVEL_RESOURCES = (CPU, MEMORY)


def pod_requests(pod: Pod, non_missing: bool = False) -> dict[str, Fraction]:
    """resourcehelper.PodRequests: containers, init containers, pod-level requests, overhead.

    With `non_missing`, a container without a cpu or memory request counts as
    100m / 200Mi (the scheduler's NonMissingContainerRequests); when pod-level
    requests are set, only for a resource missing at both levels.
    """
    pod_level = parse_resource_list(pod.spec.resources.requests) if pod.spec.resources else {}
    pod_level = {k: v for k, v in pod_level.items() if k in POD_LEVEL_RESOURCES}
    defaults: Mapping[str, Fraction] = {}
    if non_missing:
        if pod_level:
            plain = _aggregate_container_requests(pod, {})
            defaults = {k: v for k, v in _NON_MISSING.items() if k not in plain and k not in pod_level}
        else:
            defaults = _NON_MISSING
    reqs = _aggregate_container_requests(pod, defaults)
    reqs.update(pod_level)
    if pod.spec.overhead:
        _add(reqs, parse_resource_list(pod.spec.overhead))
    return reqs


def to_amounts(reqs: Mapping[str, Fraction]) -> dict[str, int]:
    """Quantities → scheduler integers (millicores for cpu, Value() for the rest)."""
    return {name: scheduler_amount(name, q) for name, q in reqs.items()}


def scalar_names(names: Iterable[str]) -> list[str]:
    return [n for n in names if is_scalar_resource_name(n)]
