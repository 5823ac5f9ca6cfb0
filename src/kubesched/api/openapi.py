"""The kinds kube-apiserver v1.34.1 serves and the fields of each, for strict decoding.

The table (openapi-v1.34.1.json, written by tools/openapi_schema.py from a real
kube-apiserver's discovery and OpenAPI v3 documents) lists every served kind with its
group/version and whether it is namespaced, and every field of every type with its
JSON type. With it a manifest is checked as the API server decodes it with
`fieldValidation=Strict` (kubectl's default): a field the type does not declare is an
unknown field, a value of the wrong JSON type is refused in encoding/json's words.

Checking is fast for the common case (a msgspec conversion into structs generated
from the table, in C); only a manifest that fails it is walked in Python to name
every problem.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Annotated, Any

import msgspec

from kubesched.api.quantity import QUANTITY_FORMAT_ERROR

TypeExpr = Any  # "string" | "@Definition" | ["list", TypeExpr] | ["map", TypeExpr]


@dataclass(frozen=True)
class KindInfo:
    """A kind as the API server serves it."""

    api_version: str
    kind: str
    namespaced: bool
    definition: str

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]


@cache
def _table() -> dict[str, Any]:
    text = resources.files("kubesched.api").joinpath("openapi-v1.34.1.json").read_text()
    return json.loads(text)


@cache
def _kinds() -> dict[tuple[str, str], KindInfo]:
    return {(gv, kind): KindInfo(gv, kind, namespaced, d) for gv, kind, namespaced, d in _table()["kinds"]}


def served(api_version: str, kind: str) -> KindInfo | None:
    """The kind as served at `api_version`, or None if the API server serves no such kind there."""
    return _kinds().get((api_version, kind))


@cache
def builtin_groups() -> frozenset[str]:
    """API groups of Kubernetes itself (\"\" is core); any other group is a custom resource's."""
    served_groups = {info.group for info in _kinds().values()}
    # Groups whose versions a default 1.34 server does not serve (beta/alpha APIs), still Kubernetes' own.
    return frozenset(served_groups | {"metrics.k8s.io", "storagemigration.k8s.io", "internal.apiserver.k8s.io"})


@cache
def served_kind_names() -> frozenset[str]:
    return frozenset(kind for _, kind in _kinds())


def versions_of(kind: str) -> list[str]:
    """The group/versions serving `kind`, for error messages."""
    return sorted(gv for gv, k in _kinds() if k == kind)


# ---------------------------------------------------------------- the fast check

_INT32 = Annotated[int, msgspec.Meta(ge=-(1 << 31), le=(1 << 31) - 1)]
_INT64 = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]
_SCALARS: dict[str, Any] = {
    "string": str,
    "bytes": str,
    "time": Any,  # a YAML timestamp or a string; msgspec cannot take both in one union
    "int32": _INT32,
    "int64": _INT64,
    "number": int | float,
    "boolean": bool,
    "quantity": str | int | float,
    "int-or-string": int | str,
    "any": Any,
}


def _python_type(expr: TypeExpr, building: set[str]) -> Any:
    if isinstance(expr, list):
        inner = _python_type(expr[1], building)
        return list[inner | None] if expr[0] == "list" else dict[str, inner | None]  # type: ignore[valid-type]
    if expr.startswith("@"):
        return _struct(expr[1:], building)
    return _SCALARS[expr]


def _struct(name: str, building: set[str]) -> Any:
    """A msgspec type accepting exactly the values the definition accepts (null anywhere, as Go does)."""
    found = _STRUCTS.get(name)
    if found is not None:
        return found
    spec = _table()["types"][name]
    if not isinstance(spec, dict):
        return _python_type(spec, building)
    if name in building:
        return Any  # a recursive type (CRD schemas): the slow walk checks what is below
    building.add(name)
    fields = [
        (f"f{i}", _python_type(t, building) | None, msgspec.field(default=None, name=field))
        for i, (field, t) in enumerate(spec.items())
    ]
    building.discard(name)
    struct = msgspec.defstruct(
        "S_" + name.replace(".", "_"), fields, forbid_unknown_fields=True, kw_only=True, gc=False
    )
    _STRUCTS[name] = struct
    return struct


_STRUCTS: dict[str, Any] = {}


# ---------------------------------------------------------------- problems, in the API server's words


@dataclass(frozen=True)
class FieldProblems:
    """What strict decoding refuses: a value of the wrong type (fatal whatever the validation level),
    and fields the type does not declare (refused, warned about or dropped as the level says)."""

    type_error: tuple[str, str] | None  # (field path, encoding/json's message)
    unknown: tuple[str, ...]  # field paths
    # Where the unknown fields are: (the mapping holding one, its key), for dropping them as the server does.
    unknown_at: tuple[tuple[dict[str, Any], str], ...] = ()

    def drop_unknown(self) -> None:
        """Remove the unknown fields from the manifest checked (the API server never stores them)."""
        for holder, key in self.unknown_at:
            holder.pop(key, None)


def check(info: KindInfo, raw: Any) -> FieldProblems | None:
    """None when `raw` decodes strictly as `info`'s type; else what the API server would say."""
    struct = _STRUCTS.get(info.definition) or _struct(info.definition, set())
    try:
        msgspec.convert(raw, struct, strict=True)
        return None
    except msgspec.ValidationError:
        pass
    walk = _Walk()
    walk.value(raw, "@" + info.definition, "", "", info.kind)
    if walk.type_error is None and not walk.unknown:
        return None  # e.g. 80.0 for an int32: YAML's float, which the API server's YAML reader takes as 80
    return FieldProblems(walk.type_error, tuple(sorted(walk.unknown)), tuple(walk.unknown_at))


def _go_type(expr: TypeExpr) -> str:
    if isinstance(expr, list):
        return ("[]" if expr[0] == "list" else "map[string]") + _go_type(expr[1])
    if expr.startswith("@"):
        spec = _table()["types"][expr[1:]]
        if not isinstance(spec, dict):
            return _go_type(spec)
        parts = expr[1:].split(".")
        return f"{parts[-2]}.{parts[-1]}"
    return {
        "string": "string",
        "bytes": "[]uint8",
        "time": "v1.Time",
        "int32": "int32",
        "int64": "int64",
        "number": "float64",
        "boolean": "bool",
        "quantity": "resource.Quantity",
        "int-or-string": "intstr.IntOrString",
    }.get(expr, "interface {}")


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str | datetime.date):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _number_text(value: int | float) -> str:
    """The number as the JSON text the API server received (YAML's float as Go formats it)."""
    return str(value) if isinstance(value, int) else repr(value)


class _Walk:
    """A manifest against a type, collecting the first type error and every unknown field."""

    def __init__(self) -> None:
        self.type_error: tuple[str, str] | None = None
        self.unknown: list[str] = []
        self.unknown_at: list[tuple[dict[str, Any], str]] = []

    def mismatch(self, value: Any, expr: TypeExpr, path: str, go_path: str, struct: str, number: bool) -> None:
        if self.type_error is not None:
            return
        what = _json_type(value)
        if number:
            what = f"number {_number_text(value)}"
        if go_path:
            where = f"Go struct field {struct}.{go_path}"
        else:
            where = "Go value"
        self.type_error = (path, f"json: cannot unmarshal {what} into {where} of type {_go_type(expr)}")

    def value(self, value: Any, expr: TypeExpr, path: str, go_path: str, struct: str) -> None:
        if value is None or expr == "any":
            return
        if isinstance(expr, list):
            container = list if expr[0] == "list" else dict
            if not isinstance(value, container):
                self.mismatch(value, expr, path, go_path, struct, False)
                return
            if isinstance(value, list):
                for i, item in enumerate(value):
                    self.value(item, expr[1], f"{path}[{i}]", go_path, struct)
            else:
                for key, item in value.items():
                    self.value(item, expr[1], f"{path}[{key}]" if path else str(key), go_path, struct)
            return
        if expr.startswith("@"):
            name = expr[1:]
            spec = _table()["types"][name]
            if not isinstance(spec, dict):
                self.value(value, spec, path, go_path, struct)
                return
            if not isinstance(value, dict):
                self.mismatch(value, expr, path, go_path, struct, False)
                return
            short = name.rsplit(".", 1)[1]
            for key, item in value.items():
                child = f"{path}.{key}" if path else str(key)
                t = spec.get(key) if isinstance(key, str) else None
                if t is None:
                    self.unknown.append(child)
                    self.unknown_at.append((value, key))
                    continue
                self.value(item, t, child, f"{go_path}.{key}" if go_path else key, short)
            return
        self.scalar(value, expr, path, go_path, struct)

    def scalar(self, value: Any, expr: str, path: str, go_path: str, struct: str) -> None:
        if expr in ("int32", "int64"):
            if isinstance(value, bool) or not isinstance(value, int | float):
                self.mismatch(value, expr, path, go_path, struct, False)
                return
            bits = 31 if expr == "int32" else 63
            fractional = isinstance(value, float) and not value.is_integer()
            if fractional or not -(1 << bits) <= value <= (1 << bits) - 1:
                self.mismatch(value, expr, path, go_path, struct, True)
            return
        ok = {
            "string": lambda v: isinstance(v, str),
            "bytes": lambda v: isinstance(v, str),
            "time": lambda v: isinstance(v, str | datetime.datetime),
            "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
            "boolean": lambda v: isinstance(v, bool),
            "int-or-string": lambda v: isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)),
            "quantity": lambda v: isinstance(v, str | int | float) and not isinstance(v, bool),
        }[expr](value)
        if ok:
            return
        if expr == "quantity":
            if self.type_error is None:
                self.type_error = (path, QUANTITY_FORMAT_ERROR)
            return
        self.mismatch(value, expr, path, go_path, struct, False)
