"""Decoding manifests (parsed YAML/JSON mappings) into typed objects, with errors that name the field.

Quantities are checked here, once, so that the hot path can trust them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from kubesched.api.apps import DaemonSet, Deployment, ReplicaSet, StatefulSet
from kubesched.api.batch import CronJob, Job
from kubesched.api.core import (
    Container,
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    ReplicationController,
    Service,
)
from kubesched.api.meta import K8sStruct
from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.api.resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from kubesched.api.scheduling import PodDisruptionBudget, PriorityClass
from kubesched.api.storage import CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment

KINDS: dict[str, type[Any]] = {
    "Pod": Pod,
    "Node": Node,
    "Namespace": Namespace,
    "Service": Service,
    "ReplicationController": ReplicationController,
    "ReplicaSet": ReplicaSet,
    "StatefulSet": StatefulSet,
    "Deployment": Deployment,
    "DaemonSet": DaemonSet,
    "Job": Job,
    "CronJob": CronJob,
    "PriorityClass": PriorityClass,
    "PodDisruptionBudget": PodDisruptionBudget,
    "PersistentVolume": PersistentVolume,
    "PersistentVolumeClaim": PersistentVolumeClaim,
    "StorageClass": StorageClass,
    "CSINode": CSINode,
    "CSIDriver": CSIDriver,
    "CSIStorageCapacity": CSIStorageCapacity,
    "VolumeAttachment": VolumeAttachment,
    "DeviceClass": DeviceClass,
    "ResourceClaim": ResourceClaim,
    "ResourceClaimTemplate": ResourceClaimTemplate,
    "ResourceSlice": ResourceSlice,
}

NAMESPACED = {
    "Pod",
    "Service",
    "ReplicationController",
    "ReplicaSet",
    "StatefulSet",
    "Deployment",
    "DaemonSet",
    "Job",
    "CronJob",
    "PodDisruptionBudget",
    "PersistentVolumeClaim",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "CSIStorageCapacity",
}


def register_kind(kind: str, struct: type[Any], namespaced: bool) -> None:
    """Teach the decoder a kind the API types above do not have (an out-of-tree plugin's, e.g. PodGroup)."""
    KINDS[kind] = struct
    if namespaced:
        NAMESPACED.add(kind)


class DecodeError(ValueError):
    """A manifest that does not fit its kind: `field` is a path like spec.containers[0].resources."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.field = field


_PATH = re.compile(r" - at `\$(?P<path>[^`]*)`$")


def _path_from_msgspec(err: msgspec.ValidationError) -> tuple[str, str]:
    text = str(err)
    m = _PATH.search(text)
    if m is None:
        return text, ""
    return text[: m.start()], m.group("path").lstrip(".")


def decode(kind: str, raw: Mapping[str, Any]) -> Any:
    """A typed object of `kind` from a mapping; raises DecodeError naming the field."""
    struct = KINDS.get(kind)
    if struct is None:
        raise DecodeError(f"unknown kind {kind!r}", "kind")
    try:
        obj = msgspec.convert(raw, struct, strict=False)
    except msgspec.ValidationError as err:
        # null is every field's zero value to the API server (`spec: null`, `creationTimestamp: null`).
        stripped = _without_nulls(raw)
        try:
            obj = msgspec.convert(stripped, struct, strict=False)
        except msgspec.ValidationError:
            msg, path = _path_from_msgspec(err)
            raise DecodeError(msg, path) from None
        raw = stripped
    # The decoded maps hold the manifest's own quantity values (msgspec converts none of str, int, float and
    # refuses the rest): when the typed check passes, the walk over the manifest would pass too.
    typed = _TYPED_QUANTITY_CHECKS.get(kind)
    if typed is None or not typed(obj):
        _check_quantities(kind, raw)
    return obj


def _without_nulls(value: Any) -> Any:
    """`value` with every null member of a mapping left out (list items stay: a null item is an error)."""
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


_POD_SPEC_QUANTITIES = (
    ("containers", "*", "resources", "requests"),
    ("containers", "*", "resources", "limits"),
    ("initContainers", "*", "resources", "requests"),
    ("initContainers", "*", "resources", "limits"),
    ("overhead",),
    ("resources", "requests"),
    ("resources", "limits"),
)
_TEMPLATE_QUANTITIES = tuple(("spec", "template", "spec", *p) for p in _POD_SPEC_QUANTITIES)
_QUANTITY_MAPS = {
    "Pod": tuple(("spec", *p) for p in _POD_SPEC_QUANTITIES),
    "Node": (("status", "capacity"), ("status", "allocatable")),
    # A controller's pod template holds a pod spec: the same quantities, one level down.
    "ReplicationController": _TEMPLATE_QUANTITIES,
    "ReplicaSet": _TEMPLATE_QUANTITIES,
    "StatefulSet": (
        *_TEMPLATE_QUANTITIES,
        ("spec", "volumeClaimTemplates", "*", "spec", "resources", "requests"),
        ("spec", "volumeClaimTemplates", "*", "spec", "resources", "limits"),
    ),
    "Deployment": _TEMPLATE_QUANTITIES,
    "DaemonSet": _TEMPLATE_QUANTITIES,
    "Job": _TEMPLATE_QUANTITIES,
    # A CronJob's pods come from the template of its jobs' template.
    "CronJob": tuple(("spec", "jobTemplate", *p) for p in _TEMPLATE_QUANTITIES),
    "PersistentVolume": (("spec", "capacity"),),
    "PersistentVolumeClaim": (("spec", "resources", "requests"), ("status", "capacity")),
}
# Single quantities (not maps) by kind: path -> field.
_QUANTITY_FIELDS = {
    "CSIStorageCapacity": (("capacity",), ("maximumVolumeSize",)),
}


def _walk(node: Any, path: tuple[str, ...], prefix: str) -> list[tuple[str, Any]]:
    if not path:
        return [(prefix, node)]
    head, rest = path[0], path[1:]
    if head == "*":
        if not isinstance(node, list):
            return []
        out = []
        for i, item in enumerate(node):
            out += _walk(item, rest, f"{prefix}[{i}]")
        return out
    if not isinstance(node, Mapping) or head not in node:
        return []
    return _walk(node[head], rest, f"{prefix}.{head}" if prefix else head)


def _values(node: Any, path: tuple[str, ...]) -> list[Any]:
    """What _walk finds, without the field paths (which only an error needs)."""
    nodes = [node]
    for head in path:
        found: list[Any] = []
        for n in nodes:
            if head == "*":
                if isinstance(n, list):
                    found.extend(n)
            elif n.__class__ is dict:  # what YAML and JSON give; isinstance(n, Mapping) is slow
                if head in n:
                    found.append(n[head])
            elif isinstance(n, Mapping) and head in n:
                found.append(n[head])
        if not found:
            return found
        nodes = found
    return nodes


# Quantities already parsed: the same few strings fill every manifest of a large scenario. Texts apart
# (a set of str, tested without building a key), numbers by (type, value), as 1 == 1.0 == True.
_VALID_TEXTS: set[str] = set()
_VALID_NUMBERS: set[tuple[type, Any]] = set()
_VALID_QUANTITIES_LIMIT = 1 << 14


def _valid_quantity(q: Any) -> bool:
    t = q.__class__
    if t is str:
        if q in _VALID_TEXTS:
            return True
        known: set[Any] = _VALID_TEXTS
        key: Any = q
    elif t is int or t is float:
        key = (t, q)
        if key in _VALID_NUMBERS:
            return True
        known = _VALID_NUMBERS
    else:
        return False
    try:
        parse_quantity(q)
    except QuantityError:
        return False
    if len(known) >= _VALID_QUANTITIES_LIMIT:
        known.clear()
    known.add(key)
    return True


def _list_valid(rl: dict[str, Any]) -> bool:
    """Whether every quantity of a resource list parses (a text seen valid before costs one set lookup)."""
    texts = _VALID_TEXTS
    for q in rl.values():  # noqa: SIM110 - a loop: all() over a generator costs a frame per list
        if q not in texts and not _valid_quantity(q):
            return False
    return True


def _quantities_valid(kind: str, raw: Mapping[str, Any]) -> bool:
    """Whether _check_quantities would pass, quickly; False only means "look again, slowly"."""
    for path in _QUANTITY_FIELDS.get(kind, ()):
        for q in _values(raw, path):
            if q is not None and not _valid_quantity(q):
                return False
    for path in _QUANTITY_MAPS.get(kind, ()):
        for rl in _values(raw, path):
            if rl is None:
                continue
            if rl.__class__ is not dict and not isinstance(rl, Mapping):
                return False
            for q in rl.values():
                if not _valid_quantity(q):
                    return False
    return True


def _quantity_error(q: Any, err: QuantityError, where: str) -> DecodeError:
    if isinstance(q, float) and not math.isfinite(q):
        # YAML's .nan and .inf have no JSON form: the API server never gets as far as the quantity.
        return DecodeError(f"json: unsupported value: {'NaN' if math.isnan(q) else '+Inf' if q > 0 else '-Inf'}", where)
    return DecodeError(f"{q!r}: {err}", where)


def _check_quantities(kind: str, raw: Mapping[str, Any]) -> None:
    if _quantities_valid(kind, raw):
        return
    for path in _QUANTITY_FIELDS.get(kind, ()):
        for where, q in _walk(raw, path, ""):
            if q is None:
                continue
            try:
                parse_quantity(q)
            except QuantityError as err:
                raise _quantity_error(q, err, where) from None
    for path in _QUANTITY_MAPS.get(kind, ()):
        for where, rl in _walk(raw, path, ""):
            if rl is None:
                continue
            if not isinstance(rl, Mapping):
                raise DecodeError("expected a map of resource quantities", where)
            for name, q in rl.items():
                try:
                    parse_quantity(q)
                except QuantityError as err:
                    raise _quantity_error(q, err, f"{where}[{name}]") from None


# ---------------------------------------------------------------- from JSON bytes (the API server's answers)


class ListMeta(K8sStruct):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")


class DecodedList(msgspec.Struct):
    """A LIST answer: its items, typed, and where it stands."""

    items: list[Any]
    resource_version: str
    continue_token: str


def _container_quantities_valid(containers: list[Container]) -> bool:
    for c in containers:
        r = c.resources
        if not (_list_valid(r.requests) and _list_valid(r.limits)):
            return False
    return True


def _pod_quantities_valid(pod: Pod) -> bool:
    spec = pod.spec
    if not (_container_quantities_valid(spec.containers) and _container_quantities_valid(spec.init_containers)):
        return False
    if spec.overhead and not _list_valid(spec.overhead):
        return False
    res = spec.resources
    return res is None or (_list_valid(res.requests) and _list_valid(res.limits))


def _node_quantities_valid(node: Node) -> bool:
    st = node.status
    return _list_valid(st.capacity) and _list_valid(st.allocatable)


# The typed check of the quantities each kind holds; kinds with quantities not listed take the slow path.
_TYPED_QUANTITY_CHECKS: dict[str, Any] = {"Pod": _pod_quantities_valid, "Node": _node_quantities_valid}


def _trusted(kind: str, obj: Any) -> bool:
    """Whether an object decoded straight from JSON needs no second look (its quantities parse)."""
    check = _TYPED_QUANTITY_CHECKS.get(kind)
    if check is not None:
        return bool(check(obj))
    return kind not in _QUANTITY_MAPS and kind not in _QUANTITY_FIELDS


_DECODERS: dict[str, tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any]]] = {}


def _decoders(kind: str) -> tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any]]:
    """(object, list) decoders for a kind, made once: msgspec reads JSON straight into the structs."""
    got = _DECODERS.get(kind)
    if got is None:
        struct = KINDS.get(kind)
        if struct is None:
            raise DecodeError(f"unknown kind {kind!r}", "kind")
        listed = msgspec.defstruct(
            f"{kind}List",
            [
                ("metadata", ListMeta, msgspec.field(default_factory=ListMeta)),
                ("items", list[struct], msgspec.field(default_factory=list)),  # type: ignore[valid-type]
            ],
            kw_only=True,
        )
        got = (msgspec.json.Decoder(struct, strict=False), msgspec.json.Decoder(listed, strict=False))
        _DECODERS[kind] = got
    return got


def _loads(data: bytes) -> Any:
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as err:
        raise DecodeError(f"malformed JSON: {err}") from None


def decode_json(kind: str, data: bytes) -> Any:
    """`decode` of a JSON document: read straight into the struct, or (nulls, odd quantities) as `decode` does."""
    try:
        obj = _decoders(kind)[0].decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return decode(kind, _loads(data))
    return obj if _trusted(kind, obj) else decode(kind, _loads(data))


def decode_json_list(kind: str, data: bytes) -> DecodedList | None:
    """A LIST answer whose every item decodes cleanly, straight from JSON; None when one does not (go slowly)."""
    try:
        doc = _decoders(kind)[1].decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    if not all(_trusted(kind, obj) for obj in doc.items):
        return None
    return DecodedList(doc.items, doc.metadata.resource_version, doc.metadata.continue_)
