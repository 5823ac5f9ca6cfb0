"""Resource names and a pod's effective requests (k8s.io/component-helpers/resource).

The scheduler keeps every amount as an int: millicores for cpu, Value()
(rounded up) for everything else. Sums are taken exactly, on quantities,
and rounded once at the end, as upstream sums resource.Quantity values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
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
    return _with_defaults(parse_resource_list(c.resources.requests), defaults)


def _with_defaults(reqs: dict[str, Fraction], defaults: Mapping[str, Fraction]) -> dict[str, Fraction]:
    """applyNonMissing: a default for each resource the list does not name (an explicit 0 stays)."""
    for k, v in defaults.items():
        if k not in reqs:
            reqs[k] = v
    return reqs


def aggregate_containers(
    pod: Pod, get: Callable[[Container], dict[str, Fraction]] | None = None
) -> dict[str, Fraction]:
    """The sidecar-aware sum over a pod's containers (AggregateContainerRequests / ...Limits).

    Regular containers and restartable init containers add up; each regular
    init container runs alone beside the sidecars started before it, and the
    largest of those steps is a floor for every resource.
    """
    get = get or (lambda c: parse_resource_list(c.resources.requests))
    reqs: dict[str, Fraction] = {}
    for c in pod.spec.containers:
        _add(reqs, get(c))
    sidecars: dict[str, Fraction] = {}
    init_max: dict[str, Fraction] = {}
    for c in pod.spec.init_containers:
        creqs = get(c)
        if c.restart_policy == "Always":
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


def is_supported_pod_level_resource(name: str) -> bool:
    """resourcehelper.IsSupportedPodLevelResource: cpu, memory and (since v1.33) hugepages-*."""
    return name in POD_LEVEL_RESOURCES or is_hugepage_resource_name(name)


def pod_level_requests(pod: Pod) -> dict[str, Fraction]:
    """The pod-level requests PodRequests applies; empty unless IsPodLevelRequestsSet."""
    res = pod.spec.resources
    if res is None or not res.requests:
        return {}
    return {k: parse_quantity(v) for k, v in res.requests.items() if is_supported_pod_level_resource(k)}


def _pod_requests(pod: Pod, non_missing: Mapping[str, Fraction]) -> dict[str, Fraction]:
    """resourcehelper.PodRequests with NonMissingContainerRequests=`non_missing`, overhead included."""
    if non_missing:
        reqs = aggregate_containers(pod, lambda c: _container_requests(c, non_missing))
    else:
        reqs = aggregate_containers(pod)
    reqs.update(pod_level_requests(pod))
    if pod.spec.overhead:
        _add(reqs, parse_resource_list(pod.spec.overhead))
    return reqs


def pod_requests(pod: Pod, non_missing: bool = False) -> dict[str, Fraction]:
    """resourcehelper.PodRequests: containers, init containers, pod-level requests, overhead.

    With `non_missing`, the requests NodeInfo keeps as NonZeroRequested
    (calculateResource): a container without a cpu or memory request counts as
    100m / 200Mi; when pod-level requests are set, only for a resource the
    pod's whole requests (overhead included) do not name
    (getNonMissingContainerRequests).
    """
    reqs = _pod_requests(pod, {})
    if not non_missing:
        return reqs
    if pod_level_requests(pod):
        defaults = {k: v for k, v in _NON_MISSING.items() if k not in reqs}
        if not defaults:
            return reqs
    else:
        defaults = _NON_MISSING
    return _pod_requests(pod, defaults)


def pod_requests_non_missing(pod: Pod) -> dict[str, Fraction]:
    """PodRequests with NonMissingContainerRequests always 100m / 200Mi, pod-level requests still winning.

    This is what the resource-allocation scorers use (calculatePodResourceRequest
    when not useRequested); it differs from NonZeroRequested only for a pod
    with pod-level requests.
    """
    return _pod_requests(pod, _NON_MISSING)


def to_amounts(reqs: Mapping[str, Fraction]) -> dict[str, int]:
    """Quantities → scheduler integers (millicores for cpu, Value() for the rest)."""
    return {name: scheduler_amount(name, q) for name, q in reqs.items()}


def scalar_names(names: Iterable[str]) -> list[str]:
    return [n for n in names if is_scalar_resource_name(n)]
