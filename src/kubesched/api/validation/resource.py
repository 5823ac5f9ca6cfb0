"""resource.k8s.io/v1 kinds (Dynamic Resource Allocation) as kube-apiserver v1.34 validates them on
create (pkg/apis/resource/validation): ResourceClaim, ResourceClaimTemplate and DeviceClass here,
ResourceSlice in resource_slice.py, CEL selectors in resource_cel.py, shared name rules in resource_names.py.

Fields of alpha features that a default v1.34 API server drops before validating (a slice's
perDeviceNodeSelection and sharedCounters, a device's taints, counters and own node fields) are
ignored here as well. CEL selectors are compiled with the scheduler's own CEL environment, their
errors worded as cel-go words them; the cost limit and regular expressions given to matches() are
not checked, nor is adminAccess (allowed only in namespaces labelled for it).
"""

from __future__ import annotations

import json
from typing import Any

from kubesched.api.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    DeviceClaim,
    DeviceClass,
    DeviceRequest,
    DeviceToleration,
    OpaqueDeviceConfiguration,
    ResourceClaim,
    ResourceClaimTemplate,
    _CountedDeviceRequest,
)
from kubesched.api.validation.meta import (
    name_is_dns_subdomain,
    validate_label_name,
    validate_label_value,
    validate_object_meta,
    validate_template_object_meta,
)
from kubesched.api.validation.registry import validator
from kubesched.api.validation.resource_cel import validate_device_selector
from kubesched.api.validation.resource_names import (
    dns_label,
    dns_subdomain,
    fully_qualified_name,
    validate_list,
    validate_unique,
)
from kubesched.api.validation.volumes import validate_csi_driver_name
from kubesched.gocompat.field import FieldError, child, index, invalid, not_supported, required, too_long

# Limits of resource.k8s.io (pkg/apis/resource/types.go).
DEVICE_REQUESTS_MAX = 32
DEVICE_CONSTRAINTS_MAX = 32
DEVICE_CONFIG_MAX = 32
DEVICE_SELECTORS_MAX = 32
FIRST_AVAILABLE_MAX = 8
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024

ALLOCATION_MODES = [ALLOCATION_MODE_ALL, ALLOCATION_MODE_EXACT_COUNT]
TOLERATION_OPERATORS = ["Equal", "Exists"]
TAINT_EFFECTS = ["NoExecute", "NoSchedule"]

REQUEST_REF = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
ONE_OF_REQUEST = "exactly one of `exactly` or `firstAvailable` is required"


def _opaque(config: OpaqueDeviceConfiguration | None, path: str) -> list[FieldError]:
    """validateDeviceConfiguration: an opaque configuration with a driver and a JSON object."""
    path = child(path, "opaque")
    if config is None:
        return [required(path)]
    errs = validate_csi_driver_name(config.driver, child(path, "driver"))
    params = child(path, "parameters")
    if config.parameters is None:
        errs.append(required(params))
    elif len(json.dumps(config.parameters, separators=(",", ":"))) > OPAQUE_PARAMETERS_MAX_LENGTH:
        errs.append(too_long(params, OPAQUE_PARAMETERS_MAX_LENGTH))
    elif not isinstance(config.parameters, dict):
        errs.append(invalid(params, "<value omitted>", "must be a valid JSON object"))
    return errs


def _toleration(t: DeviceToleration, path: str) -> list[FieldError]:
    errs = validate_label_name(t.key, child(path, "key")) if t.key else []
    if t.operator == "Exists":
        if t.value:
            errs.append(invalid(child(path, "value"), t.value, "must be empty for operator `Exists`"))
    elif t.operator == "Equal":
        errs += validate_label_value(t.value, child(path, "value"))
    elif not t.operator:
        errs.append(required(child(path, "operator")))
    else:
        errs.append(not_supported(child(path, "operator"), t.operator, TOLERATION_OPERATORS))
    if t.effect and t.effect not in TAINT_EFFECTS:
        errs.append(not_supported(child(path, "effect"), t.effect, TAINT_EFFECTS))
    return errs


def _counted_request(req: _CountedDeviceRequest, path: str) -> list[FieldError]:
    """What an exact request and a subrequest share: class, selectors, how many, tolerations."""
    errs: list[FieldError] = []
    if not req.device_class_name:
        errs.append(required(child(path, "deviceClassName")))
    else:
        errs += dns_subdomain(req.device_class_name, child(path, "deviceClassName"))
    errs += validate_list(req.selectors, DEVICE_SELECTORS_MAX, validate_device_selector, child(path, "selectors"))
    # Defaulted first: allocationMode ExactCount, and then a count of 1 when none is given.
    mode = req.allocation_mode or ALLOCATION_MODE_EXACT_COUNT
    count = req.count or 0
    if mode == ALLOCATION_MODE_EXACT_COUNT and count == 0:
        count = 1
    if mode == ALLOCATION_MODE_ALL:
        if count != 0:
            errs.append(invalid(child(path, "count"), count, "must not be specified when allocationMode is 'All'"))
    elif mode == ALLOCATION_MODE_EXACT_COUNT:
        if count <= 0:
            errs.append(invalid(child(path, "count"), count, "must be greater than zero"))
    else:
        errs.append(not_supported(child(path, "allocationMode"), mode, ALLOCATION_MODES))
    for i, t in enumerate(req.tolerations):
        errs += _toleration(t, index(child(path, "tolerations"), i))
    return errs


def _request(req: DeviceRequest, path: str) -> list[FieldError]:
    errs = dns_label(req.name, child(path, "name"))
    if req.exactly is None and not req.first_available:
        errs.append(required(path, ONE_OF_REQUEST))
    elif req.exactly is not None and req.first_available:
        errs.append(invalid(path, None, ONE_OF_REQUEST + ", but multiple fields are set"))
    elif req.first_available:
        subs = child(path, "firstAvailable")

        def sub(s: Any, p: str) -> list[FieldError]:
            return dns_label(s.name, child(p, "name")) + _counted_request(s, p)

        errs += validate_list(req.first_available, FIRST_AVAILABLE_MAX, sub, subs)
        errs += validate_unique([s.name for s in req.first_available], subs, "name")
    elif req.exactly is not None:
        errs += _counted_request(req.exactly, child(path, "exactly"))
    return errs


def _request_refs(names: list[str], known: dict[str, set[str] | None], path: str) -> list[FieldError]:
    """A set of references to requests ("req") or subrequests ("req/sub") of the claim."""

    def ref(name: str, p: str) -> list[FieldError]:
        segments = name.split("/")
        if len(segments) > 2:
            return [invalid(p, name, REQUEST_REF)]
        errs: list[FieldError] = []
        for segment in segments:
            errs += dns_label(segment, p)
        subs = known.get(segments[0], set())
        found = segments[0] in known and (len(segments) == 1 or (subs is not None and segments[1] in subs))
        if not found:
            errs.append(invalid(p, name, REQUEST_REF))
        return errs

    return validate_list(names, DEVICE_REQUESTS_MAX, ref, path) + validate_unique(names, path)


def validate_device_claim(claim: DeviceClaim, path: str) -> list[FieldError]:
    """validateDeviceClaim: requests, then constraints, then configuration."""
    known: dict[str, set[str] | None] = {
        r.name: ({s.name for s in r.first_available} if r.first_available else None) for r in claim.requests
    }
    requests = child(path, "requests")
    errs = validate_list(claim.requests, DEVICE_REQUESTS_MAX, _request, requests)
    errs += validate_unique([r.name for r in claim.requests], requests, "name")

    def constraint(c: Any, p: str) -> list[FieldError]:
        errs = _request_refs(c.requests, known, child(p, "requests"))
        if c.match_attribute is not None:
            errs += fully_qualified_name(c.match_attribute, child(p, "matchAttribute"))
        elif c.distinct_attribute is not None:
            errs += fully_qualified_name(c.distinct_attribute, child(p, "distinctAttribute"))
        else:
            errs.append(required(child(p, "matchAttribute")))
        return errs

    def config(c: Any, p: str) -> list[FieldError]:
        return _request_refs(c.requests, known, child(p, "requests")) + _opaque(c.opaque, p)

    errs += validate_list(claim.constraints, DEVICE_CONSTRAINTS_MAX, constraint, child(path, "constraints"))
    errs += validate_list(claim.config, DEVICE_CONFIG_MAX, config, child(path, "config"))
    return errs


@validator("ResourceClaim")
def validate_resource_claim(claim: ResourceClaim) -> list[FieldError]:
    errs = validate_object_meta(claim.metadata, True, name_is_dns_subdomain)
    return errs + validate_device_claim(claim.spec.devices, "spec.devices")


@validator("ResourceClaimTemplate")
def validate_resource_claim_template(template: ResourceClaimTemplate) -> list[FieldError]:
    errs = validate_object_meta(template.metadata, True, name_is_dns_subdomain)
    errs += validate_template_object_meta(template.spec.metadata, "spec.metadata")
    return errs + validate_device_claim(template.spec.spec.devices, "spec.spec.devices")


# ---------------------------------------------------------------- classes


@validator("DeviceClass")
def validate_device_class(dc: DeviceClass) -> list[FieldError]:
    errs = validate_object_meta(dc.metadata, False, name_is_dns_subdomain)
    errs += validate_list(dc.spec.selectors, DEVICE_SELECTORS_MAX, validate_device_selector, "spec.selectors")
    errs += validate_list(dc.spec.config, DEVICE_CONFIG_MAX, lambda c, p: _opaque(c.opaque, p), "spec.config")
    return errs
