"""resource.k8s.io/v1 kinds (Dynamic Resource Allocation) as kube-apiserver v1.34 validates them on
create (pkg/apis/resource/validation): ResourceClaim, ResourceClaimTemplate, DeviceClass, ResourceSlice.

Fields of alpha features that a default v1.34 API server drops before validating (a slice's
perDeviceNodeSelection and sharedCounters, a device's taints, counters and own node fields) are
ignored here as well. CEL selectors are compiled with the scheduler's own CEL environment, their
errors worded as cel-go words them; the cost limit and regular expressions given to matches() are
not checked, nor is adminAccess (allowed only in namespaces labelled for it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, TypeVar

from kubesched.api.core import NodeSelector
from kubesched.api.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    Device,
    DeviceAttribute,
    DeviceClaim,
    DeviceClass,
    DeviceRequest,
    DeviceSelector,
    DeviceToleration,
    OpaqueDeviceConfiguration,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    _CountedDeviceRequest,
)
from kubesched.api.validation.meta import (
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_label_name,
    validate_label_value,
    validate_object_meta,
    validate_template_object_meta,
)
from kubesched.api.validation.node_selector import validate_node_selector
from kubesched.api.validation.registry import validator
from kubesched.api.validation.volumes import validate_csi_driver_name
from kubesched.gocompat.field import (
    FieldError,
    GoJSON,
    child,
    duplicate,
    index,
    invalid,
    key,
    not_supported,
    required,
    too_long,
    too_many,
)
from kubesched.gocompat.names import regex_error

T = TypeVar("T")

# Limits of resource.k8s.io (pkg/apis/resource/types.go).
DEVICE_REQUESTS_MAX = 32
DEVICE_CONSTRAINTS_MAX = 32
DEVICE_CONFIG_MAX = 32
DEVICE_SELECTORS_MAX = 32
FIRST_AVAILABLE_MAX = 8
CEL_EXPRESSION_MAX_LENGTH = 10 * 1024
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024
POOL_NAME_MAX_LENGTH = 253
RESOURCE_SLICE_MAX_DEVICES = 128
ATTRIBUTES_AND_CAPACITIES_MAX = 32
DEVICE_MAX_DOMAIN_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32
ATTRIBUTE_MAX_VALUE_LENGTH = 64
_MAX_KEY_LENGTH = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH

ALLOCATION_MODES = [ALLOCATION_MODE_ALL, ALLOCATION_MODE_EXACT_COUNT]
TOLERATION_OPERATORS = ["Equal", "Exists"]
TAINT_EFFECTS = ["NoExecute", "NoSchedule"]

REQUEST_REF = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
ONE_OF_REQUEST = "exactly one of `exactly` or `firstAvailable` is required"
ONE_OF_NODE = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
ONE_VALUE = "exactly one value must be specified"
NOT_SEMVER = "must be a string compatible with semver.org spec 2.0.0"

C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER = re.compile(C_IDENTIFIER_FMT)
C_IDENTIFIER_ERR = regex_error(
    "a valid C identifier must start with alphabetic character or '_', "
    "followed by a string of alphanumeric characters or '_'",
    C_IDENTIFIER_FMT,
    "my_name",
    "MY_NAME",
    "MyName",
)
_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
    r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?"
)


# ---------------------------------------------------------------- lists, names and strings


def _validate_list(
    items: Sequence[T], limit: int, check: Callable[[T, str], list[FieldError]], path: str
) -> list[FieldError]:
    """validateSlice: every item, then the length."""
    if not items:
        return []
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        errs += check(item, index(path, i))
    if len(items) > limit:
        errs.append(too_many(path, len(items), limit))
    return errs


def _duplicates(keys: Sequence[str], path: str, field: str = "") -> list[FieldError]:
    """validateSet's uniqueness check: each repeat at its own index (and key field)."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, k in enumerate(keys):
        if k in seen:
            errs.append(duplicate(child(index(path, i), field) if field else index(path, i), k))
        seen.add(k)
    return errs


def _dns_label(name: str, path: str) -> list[FieldError]:
    return [invalid(path, name, m) for m in name_is_dns_label(name, False)]


def _dns_subdomain(name: str, path: str) -> list[FieldError]:
    return [invalid(path, name, m) for m in name_is_dns_subdomain(name, False)]


def _c_identifier(name: str, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(name) > DEVICE_MAX_ID_LENGTH:
        errs.append(too_long(path, DEVICE_MAX_ID_LENGTH))
    if not _C_IDENTIFIER.fullmatch(name):
        errs.append(invalid(path, name, C_IDENTIFIER_ERR))
    return errs


@lru_cache(maxsize=1 << 12)
def _qualified_name_problems(name: str) -> tuple[FieldError, ...]:
    """validateQualifiedName at an empty path: an optional domain (a driver name) and a C identifier."""
    if not name:
        return (required("", "name required"),)
    parts = name.split("/")
    errs: list[FieldError] = []
    if len(parts) == 1:
        errs += _c_identifier(parts[0], "")
    elif len(parts) == 2:
        if not parts[0]:
            errs.append(required("", "the domain must not be empty"))
        else:
            errs += validate_csi_driver_name(parts[0], "")
        if not parts[1]:
            errs.append(required("", "the name must not be empty"))
        else:
            errs += _c_identifier(parts[1], "")
    return tuple(errs)


def _qualified_name(name: str, path: str) -> list[FieldError]:
    """The problems of a qualified name (memoized: attribute names repeat on every device), at `path`."""
    return [FieldError(e.type, path, e.value, e.detail) for e in _qualified_name_problems(name)]


def _fully_qualified_name(name: str, path: str) -> list[FieldError]:
    errs = _qualified_name(name, path)
    if name and "/" not in name:
        errs.append(invalid(path, name, "must include a domain"))
    return errs


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
        errs += _dns_subdomain(part, path)
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


# ---------------------------------------------------------------- CEL


_UNDECLARED_DEVICE_FIELD = re.compile(
    r"^(compilation failed: ERROR: <input>:)\d+:\d+: undeclared reference to 'device\.(\w+)[\w.]*' \(in container ''\)"
)
_NO_OVERLOAD = re.compile(r"found no matching overload for '([^']+)' applied to '\((.*)\)'")


def _split_types(text: str) -> list[str]:
    """The argument types of a CEL overload message, split at top-level commas."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return out


def _caret_index(expression: str, message: str) -> int:
    """The offset in `expression` of the position a compile error names (line:column, 1-based)."""
    m = re.search(r"<input>:(\d+):(\d+):", message)
    if m is None:
        return -1
    line, column = int(m.group(1)), int(m.group(2))
    lines = expression.split("\n")
    if line > len(lines):
        return -1
    return sum(len(x) + 1 for x in lines[: line - 1]) + column - 1


@lru_cache(maxsize=1 << 10)
def cel_compile_error(expression: str) -> str:
    """Why kube-apiserver would refuse a CEL selector ("" when it compiles).

    The scheduler's evaluator is cel-cpp; where its compile errors are worded differently
    from cel-go's (a missing field of `device`, a method called on the wrong types, an empty
    expression), they are reworded.
    """
    # Imported here: the evaluator lives with the DynamicResources plugin and is only needed
    # when there are selectors to check.
    from kubesched.plugins.dynamicresources.cel import compile_expression

    error = compile_expression(expression).error
    if not error:
        return ""
    m = _UNDECLARED_DEVICE_FIELD.match(error)
    if m is not None:
        at = re.search(r"\bdevice\s*\.\s*" + re.escape(m.group(2)) + r"\b", expression)
        if at is not None:
            dot = expression.index(".", at.start())
            line = expression.count("\n", 0, dot) + 1
            column = dot - (expression.rfind("\n", 0, dot) + 1)
            text = expression.split("\n")[line - 1]
            return (
                f"{m.group(1)}{line}:{column + 1}: undefined field '{m.group(2)}'\n | {text}\n | " + "." * column + "^"
            )
    m = _NO_OVERLOAD.search(error)
    if m is not None:
        at = _caret_index(expression, error)
        name = m.group(1)
        before = expression[:at].rstrip() if at >= 0 else ""
        if before.endswith(name) and before[: len(before) - len(name)].rstrip().endswith("."):
            types = _split_types(m.group(2))
            member = f"{types[0]}.({', '.join(types[1:])})"
            error = error[: m.start(2) - 1] + member + error[m.end(2) + 1 :]
    if expression == "":
        error = error.replace("<input>:1:1:", "<input>:1:0:", 1)
    return error


def _selector(sel: DeviceSelector, path: str) -> list[FieldError]:
    if sel.cel is None:
        return [required(child(path, "cel"))]
    expression = sel.cel.expression
    path = child(path, "cel", "expression")
    if len(expression) > CEL_EXPRESSION_MAX_LENGTH:
        return [too_long(path, CEL_EXPRESSION_MAX_LENGTH)]
    error = cel_compile_error(expression)
    return [invalid(path, expression, error)] if error else []


# ---------------------------------------------------------------- claims


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
        errs += _dns_subdomain(req.device_class_name, child(path, "deviceClassName"))
    errs += _validate_list(req.selectors, DEVICE_SELECTORS_MAX, _selector, child(path, "selectors"))
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
    errs = _dns_label(req.name, child(path, "name"))
    if req.exactly is None and not req.first_available:
        errs.append(required(path, ONE_OF_REQUEST))
    elif req.exactly is not None and req.first_available:
        errs.append(invalid(path, None, ONE_OF_REQUEST + ", but multiple fields are set"))
    elif req.first_available:
        subs = child(path, "firstAvailable")

        def sub(s: Any, p: str) -> list[FieldError]:
            return _dns_label(s.name, child(p, "name")) + _counted_request(s, p)

        errs += _validate_list(req.first_available, FIRST_AVAILABLE_MAX, sub, subs)
        errs += _duplicates([s.name for s in req.first_available], subs, "name")
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
            errs += _dns_label(segment, p)
        subs = known.get(segments[0], set())
        found = segments[0] in known and (len(segments) == 1 or (subs is not None and segments[1] in subs))
        if not found:
            errs.append(invalid(p, name, REQUEST_REF))
        return errs

    return _validate_list(names, DEVICE_REQUESTS_MAX, ref, path) + _duplicates(names, path)


def validate_device_claim(claim: DeviceClaim, path: str) -> list[FieldError]:
    """validateDeviceClaim: requests, then constraints, then configuration."""
    known: dict[str, set[str] | None] = {
        r.name: ({s.name for s in r.first_available} if r.first_available else None) for r in claim.requests
    }
    requests = child(path, "requests")
    errs = _validate_list(claim.requests, DEVICE_REQUESTS_MAX, _request, requests)
    errs += _duplicates([r.name for r in claim.requests], requests, "name")

    def constraint(c: Any, p: str) -> list[FieldError]:
        errs = _request_refs(c.requests, known, child(p, "requests"))
        if c.match_attribute is not None:
            errs += _fully_qualified_name(c.match_attribute, child(p, "matchAttribute"))
        elif c.distinct_attribute is not None:
            errs += _fully_qualified_name(c.distinct_attribute, child(p, "distinctAttribute"))
        else:
            errs.append(required(child(p, "matchAttribute")))
        return errs

    def config(c: Any, p: str) -> list[FieldError]:
        return _request_refs(c.requests, known, child(p, "requests")) + _opaque(c.opaque, p)

    errs += _validate_list(claim.constraints, DEVICE_CONSTRAINTS_MAX, constraint, child(path, "constraints"))
    errs += _validate_list(claim.config, DEVICE_CONFIG_MAX, config, child(path, "config"))
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
    errs += _validate_list(dc.spec.selectors, DEVICE_SELECTORS_MAX, _selector, "spec.selectors")
    errs += _validate_list(dc.spec.config, DEVICE_CONFIG_MAX, lambda c, p: _opaque(c.opaque, p), "spec.config")
    return errs


# ---------------------------------------------------------------- slices


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
    errs = _dns_label(device.name, child(path, "name"))
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
    if not all(not _qualified_name_problems(n) and _attribute_ok(a) for n, a in attrs.items()):
        for name in sorted(attrs):
            p = key(child(path, "attributes"), _truncated(name))
            errs += _qualified_name(name, p)
            errs += _attribute(attrs[name], p)
    if any(_qualified_name_problems(n) for n in capacity):
        for name in sorted(capacity):
            errs += _qualified_name(name, key(child(path, "capacity"), _truncated(name)))
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
            errs += _dns_subdomain(spec.node_name, "spec.nodeName")
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
    errs += _validate_list(spec.devices, RESOURCE_SLICE_MAX_DEVICES, _device, "spec.devices")
    errs += _duplicates([d.name for d in spec.devices], "spec.devices", "name")
    return errs
