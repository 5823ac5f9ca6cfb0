"""A ResourceSlice as kube-apiserver validates it on create (pkg/apis/resource/validation): its pool,
its node fields and every device's attributes and capacity, checked cheaply first as slices are many."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from kubesched.api.core import NodeSelector
from kubesched.api.resource import Device, DeviceAttribute, ResourceSlice
from kubesched.api.validation.meta import name_is_dns_subdomain, validate_object_meta
from kubesched.api.validation.node_selector import validate_node_selector
from kubesched.api.validation.registry import validator
from kubesched.api.validation.resource_names import (
    DEVICE_MAX_ID_LENGTH,
    dns_label,
    dns_subdomain,
    qualified_name,
    qualified_name_problems,
    validate_list,
    validate_unique,
)
from kubesched.api.validation.volumes import validate_csi_driver_name
from kubesched.gocompat.field import FieldError, GoJSON, child, invalid, key, required, too_long

POOL_NAME_MAX_LENGTH = 253
RESOURCE_SLICE_MAX_DEVICES = 128
ATTRIBUTES_AND_CAPACITIES_MAX = 32
DEVICE_MAX_DOMAIN_LENGTH = 63
ATTRIBUTE_MAX_VALUE_LENGTH = 64
_MAX_KEY_LENGTH = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH
ONE_OF_NODE = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
ONE_VALUE = "exactly one value must be specified"
NOT_SEMVER = "must be a string compatible with semver.org spec 2.0.0"
_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
    r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?"
)


def _truncated(k: str) -> str:
    """A map key as upstream shows it in a path: long keys lose their middle."""
    if len(k) <= _MAX_KEY_LENGTH:
        return k
    remaining = _MAX_KEY_LENGTH - 3
    return k[: (remaining + 1) // 2] + "..." + k[len(k) - remaining // 2 :]


def _pool_name(name: str, path: str) -> list[FieldError]:
    if not name:
        return [required(path)]
    errs: list[FieldError] = []
    if len(name) > POOL_NAME_MAX_LENGTH:
        errs.append(too_long(path, POOL_NAME_MAX_LENGTH))
    for part in name.split("/"):
        errs += dns_subdomain(part, path)
    return errs


def _node_selector_terms_value(sel: NodeSelector) -> GoJSON:
    """NodeSelectorTerms as encoding/json prints the internal (tagless) Go structs."""

    def reqs(rs: list[Any]) -> list[dict[str, Any]] | None:
        return [{"Key": r.key, "Operator": r.operator, "Values": r.values or None} for r in rs] or None

    terms = [
        {"MatchExpressions": reqs(t.match_expressions), "MatchFields": reqs(t.match_fields)}
        for t in sel.node_selector_terms
    ]
    return GoJSON(terms or None)


def _attribute_value(attr: DeviceAttribute) -> GoJSON:
    """A DeviceAttribute as encoding/json prints the internal (tagless) Go struct."""
    return GoJSON(
        {
            "IntValue": attr.int_value,
            "BoolValue": attr.bool_value,
            "StringValue": attr.string_value,
            "VersionValue": attr.version_value,
        }
    )


def _attribute(attr: DeviceAttribute, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    n = (attr.bool_value is not None) + (attr.int_value is not None)
    if attr.string_value is not None:
        n += 1
        if len(attr.string_value) > ATTRIBUTE_MAX_VALUE_LENGTH:
            errs.append(too_long(child(path, "string"), ATTRIBUTE_MAX_VALUE_LENGTH))
    if attr.version_value is not None:
        n += 1
        version = attr.version_value
        if not _SEMVER.fullmatch(version):
            errs.append(invalid(child(path, "version"), version, NOT_SEMVER))
        if len(version) > ATTRIBUTE_MAX_VALUE_LENGTH:
            errs.append(too_long(child(path, "version"), ATTRIBUTE_MAX_VALUE_LENGTH))
    if n == 0:
        errs.append(required(path, ONE_VALUE))
    elif n > 1:
        errs.append(invalid(path, _attribute_value(attr), ONE_VALUE))
    return errs


@lru_cache(maxsize=1 << 12)
def _version_ok(version: str) -> bool:
    return len(version) <= ATTRIBUTE_MAX_VALUE_LENGTH and _SEMVER.fullmatch(version) is not None


def _attribute_ok(attr: DeviceAttribute) -> bool:
    """Whether _attribute finds nothing, cheaply (the common case, for every device of every slice)."""
    s, v = attr.string_value, attr.version_value
    n = (attr.int_value is not None) + (attr.bool_value is not None) + (s is not None) + (v is not None)
    return n == 1 and (s is None or len(s) <= ATTRIBUTE_MAX_VALUE_LENGTH) and (v is None or _version_ok(v))


def _device(device: Device, path: str) -> list[FieldError]:
    errs = dns_label(device.name, child(path, "name"))
    attrs, capacity = device.attributes, device.capacity
    total = len(attrs) + len(capacity)
    if total > ATTRIBUTES_AND_CAPACITIES_MAX:
        errs.append(
            invalid(
                path,
                total,
                f"the total number of attributes and capacities must not exceed {ATTRIBUTES_AND_CAPACITIES_MAX}",
            )
        )
    # Paths are built, and keys sorted (Go's map order is random), only when something is wrong.
    if not all(not qualified_name_problems(n) and _attribute_ok(a) for n, a in attrs.items()):
        for name in sorted(attrs):
            p = key(child(path, "attributes"), _truncated(name))
            errs += qualified_name(name, p)
            errs += _attribute(attrs[name], p)
    if any(qualified_name_problems(n) for n in capacity):
        for name in sorted(capacity):
            errs += qualified_name(name, key(child(path, "capacity"), _truncated(name)))
    return errs


@validator("ResourceSlice")
def validate_resource_slice(rs: ResourceSlice) -> list[FieldError]:
    errs = validate_object_meta(rs.metadata, False, name_is_dns_subdomain)
    spec = rs.spec
    errs += validate_csi_driver_name(spec.driver, "spec.driver")
    errs += _pool_name(spec.pool.name, "spec.pool.name")
    pool = spec.pool
    if pool.resource_slice_count <= 0:
        errs.append(invalid("spec.pool.resourceSliceCount", pool.resource_slice_count, "must be greater than zero"))
    if pool.generation < 0:
        errs.append(invalid("spec.pool.generation", pool.generation, "must be greater than or equal to zero"))
    set_fields: list[str] = []
    if spec.node_name is not None:
        if spec.node_name:
            set_fields.append("`nodeName`")
            errs += dns_subdomain(spec.node_name, "spec.nodeName")
        else:
            errs.append(invalid("spec.nodeName", "", "must be either unset or set to a non-empty string"))
    if spec.node_selector is not None:
        set_fields.append("`nodeSelector`")
        errs += validate_node_selector(spec.node_selector, "spec.nodeSelector")
        if len(spec.node_selector.node_selector_terms) != 1:
            errs.append(
                invalid(
                    "spec.nodeSelector.nodeSelectorTerms",
                    _node_selector_terms_value(spec.node_selector),
                    "must have exactly one node selector term",
                )
            )
    if spec.all_nodes is not None:
        if spec.all_nodes:
            set_fields.append("`allNodes`")
        else:
            errs.append(invalid("spec.allNodes", False, "must be either unset or set to true"))
    if not set_fields:
        errs.append(required("spec", ONE_OF_NODE))
    elif len(set_fields) > 1:
        errs.append(invalid("spec", "{" + ", ".join(set_fields) + "}", ONE_OF_NODE + ", but multiple fields are set"))
    errs += validate_list(spec.devices, RESOURCE_SLICE_MAX_DEVICES, _device, "spec.devices")
    errs += validate_unique([d.name for d in spec.devices], "spec.devices", "name")
    return errs
