"""Resource names and a pod's effective requests (k8s.io/component-helpers/resource).

The scheduler keeps every amount as an int64: MilliValue() for cpu, Value()
for everything else. Requests are summed as upstream sums them, on
resource.Quantity values (Quantity.Add, and Quantity.Cmp for the init
container maximum), and turned into integers once at the end; past int64 the
form those sums leave behind decides the integer, so they follow Go's forms.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from kubesched.api.quantity import DECIMAL_SI, MILLI, Quantity, parse_resource_quantity, scheduler_amount

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

# NewMilliQuantity(100, DecimalSI) and NewQuantity(200Mi, DecimalSI).
_NON_MISSING = {
    CPU: Quantity(False, DEFAULT_MILLI_CPU_REQUEST, MILLI, DECIMAL_SI),
    MEMORY: Quantity(False, DEFAULT_MEMORY_REQUEST, 0, DECIMAL_SI),
}

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


def parse_resource_list(raw: Mapping[str, object]) -> dict[str, Quantity]:
    """Parse a ResourceList as the scheduler receives it (entries rounded up to milli by API defaulting).

    Raises QuantityError naming nothing (callers add the path).
    """
    return {name: parse_resource_quantity(q) for name, q in raw.items()}


def _add(into: dict[str, Quantity], other: Mapping[str, Quantity]) -> None:
    """addResourceList: a new entry is a copy, an existing one is summed with Quantity.Add."""
    for k, v in other.items():
        cur = into.get(k)
        into[k] = v if cur is None else cur.add(v)


def _max(into: dict[str, Quantity], other: Mapping[str, Quantity]) -> None:
    """maxResourceList: the larger entry wins.

    Go compares with Quantity.Cmp, which turns the newcomer into an inf.Dec when
    the entry it is compared with is one; if it wins, it is kept in that form.
    """
    for k, v in other.items():
        cur = into.get(k)
        if cur is None:
            into[k] = v
            continue
        if cur.dec and not v.dec:
            v = v.as_dec()
        if v.cmp(cur) > 0:
            into[k] = v


def _container_requests(c: Container, defaults: Mapping[str, Quantity]) -> dict[str, Quantity]:
    return _with_defaults(parse_resource_list(c.resources.requests), defaults)


def _with_defaults(reqs: dict[str, Quantity], defaults: Mapping[str, Quantity]) -> dict[str, Quantity]:
    """applyNonMissing: a default for each resource the list does not name (an explicit 0 stays)."""
    for k, v in defaults.items():
        if k not in reqs:
            reqs[k] = v
    return reqs


def aggregate_containers(
    pod: Pod, get: Callable[[Container], dict[str, Quantity]] | None = None
) -> dict[str, Quantity]:
    """The sidecar-aware sum over a pod's containers (AggregateContainerRequests / ...Limits).

    Regular containers and restartable init containers add up; each regular
    init container runs alone beside the sidecars started before it, and the
    largest of those steps is a floor for every resource.
    """
    get = get or (lambda c: parse_resource_list(c.resources.requests))
    reqs: dict[str, Quantity] = {}
    for c in pod.spec.containers:
        _add(reqs, get(c))
    sidecars: dict[str, Quantity] = {}
    init_max: dict[str, Quantity] = {}
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


def pod_level_requests(pod: Pod) -> dict[str, Quantity]:
    """The pod-level requests PodRequests applies; empty unless IsPodLevelRequestsSet."""
    res = pod.spec.resources
    if res is None or not res.requests:
        return {}
    return {k: parse_resource_quantity(v) for k, v in res.requests.items() if is_supported_pod_level_resource(k)}


def _pod_requests(pod: Pod, non_missing: Mapping[str, Quantity], pod_level: bool = True) -> dict[str, Quantity]:
    """resourcehelper.PodRequests with NonMissingContainerRequests=`non_missing`, overhead included.

    Without `pod_level`, as with SkipPodLevelResources.
    """
    if non_missing:
        reqs = aggregate_containers(pod, lambda c: _container_requests(c, non_missing))
    else:
        reqs = aggregate_containers(pod)
    if pod_level:
        reqs.update(pod_level_requests(pod))
    if pod.spec.overhead:
        _add(reqs, parse_resource_list(pod.spec.overhead))
    return reqs


def pod_requests(pod: Pod, non_missing: bool = False) -> dict[str, Quantity]:
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


def pod_requests_non_missing(pod: Pod) -> dict[str, Quantity]:
    """PodRequests with NonMissingContainerRequests always 100m / 200Mi and pod-level requests skipped.

    This is what NodeResourcesFit's scoring strategies use (calculatePodResourceRequest
    when not useRequested): in v1.34 their scorer is built without the
    PodLevelResources feature, so SkipPodLevelResources is set (the reference
    scores a pod with container memory 30 and pod-level memory 50 by the 30).
    It differs from NonZeroRequested only for a pod with pod-level requests.
    """
    return _pod_requests(pod, _NON_MISSING, pod_level=False)


def to_amounts(reqs: Mapping[str, Quantity]) -> dict[str, int]:
    """Quantities → the scheduler's int64s (MilliValue() for cpu, Value() for the rest)."""
    return {name: scheduler_amount(name, q) for name, q in reqs.items()}


def scalar_names(names: Iterable[str]) -> list[str]:
    return [n for n in names if is_scalar_resource_name(n)]
