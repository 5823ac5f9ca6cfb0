"""field.Error of k8s.io/apimachinery, field paths, and error aggregation, as v1.34 prints them.

API validation and configuration validation report in the same form:
`Error()` is "<path>: <type>[: <value>][: <detail>]". Values print like Go:
integers, floats and bools with %v, plain strings with %q, and anything else
(named string types, structs, slices, durations, paths) through encoding/json.
Several errors join as utilerrors.Aggregate does (`aggregate_message`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesched.gocompat.fmt import go_format_float_v
from kubesched.gocompat.jsonenc import go_json
from kubesched.gocompat.strconv import go_quote

REQUIRED = "Required value"
FORBIDDEN = "Forbidden"
INVALID = "Invalid value"
DUPLICATE = "Duplicate value"
NOT_SUPPORTED = "Unsupported value"
NOT_FOUND = "Not found"
TOO_LONG = "Too long"
TOO_MANY = "Too many"
INTERNAL = "Internal error"

_NO_VALUE_TYPES = (REQUIRED, FORBIDDEN, TOO_LONG, INTERNAL)


class GoJSON:
    """A bad value Go would print through encoding/json (a struct, slice, named string...)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


# A *field.Path passed as a value: it has no exported fields, so it prints as {}.
PATH_VALUE = GoJSON({})


def format_value(v: Any) -> str:
    """The bad value as field.Error prints it: by its Go type, which the Python value stands for."""
    if isinstance(v, GoJSON):
        return go_json(v.value)
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return go_format_float_v(v)
    if isinstance(v, str):
        return go_quote(v)
    return go_json(v)


@dataclass
class FieldError:
    """One field.Error: what kind of problem (`type`), where (`field`), the bad value and a detail."""

    type: str
    field: str
    value: Any = None
    detail: str = ""

    def body(self) -> str:
        """ErrorBody: the error without its field path."""
        if self.type in _NO_VALUE_TYPES:
            body = self.type
        else:
            body = f"{self.type}: {format_value(self.value)}"
        if self.detail:
            body += f": {self.detail}"
        return body

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def invalid(path: str, value: Any, detail: str) -> FieldError:
    """field.Invalid."""
    return FieldError(INVALID, path, value, detail)


def required(path: str, detail: str = "") -> FieldError:
    """field.Required (prints no value)."""
    return FieldError(REQUIRED, path, "", detail)


def forbidden(path: str, detail: str) -> FieldError:
    """field.Forbidden (prints no value)."""
    return FieldError(FORBIDDEN, path, "", detail)


def duplicate(path: str, value: Any) -> FieldError:
    """field.Duplicate."""
    return FieldError(DUPLICATE, path, value, "")


def too_long(path: str, limit: int) -> FieldError:
    """field.TooLong as the API server's validators call it (value omitted)."""
    return FieldError(TOO_LONG, path, "", f"may not be more than {limit} bytes")


def too_many(path: str, actual: int, limit: int) -> FieldError:
    """field.TooMany with a known count."""
    return FieldError(TOO_MANY, path, actual, f"must have at most {limit} items")


def not_found(path: str, value: Any, detail: str = "") -> FieldError:
    """field.NotFound."""
    return FieldError(NOT_FOUND, path, value, detail)


def not_supported(path: str, value: Any, valid: list[str]) -> FieldError:
    """field.NotSupported: the valid values follow, each quoted with %q."""
    detail = "supported values: " + ", ".join(go_quote(x) for x in valid) if valid else ""
    return FieldError(NOT_SUPPORTED, path, value, detail)


def to_aggregate(errs: list[FieldError]) -> list[str]:
    """ErrorList.ToAggregate(): the messages, dropping exact repeats."""
    seen: set[str] = set()
    out: list[str] = []
    for e in errs:
        msg = str(e)
        if msg not in seen:
            seen.add(msg)
            out.append(msg)
    return out


def child(path: str, *names: str) -> str:
    """Path.Child: join with dots (a nil/empty root yields just the child)."""
    for n in names:
        path = f"{path}.{n}" if path else n
    return path


def index(path: str, i: int) -> str:
    """Path.Index: "path[i]"."""
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    """Path.Key: "path[k]", the key unquoted."""
    return f"{path}[{k}]"


def aggregate_message(errors: list[str]) -> str:
    """utilerrors.Aggregate.Error(): one error as is, several as "[e1, e2]" (repeats dropped)."""
    seen: list[str] = []
    for e in errors:
        if e not in seen:
            seen.append(e)
    if not seen:
        return ""
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"
