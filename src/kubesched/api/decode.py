"""Decoding manifests (parsed YAML/JSON mappings) into typed objects, with errors that name the field.

Quantities are checked here, once, so that the hot path can trust them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec

from kubesched.api.apps import ReplicaSet, StatefulSet
from kubesched.api.core import (
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    ReplicationController,
    Service,
)
from kubesched.api.quantity import QuantityError, parse_quantity
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
    "PriorityClass": PriorityClass,
    "PodDisruptionBudget": PodDisruptionBudget,
    "PersistentVolume": PersistentVolume,
    "PersistentVolumeClaim": PersistentVolumeClaim,
    "StorageClass": StorageClass,
    "CSINode": CSINode,
    "CSIDriver": CSIDriver,
    "CSIStorageCapacity": CSIStorageCapacity,
    "VolumeAttachment": VolumeAttachment,
}

NAMESPACED = {
    "Pod",
    "Service",
    "ReplicationController",
    "ReplicaSet",
    "StatefulSet",
    "PodDisruptionBudget",
    "PersistentVolumeClaim",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "CSIStorageCapacity",
}


def register_kind(kind: str, struct: type[Any], namespaced: bool) -> None:
    """Let another module (e.g. DRA objects) teach the decoder a kind."""
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
        msg, path = _path_from_msgspec(err)
        raise DecodeError(msg, path) from None
    _check_quantities(kind, raw)
    return obj


_QUANTITY_MAPS = {
    "Pod": (
        ("spec", "containers", "*", "resources", "requests"),
        ("spec", "containers", "*", "resources", "limits"),
        ("spec", "initContainers", "*", "resources", "requests"),
        ("spec", "initContainers", "*", "resources", "limits"),
        ("spec", "overhead"),
        ("spec", "resources", "requests"),
        ("spec", "resources", "limits"),
    ),
    "Node": (("status", "capacity"), ("status", "allocatable")),
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


def _check_quantities(kind: str, raw: Mapping[str, Any]) -> None:
    for path in _QUANTITY_FIELDS.get(kind, ()):
        for where, q in _walk(raw, path, ""):
            if q is None:
                continue
            try:
                parse_quantity(q)
            except QuantityError as err:
                raise DecodeError(f"{q!r}: {err}", where) from None
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
                    raise DecodeError(f"{q!r}: {err}", f"{where}.{name}") from None


# resource.k8s.io kinds register themselves on import.
import kubesched.api.resource  # noqa: E402, F401
