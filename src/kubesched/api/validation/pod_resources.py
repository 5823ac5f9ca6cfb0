"""Compute resources of a pod (core validation's validateResourceRequirements and friends).

Container requests and limits, pod-level `spec.resources`, `spec.overhead`, the claims containers
reference and the pod's `spec.resourceClaims`. On a Pod the API server validates requests after
defaulting them from limits (and pod-level requests from limits and the containers' totals); the
checks here apply that defaulting themselves, read-only, on the object as decoded.

Resource names repeat across every pod of a scenario, so their checks are memoized by name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from functools import lru_cache

from kubesched.api.core import (
    Container,
    Pod,
    PodResourceClaim,
    PodSpec,
    ResourceClaimRef,
    ResourceList,
    ResourceRequirements,
)
from kubesched.api.quantity import (
    Quantity,
    QuantityError,
    parse,
    parse_quantity,
    parse_resource_quantity,
    quantity_text,
    shown,
)
from kubesched.api.resources import (
    aggregate_containers,
    is_extended_resource_name,
    is_hugepage_resource_name,
    is_native_resource,
    is_supported_pod_level_resource,
)
from kubesched.api.validation.meta import name_is_dns_label, name_is_dns_subdomain
from kubesched.gocompat.field import (
    FieldError,
    GoJSON,
    duplicate,
    forbidden,
    index,
    invalid,
    key,
    not_found,
    not_supported,
    required,
)
from kubesched.gocompat.names import is_qualified_name

# helper.standardResources (plus the quota hugepages names): what an unprefixed resource name may be.
_STANDARD_RESOURCES = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "requests.storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "persistentvolumeclaims",
        "storage",
        "configmaps",
        "services.nodeports",
        "services.loadbalancers",
    }
)
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
# helper.integerResources: counted objects, which (like extended resources) come in whole units.
_INTEGER_RESOURCES = frozenset(
    {
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
_QOS_RESOURCES = ("cpu", "memory")
_POD_LEVEL_SUPPORTED = ["cpu", "hugepages-", "memory"]  # sets.List(SupportedPodLevelResources())
_HUGEPAGES_PREFIX = "hugepages-"

NameCheck = Callable[[str, str], list[FieldError]]


def _q(raw: object) -> Fraction:
    """The value of a quantity already checked by decode() (or computed here)."""
    return raw if isinstance(raw, Fraction) else parse_quantity(raw)


# ---------------------------------------------------------------- resource names


@lru_cache(maxsize=1 << 10)
def _resource_name_messages(name: str) -> tuple[str, ...]:
    """validateResourceName: a qualified name, and a standard one when unprefixed."""
    msgs = is_qualified_name(name)
    if msgs:
        return tuple(msgs)
    if "/" not in name and name not in _STANDARD_RESOURCES and not _is_quota_hugepages(name):
        return ("must be a standard resource type or fully qualified",)
    return ()


def _is_quota_hugepages(name: str) -> bool:
    return name.startswith(_HUGEPAGES_PREFIX) or name.startswith("requests." + _HUGEPAGES_PREFIX)


@lru_cache(maxsize=1 << 10)
def _container_resource_name_messages(name: str) -> tuple[str, ...]:
    """validateContainerResourceName: cpu, memory, ephemeral-storage, hugepages-* or an extended resource."""
    msgs = _resource_name_messages(name)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not is_hugepage_resource_name(name):
            return (*msgs, "must be a standard resource for containers")
    elif not is_native_resource(name) and not is_extended_resource_name(name):
        return (*msgs, "doesn't follow extended resource name standard")
    return msgs


def container_resource_name(name: str, path: str) -> list[FieldError]:
    msgs = _container_resource_name_messages(name)
    return [invalid(path, name, m) for m in msgs] if msgs else []


def pod_resource_name(name: str, path: str) -> list[FieldError]:
    """validatePodResourceName: a valid resource name that pod-level resources support."""
    msgs = _resource_name_messages(name)
    if msgs:
        return [invalid(path, name, m) for m in msgs]
    if not is_supported_pod_level_resource(name):
        return [not_supported(path, name, _POD_LEVEL_SUPPORTED)]
    return []


@lru_cache(maxsize=1 << 12)
def is_integer_resource(name: str) -> bool:
    """helper.IsIntegerResourceName: counted objects and extended resources come in whole units."""
    return name in _INTEGER_RESOURCES or is_extended_resource_name(name)


@lru_cache(maxsize=1 << 10)
def _overcommit_allowed(name: str) -> bool:
    """helper.IsOvercommitAllowed: extended resources and hugepages need requests == limits."""
    return is_native_resource(name) and not is_hugepage_resource_name(name)


def _go(raw: object) -> Quantity:
    """The quantity as Go holds it (a ResourceList entry), for Value() and MilliValue(); a computed sum
    (a Fraction) is taken from its exact text."""
    return parse_resource_quantity(quantity_text(raw) if isinstance(raw, Fraction) else raw)


def _hugepages_divisible(name: str, raw: object) -> bool:
    """helper.IsHugePageResourceValueDivisible: a whole number of pages of the size the name gives."""
    try:
        page = parse(name[len(_HUGEPAGES_PREFIX) :])
    except QuantityError:
        return False
    if page.exact <= 0 or page.milli_value() % 1000:
        return False
    return _go(raw).value() % page.value() == 0  # zero or not: the same in Go


def _value_errors(name: str, raw: object, q: Fraction, path: str) -> list[FieldError]:
    """ValidateResourceQuantityValue: not negative, and whole for counted and extended resources."""
    errs: list[FieldError] = []
    if q < 0:
        errs.append(invalid(path, shown(raw), "must be greater than or equal to 0"))
    if is_integer_resource(name) and _go(raw).milli_value() % 1000:
        errs.append(invalid(path, shown(raw), "must be an integer"))
    return errs


def _hugepages_errors(name: str, raw: object, q: Fraction, path: str) -> list[FieldError]:
    if _hugepages_divisible(name, raw):
        return []
    text = shown(raw)
    return [invalid(path, text, f"{text} is not positive integer multiple of {name}")]


# ---------------------------------------------------------------- requirements


def defaulted_requests(requests: ResourceList, limits: ResourceList) -> ResourceList:
    """SetDefaults_Pod: a resource with a limit but no request is requested at its limit."""
    if not limits or all(k in requests for k in limits):
        return requests
    return {**requests, **{k: v for k, v in limits.items() if k not in requests}}


def validate_requirements(
    limits: Mapping[str, object],
    requests: Mapping[str, object],
    claims: list[ResourceClaimRef],
    name_check: NameCheck,
    claim_names: frozenset[str],
    path: str,
) -> list[FieldError]:
    """validateResourceRequirements: names, quantities, requests <= limits, hugepages, claims."""
    errs: list[FieldError] = []
    qos = hugepages = False
    limit_values: dict[str, Fraction] = {}
    for name, raw in limits.items():
        p = key(path + ".limits", name)
        errs += name_check(name, p)
        q = limit_values[name] = _q(raw)
        errs += _value_errors(name, raw, q, p)
        if name.startswith(_HUGEPAGES_PREFIX):
            hugepages = True
            errs += _hugepages_errors(name, raw, q, p)
        qos = qos or name in _QOS_RESOURCES
    for name, raw in requests.items():
        p = key(path + ".requests", name)
        errs += name_check(name, p)
        q = _q(raw)
        errs += _value_errors(name, raw, q, p)
        limit = limit_values.get(name)
        if limit is not None:
            if q != limit and not _overcommit_allowed(name):
                detail = f"must be equal to {name} limit of {shown(limits[name])}"
                errs.append(invalid(path + ".requests", shown(raw), detail))
            elif q > limit:
                detail = f"must be less than or equal to {name} limit of {shown(limits[name])}"
                errs.append(invalid(path + ".requests", shown(raw), detail))
        elif not _overcommit_allowed(name):
            errs.append(required(path + ".limits", "Limit must be set for non overcommitable resources"))
        if name.startswith(_HUGEPAGES_PREFIX):
            hugepages = True
            errs += _hugepages_errors(name, raw, q, p)
        qos = qos or name in _QOS_RESOURCES
    if hugepages and not qos:
        errs.append(forbidden(path, "HugePages require cpu or memory"))
    if claims:
        errs += _claim_ref_errors(claims, claim_names, path + ".claims")
    return errs


# Requests and limits already found valid (without claims their validity depends on nothing else): the
# same few fill every container of a large scenario.
_VALID_REQUIREMENTS: set[tuple[object, ...]] = set()
_VALID_REQUIREMENTS_LIMIT = 1 << 14


def validate_container_resources(
    c: Container, claim_names: frozenset[str], path: str, default_requests: bool
) -> list[FieldError]:
    res = c.resources
    if res.claims:
        requests = defaulted_requests(res.requests, res.limits) if default_requests else res.requests
        return validate_requirements(res.limits, requests, res.claims, container_resource_name, claim_names, path)
    if not res.limits and not res.requests:
        return []
    seen = (tuple(res.limits.items()), tuple(res.requests.items()), default_requests)
    if seen in _VALID_REQUIREMENTS:
        return []
    requests = defaulted_requests(res.requests, res.limits) if default_requests else res.requests
    errs = validate_requirements(res.limits, requests, [], container_resource_name, claim_names, path)
    if not errs:
        if len(_VALID_REQUIREMENTS) >= _VALID_REQUIREMENTS_LIMIT:
            _VALID_REQUIREMENTS.clear()
        _VALID_REQUIREMENTS.add(seen)
    return errs


def validate_overhead(overhead: ResourceList, path: str) -> list[FieldError]:
    """validateOverhead: the overhead checked as the limits of a container."""
    return validate_requirements(overhead, {}, [], container_resource_name, frozenset(), path)


def _claim_ref_errors(claims: list[ResourceClaimRef], claim_names: frozenset[str], path: str) -> list[FieldError]:
    """validateResourceClaimNames: each claim (or claim request) once, and only claims the pod declares."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        p = index(path, i)
        name = claim.name
        if not name:
            errs.append(required(p))
            continue
        if name in seen:
            errs.append(duplicate(p, name))  # all requests of that claim are already referenced
        else:
            entry = name
            if claim.request:
                errs += [invalid(p + ".request", claim.request, m) for m in name_is_dns_label(claim.request, False)]
                entry += "/" + claim.request
            if entry in seen:
                errs.append(duplicate(p, entry))
            elif not claim.request:
                # The whole claim after one of its requests overlaps it.
                errs += [duplicate(p, name) for s in seen if s.partition("/")[0] == name and "/" in s]
            seen.add(entry)
        if name not in claim_names:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += ": " + ", ".join(sorted(claim_names)) if claim_names else " which is empty"
            errs.append(not_found(p, name, detail))
    return errs


# ---------------------------------------------------------------- the pod's resource claims


def claim_names(claims: list[PodResourceClaim]) -> frozenset[str]:
    """gatherPodResourceClaimNames: the names containers may reference (empty ones left out)."""
    return frozenset(c.name for c in claims if c.name)


def validate_pod_resource_claims(claims: list[PodResourceClaim], mirror: bool, path: str) -> list[FieldError]:
    """validatePodResourceClaims: DNS-label names, once each, and exactly one source per claim."""
    if not claims:
        return []
    if mirror:
        return [forbidden("[]", "static pods do not support resource claims")]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        p = index(path, i)
        if not claim.name:
            errs.append(required(p + ".name"))
        elif claim.name in seen:
            errs.append(duplicate(p + ".name", claim.name))
        else:
            errs += [invalid(p + ".name", claim.name, m) for m in name_is_dns_label(claim.name, False)]
            seen.add(claim.name)
        rcn, rctn = claim.resource_claim_name, claim.resource_claim_template_name
        if rcn is not None and rctn is not None:
            errs.append(invalid(p, _claim_value(claim), _BOTH_SOURCES))
        if rcn is None and rctn is None:
            errs.append(invalid(p, _claim_value(claim), _NO_SOURCE))
        if rcn is not None:
            errs += [invalid(p + ".resourceClaimName", rcn, m) for m in name_is_dns_subdomain(rcn, False)]
        if rctn is not None:
            errs += [invalid(p + ".resourceClaimTemplateName", rctn, m) for m in name_is_dns_subdomain(rctn, False)]
    return errs


_BOTH_SOURCES = "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
_NO_SOURCE = "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"


def _claim_value(claim: PodResourceClaim) -> GoJSON:
    """The claim as Go prints the internal struct: its field names, nil pointers as null."""
    return GoJSON(
        {
            "Name": claim.name,
            "ResourceClaimName": claim.resource_claim_name,
            "ResourceClaimTemplateName": claim.resource_claim_template_name,
        }
    )


# ---------------------------------------------------------------- pod-level resources


def _container_requests_getter(default_requests: bool) -> Callable[[Container], dict[str, Quantity]]:
    def get(c: Container) -> dict[str, Quantity]:
        res = c.resources
        reqs = defaulted_requests(res.requests, res.limits) if default_requests else res.requests
        return {k: parse(v) for k, v in reqs.items()}

    return get


def _container_limits(c: Container) -> dict[str, Quantity]:
    return {k: parse(v) for k, v in c.resources.limits.items()}


def _aggregate(spec: PodSpec, get: Callable[[Container], dict[str, Quantity]]) -> dict[str, Fraction]:
    """AggregateContainerRequests (or ...Limits, by `get`) of the pod's containers, as exact values."""
    return {name: q.exact for name, q in aggregate_containers(Pod(spec=spec), get).items()}


def _pod_level_defaults(spec: PodSpec, res: ResourceRequirements) -> tuple[dict[str, object], dict[str, object]]:
    """defaultHugePagePodLimits and defaultPodRequests: pod-level limits and requests as the server stores them.

    Only a pod that sets pod-level limits gets requests defaulted: from the containers' aggregated
    requests where some container requests the resource, else from the limit; hugepages limits
    default to the containers' aggregated hugepages limits.
    """
    limits: dict[str, object] = dict(res.limits)
    for name, q in _aggregate(spec, _container_limits).items():
        if is_hugepage_resource_name(name) and name not in res.requests and name not in limits:
            limits[name] = q
    requests: dict[str, object] = dict(res.requests)
    if not limits:
        return limits, requests
    for name, q in _aggregate(spec, _container_requests_getter(True)).items():
        if name not in requests and is_supported_pod_level_resource(name) and not is_hugepage_resource_name(name):
            requests[name] = q
    for name, raw in limits.items():
        if name not in requests and is_supported_pod_level_resource(name):
            requests[name] = raw
    return limits, requests


def validate_pod_resources(spec: PodSpec, claim_names: frozenset[str], path: str, is_pod: bool) -> list[FieldError]:
    """validatePodResources: pod-level requirements, then their consistency with the containers'."""
    res = spec.resources
    if res is None:
        return []
    errs: list[FieldError] = []
    if res.claims:
        errs.append(forbidden(path + ".claims", "claims may not be set for Resources at pod-level"))
    if is_pod and (res.limits or res.requests):
        limits, requests = _pod_level_defaults(spec, res)
    else:
        limits, requests = dict(res.limits), dict(res.requests)
    errs += validate_requirements(limits, requests, res.claims, pod_resource_name, claim_names, path)
    errs += _consistency_errors(spec, limits, requests, path, is_pod)
    return errs


def _consistency_errors(
    spec: PodSpec, limits: Mapping[str, object], requests: Mapping[str, object], path: str, is_pod: bool
) -> list[FieldError]:
    """validatePodResourceConsistency: pod requests cover the containers' total; no container limit above the pod's."""
    errs: list[FieldError] = []
    get = _container_requests_getter(is_pod)
    for name, total in _aggregate(spec, get).items():
        if name not in requests:
            continue
        if total > _q(requests[name]):
            total_text = _total_text(spec, name, total, get)
            detail = f"must be greater than or equal to aggregate container requests of {total_text}"
            errs.append(invalid(key(path + ".requests", name), shown(requests[name]), detail))
    for i, c in enumerate(spec.containers):
        for name, raw in c.resources.limits.items():
            if name in limits and _q(raw) > _q(limits[name]):
                errs.append(
                    invalid(
                        f"{path}.containers[{i}][{name}].limits",
                        shown(raw),
                        f"must be less than or equal to pod limits of {shown(limits[name])}",
                    )
                )
    return errs


def _total_text(spec: PodSpec, name: str, total: Fraction, get: Callable[[Container], dict[str, Quantity]]) -> str:
    """The containers' total as written when one container's request is the total (the usual case)."""
    for c in (*spec.containers, *spec.init_containers):
        q = get(c).get(name)
        if q is not None and q.exact == total:
            reqs = c.resources.requests if name in c.resources.requests else c.resources.limits
            return shown(reqs[name])
    return shown(total)
