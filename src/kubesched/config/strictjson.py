"""A strict JSON decoder with sigs.k8s.io/json's semantics, over the schema's Go type descriptors.

kube-scheduler decodes the (YAML-converted) JSON into the Go types of
k8s.io/kube-scheduler/config/v1 with case-sensitive field matching, unknown
and duplicated fields collected as strict errors (with their full path), and
type mismatches reported as `json: cannot unmarshal ...`. The first type
mismatch is fatal and hides the strict errors. Apart from schema.py, which
only describes the types.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from kubesched.config.schema import Map, Ptr, Scalar, Slice, Struct
from kubesched.gocompat.duration import DurationError, parse_duration
from kubesched.gocompat.jsonenc import go_float_literal
from kubesched.gocompat.strconv import go_quote, parse_int64


class FloatLit(float):
    """A JSON number that came with a literal (JSON input): Go decodes the literal text."""

    lit: str

    def __new__(cls, lit: str) -> FloatLit:
        obj = super().__new__(cls, float(lit))
        obj.lit = lit
        return obj


class Pairs(dict):
    """A JSON object from JSON text: keeps every (key, value) pair, duplicates included, in order."""

    pairs: list[tuple[str, Any]]


class FatalDecodeError(Exception):
    """A non-strict decoding error: kube-scheduler reports only this."""


_SKIP = object()  # "no effect": Go leaves the zero value (null into a non-pointer)


def _kind_of(v: Any) -> str:
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    if isinstance(v, str):
        return "string"
    if isinstance(v, bool):
        return "bool"
    return "number"


def _number_literal(v: Any) -> str:
    if isinstance(v, FloatLit):
        return v.lit
    if isinstance(v, float):
        return go_float_literal(v)
    return str(v)


def _parse_go_int(lit: str) -> int | None:
    """strconv.ParseInt(lit, 10, 64) on a JSON number literal; None when it fails."""
    try:
        return parse_int64(lit)
    except ValueError:
        return None


_INT_RANGE = {32: (-(1 << 31), (1 << 31) - 1), 64: (-(1 << 63), (1 << 63) - 1)}
_FLOAT32_MAX = 3.4028234663852886e38


class StrictDecoder:
    """Decodes a JSON-like value against a schema type, like kjson.UnmarshalStrict.

    Returns a cleaned value: structs become dicts holding only the known fields
    that were given (a null for a pointer/slice/map field is kept as None, a null
    for any other field is dropped), durations become nanoseconds, bytes become
    latin-1 text.
    """

    def __init__(self, sort_keys: bool) -> None:
        self.sort_keys = sort_keys
        self.strict: list[str] = []
        self.saved: str | None = None

    # The strict path (".a.b[0].c") and the error-context field stack ("a.b.c").
    def decode(self, value: Any, t: Any) -> Any:
        out = self._value(value, t, [], [], "")
        if self.saved is not None:
            raise FatalDecodeError(self.saved)
        return out

    def _type_error(self, what: str, go: str, fstack: list[str], struct: str) -> str:
        if struct or fstack:
            return f"json: cannot unmarshal {what} into Go struct field {struct}.{'.'.join(fstack)} of type {go}"
        return f"json: cannot unmarshal {what} into Go value of type {go}"

    def _save(self, msg: str) -> None:
        if self.saved is None:
            self.saved = msg

    def _items(self, v: dict) -> list[tuple[str, Any]]:
        if isinstance(v, Pairs):
            return list(v.pairs)
        items = list(v.items())
        if self.sort_keys:
            items.sort(key=lambda kv: kv[0].encode("utf-8"))
        return items

    def _value(self, v: Any, t: Any, spath: list[str], fstack: list[str], struct: str) -> Any:
        if isinstance(t, Ptr):
            if v is None:
                return None
            return self._value(v, t.elem, spath, fstack, struct)
        if isinstance(t, Struct):
            if v is None:
                return _SKIP
            if not isinstance(v, dict):
                self._save(self._type_error(_kind_of(v), t.go, fstack, struct))
                return _SKIP
            out: dict[str, Any] = {}
            seen: set[str] = set()
            for k, x in self._items(v):
                ft = t.fields.get(k)
                if ft is None:
                    self.strict.append(f"unknown field {go_quote(_join(spath, k))}")
                    continue
                if k in seen:
                    self.strict.append(f"duplicate field {go_quote(_join(spath, k))}")
                seen.add(k)
                r = self._value(x, ft, [*spath, ("." if spath else "") + k], [*fstack, k], t.name)
                if r is not _SKIP:
                    out[k] = r
            return out
        if isinstance(t, Slice):
            if v is None:
                return None
            if not isinstance(v, list):
                self._save(self._type_error(_kind_of(v), t.go, fstack, struct))
                return _SKIP
            res = []
            for i, x in enumerate(v):
                r = self._value(x, t.elem, [*spath, f"[{i}]"], fstack, struct)
                res.append(_zero(t.elem) if r is _SKIP else r)
            return res
        if isinstance(t, Map):
            if v is None:
                return None
            if not isinstance(v, dict):
                self._save(self._type_error(_kind_of(v), t.go, fstack, struct))
                return _SKIP
            res_m: dict[str, Any] = {}
            seen_m: set[str] = set()
            for k, x in self._items(v):
                if k in seen_m:
                    self.strict.append(f"duplicate field {go_quote(_join(spath, k))}")
                seen_m.add(k)
                r = self._value(x, t.elem, [*spath, ("." if spath else "") + k], [*fstack, k], struct)
                res_m[k] = _zero(t.elem) if r is _SKIP else r
            return res_m
        return self._scalar(v, t, fstack, struct)

    def _scalar(self, v: Any, t: Scalar, fstack: list[str], struct: str) -> Any:
        kind = t.kind
        if kind == "raw":
            return v
        if kind == "duration":
            # metav1.Duration.UnmarshalJSON: a JSON string parsed by time.ParseDuration; errors abort decoding.
            if v is None:
                v = ""
            if not isinstance(v, str):
                raise FatalDecodeError(self._type_error(_kind_of(v), "string", fstack, struct))
            try:
                return parse_duration(v)
            except DurationError as e:
                raise FatalDecodeError(str(e)) from None
        if v is None:
            return _SKIP
        if kind == "bytes":
            if not isinstance(v, str):
                self._save(self._type_error(_kind_of(v), t.go, fstack, struct))
                return _SKIP
            try:
                return base64.b64decode(v, validate=True).decode("latin-1")
            except (binascii.Error, ValueError):
                self._save(f"illegal base64 data at input byte {_bad_base64_offset(v)}")
                return _SKIP
        if isinstance(v, (dict, list)) or (isinstance(v, str) and kind != "string"):
            self._save(self._type_error(_kind_of(v), t.go, fstack, struct))
            return _SKIP
        if isinstance(v, bool):
            if kind == "bool":
                return v
            self._save(self._type_error("bool", t.go, fstack, struct))
            return _SKIP
        if kind == "string":
            if isinstance(v, str):
                return v
            self._save(self._type_error("number", t.go, fstack, struct))
            return _SKIP
        if kind == "bool":
            self._save(self._type_error(_kind_of(v), t.go, fstack, struct))
            return _SKIP
        lit = _number_literal(v)
        if kind == "int":
            n = _parse_go_int(lit)
            lo, hi = _INT_RANGE[t.bits]
            if n is None or not lo <= n <= hi:
                self._save(self._type_error("number " + lit, t.go, fstack, struct))
                return _SKIP
            return n
        # float32
        try:
            f = float(lit)
        except ValueError:
            f = float("inf")
        if abs(f) > _FLOAT32_MAX:
            self._save(self._type_error("number " + lit, t.go, fstack, struct))
            return _SKIP
        return f


def _join(spath: list[str], key: str) -> str:
    prefix = "".join(spath)
    return f"{prefix}.{key}" if prefix else key


def _zero(t: Any) -> Any:
    if isinstance(t, Struct):
        return {}
    if isinstance(t, (Ptr, Slice, Map)):
        return None
    return {"int": 0, "float": 0.0, "bool": False, "string": "", "duration": 0, "bytes": None, "raw": None}[t.kind]


def _bad_base64_offset(s: str) -> int:
    """The offset base64.StdEncoding reports for malformed input (first bad byte or padding problem)."""
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    for i, ch in enumerate(s):
        if ch in "\r\n":
            continue
        if ch not in alphabet:
            if ch == "=":
                return i
            return i
    return max(len(s) - (len(s) % 4), 0)
