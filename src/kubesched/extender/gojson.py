"""Reading an extender's answer as Go's encoding/json reads it into the extender/v1 types.

Why not plain `json.loads`: the reference decodes with `json.NewDecoder(body).Decode(&result)`,
and what it accepts or rejects, and the error text it gives, become the pod's message when
a not-ignorable extender misbehaves. So, as Go:
- only the first JSON value of the body is read (trailing bytes are ignored); an empty body
  is the error "EOF", a truncated one "unexpected EOF";
- object keys match struct fields exactly or else case-insensitively; unknown keys are ignored;
- `null` leaves a field at its zero value;
- a value of the wrong JSON type does not stop decoding: the first such mismatch is returned at
  the end as "json: cannot unmarshal <value> into Go struct field <Struct>.<path> of type <type>".

Syntax errors are reported in Go's words where Python's parser tells enough to do so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubesched.gocompat.jsonenc import innermost_open_bracket
from kubesched.gocompat.strconv import go_quote

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class GoJSONError(Exception):
    """A decoding failure, its text being Go's."""


class Number(str):
    """A JSON number kept as its literal, so that int64 errors can quote it as Go does."""


@dataclass(frozen=True)
class GoType:
    """The part of a Go type that decoding needs: its kind, its printed name, its fields or element.

    kind: "string", "int64", "struct", "map" (string keys), "slice", or "raw" (any value, kept as
    decoded; used for objects decoded later by another decoder).
    """

    kind: str
    name: str
    fields: tuple[tuple[str, GoType], ...] = ()
    elem: GoType | None = None
    # For "raw": which JSON kinds are accepted (others are type errors).
    accepts: frozenset[str] = field(default_factory=frozenset)


STRING = GoType("string", "string")
INT64 = GoType("int64", "int64")


def struct(name: str, *fields: tuple[str, GoType]) -> GoType:
    return GoType("struct", name, fields=fields)


def map_of(name: str, elem: GoType) -> GoType:
    return GoType("map", name, elem=elem)


def slice_of(name: str, elem: GoType) -> GoType:
    return GoType("slice", name, elem=elem)


def raw_object(name: str) -> GoType:
    """A JSON object decoded elsewhere (e.g. a v1.Node): only its JSON kind is checked here."""
    return GoType("raw", name, accepts=frozenset({"object"}))


# ---------------------------------------------------------------- syntax


def decode_first(data: bytes) -> Any:
    """The first JSON value of `data` (json.Decoder.Decode), numbers as `Number`."""
    text = data.decode("utf-8", errors="replace")
    i = _skip_ws(text, 0)
    if i >= len(text):
        raise GoJSONError("EOF")
    dec = json.JSONDecoder(parse_float=Number, parse_int=Number, parse_constant=_reject_constant)
    try:
        value, _ = dec.raw_decode(text, i)
    except _Constant as c:
        raise GoJSONError(c.message) from None
    except json.JSONDecodeError as err:
        raise GoJSONError(_syntax_message(err)) from None
    return value


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


class _Constant(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _reject_constant(name: str) -> Any:
    # NaN, Infinity, -Infinity: not JSON for Go.
    if name.startswith("-"):
        raise _Constant("invalid character 'I' in numeric literal")
    raise _Constant(f"invalid character {quote_char(name[0])} looking for beginning of value")


_CONTEXTS = {
    "Expecting value": "looking for beginning of value",
    "Expecting property name enclosed in double quotes": "looking for beginning of object key string",
    "Expecting ':' delimiter": "after object key",
    "Invalid control character at": "in string literal",
    "Invalid \\escape": "in string escape code",
}


def _syntax_message(err: json.JSONDecodeError) -> str:
    doc, pos = err.doc, err.pos
    if err.msg.startswith("Unterminated string") or pos >= len(doc) or _skip_ws(doc, pos) >= len(doc):
        return "unexpected EOF"
    ch = doc[pos]
    if err.msg == "Expecting ',' delimiter":
        ctx = "after object key:value pair" if innermost_open_bracket(doc[:pos]) == "{" else "after array element"
        return f"invalid character {quote_char(ch)} {ctx}"
    if err.msg == "Invalid \\escape":
        ch = doc[pos + 1] if pos + 1 < len(doc) else ch
    for prefix, ctx in _CONTEXTS.items():
        if err.msg.startswith(prefix):
            return f"invalid character {quote_char(ch)} {ctx}"
    return err.msg


def quote_char(c: str) -> str:
    """Go's quoteChar: the character in single quotes, escaped as strconv.Quote would."""
    if c == "'":
        return "'\\''"
    if c == '"':
        return "'\"'"
    return "'" + go_quote(c)[1:-1] + "'"


# ---------------------------------------------------------------- types


def json_kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, Number):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    return "null"


@dataclass
class _Ctx:
    """Go's errorContext: the innermost struct and the field names from the root."""

    struct: str = ""
    path: tuple[str, ...] = ()


class Unmarshaler:
    """Decodes a parsed value into a GoType, remembering the first type mismatch as Go does."""

    def __init__(self) -> None:
        self.first_error: str | None = None

    def run(self, value: Any, t: GoType) -> Any:
        out = self._value(value, t, _Ctx())
        if self.first_error is not None:
            raise GoJSONError(self.first_error)
        return out

    def _mismatch(self, value: str, t: GoType, ctx: _Ctx) -> None:
        if self.first_error is not None:
            return
        if ctx.struct or ctx.path:
            where = f"Go struct field {ctx.struct}.{'.'.join(ctx.path)}"
        else:
            where = "Go value"
        self.first_error = f"json: cannot unmarshal {value} into {where} of type {t.name}"

    def _value(self, v: Any, t: GoType, ctx: _Ctx) -> Any:
        if v is None:
            return None
        kind = json_kind(v)
        accepts = t.accepts if t.kind == "raw" else _ACCEPTS[t.kind]
        if kind not in accepts:
            self._mismatch(kind, t, ctx)
            return None
        if t.kind == "raw":
            return v
        handler: Callable[[Any, GoType, _Ctx], Any] = getattr(self, "_" + t.kind)
        return handler(v, t, ctx)

    def _string(self, v: Any, t: GoType, ctx: _Ctx) -> str:
        return str(v)

    def _int64(self, v: Number, t: GoType, ctx: _Ctx) -> int | None:
        lit = str(v)
        if re.fullmatch(r"-?\d+", lit):
            n = int(lit)
            if INT64_MIN <= n <= INT64_MAX:
                return n
        self._mismatch(f"number {lit}", t, ctx)
        return None

    def _struct(self, v: dict[str, Any], t: GoType, ctx: _Ctx) -> dict[str, Any]:
        out: dict[str, Any] = {}
        exact = dict(t.fields)
        folded = {name.lower(): (name, ft) for name, ft in t.fields}
        for key, item in v.items():
            if key in exact:
                name, ft = key, exact[key]
            elif key.lower() in folded:
                name, ft = folded[key.lower()]
            else:
                continue
            out[name] = self._value(item, ft, _Ctx(t.name.rsplit(".", 1)[-1], (*ctx.path, name)))
        return out

    def _map(self, v: dict[str, Any], t: GoType, ctx: _Ctx) -> dict[str, Any]:
        assert t.elem is not None
        return {k: self._value(item, t.elem, ctx) for k, item in v.items()}

    def _slice(self, v: list[Any], t: GoType, ctx: _Ctx) -> list[Any]:
        assert t.elem is not None
        return [self._value(item, t.elem, ctx) for item in v]


_ACCEPTS = {
    "string": {"string"},
    "int64": {"number"},
    "struct": {"object"},
    "map": {"object"},
    "slice": {"array"},
}


def unmarshal(data: bytes, t: GoType) -> Any:
    """Body bytes to plain Python values shaped by `t` (structs as dicts keyed by Go field name)."""
    return Unmarshaler().run(decode_first(data), t)
