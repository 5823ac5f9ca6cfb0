"""Request bodies read as kube-apiserver reads them, within bounds a hostile client cannot push.

Upstream (k8s.io/apiserver handlers and the serializers they use) refuses:
- a body over 3 MiB: 413 "Request entity too large: limit is 3145728" (limitedReadBody);
- a YAML alias bomb: 400 "... yaml: document contains excessive aliasing" (go-yaml's guard, which our
  own YAML reader, simulate.yamlstream, applies the same way);
- with fieldValidation=Strict (kubectl's default), a key given twice: 400 "<Kind> in version "v1" cannot
  be handled as a <Kind>: strict decoding error: ..."; with Warn (the server's default) the same texts
  come back as `Warning: 299 - "..."` headers; with Ignore nothing. The last value of a key wins.

Ours adds one bound of its own: nesting deeper than MAX_DEPTH is refused where upstream allows 10000,
because orjson, which writes every answer, cannot write deeper than 254 levels, and a stored object
that cannot be written would break every later list of its kind. Texts are upstream's, without the hex
dump of the body's first bytes that upstream appends to the "unrecognized" ones.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import orjson
import yaml
from aiohttp import web

from kubesched.gocompat.fmt import go_format_float_v
from kubesched.gocompat.strconv import go_quote
from kubesched.scenario import yamlstream
from kubesched.serve.status import ApiError

MAX_BODY_BYTES = 3 * 1024 * 1024
# orjson writes at most 254 levels; an answer wraps an object in at most 5 more (a watch event of a Table).
MAX_DEPTH = 200
_ORJSON_MAX_DEPTH = 254

_NOT_AN_OBJECT = (
    "json: cannot unmarshal {} into Go value of type struct "
    '{{ APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }}'
)


@dataclass
class Body:
    """A decoded body and the duplicate keys found in it, as upstream's strict decoder words them (and,
    for JSON, their field paths)."""

    data: Any
    duplicates: list[str] = field(default_factory=list)
    yaml: bool = False
    paths: list[str] = field(default_factory=list)


async def read(req: web.Request) -> bytes:
    """The whole body, or 413 as soon as it passes MAX_BODY_BYTES (nothing more is buffered). Read up to
    there even when Content-Length says it is too long, as upstream does: a client still sending would
    otherwise see its connection reset instead of the answer."""
    data = bytearray()
    async for chunk in req.content.iter_any():
        data += chunk
        if len(data) > MAX_BODY_BYTES:
            raise too_large(f"limit is {MAX_BODY_BYTES}")
    return bytes(data)


def too_large(detail: str) -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: {detail}")


# ---------------------------------------------------------------- decoding


def decode_object(data: bytes, is_yaml: bool, kind: str) -> Body:
    """An object to create or replace: a JSON or YAML object (null: an empty one); else 400 with
    upstream's "unrecognized" text."""
    unrecognized = f"the object provided is unrecognized (must be of type {kind}): "
    prefix = unrecognized + "couldn't get version/kind; json parse error: "
    body = _decode_yaml(data, unrecognized) if is_yaml else decode_json(data, prefix)
    if body.data is None:
        body.data = {}
    if not isinstance(body.data, dict):
        raise ApiError(400, "BadRequest", prefix + _NOT_AN_OBJECT.format(go_kind(body.data)))
    return body


def decode_patch(data: bytes, prefix: str) -> Body:
    """A patch document (JSON); 400 with `prefix` and the parser's words if it is not JSON."""
    return decode_json(data, prefix)


_GO_KINDS: dict[type, str] = {str: "string", list: "array", dict: "object"}


def go_kind(value: Any) -> str:
    """How Go's "cannot unmarshal X" names a JSON value's kind."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return _GO_KINDS.get(type(value), "value")


def decode_json(data: bytes, prefix: str) -> Body:
    """JSON, with the paths of its duplicate keys; 400 with `prefix` and the parser's words if it is not."""
    if not data.strip():
        raise ApiError(400, "BadRequest", prefix + "unexpected end of JSON input")
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        msg = "exceeded max depth" if "depth" in str(err) else str(err)
        raise ApiError(400, "BadRequest", prefix + msg) from None
    if not isinstance(value, dict | list):
        return Body(value)
    duplicates, deepest = json_duplicates(data.decode("utf-8"))  # orjson accepted it: valid UTF-8
    if deepest > MAX_DEPTH:
        raise ApiError(400, "BadRequest", prefix + f"exceeded max depth of {MAX_DEPTH}")
    return Body(value, [duplicate_field(path) for path in duplicates], paths=duplicates)


def duplicate_field(path: str) -> str:
    return f"duplicate field {go_quote(path)}"


def _decode_yaml(data: bytes, prefix: str) -> Body:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(400, "BadRequest", prefix + "yaml: invalid leading UTF-8 octet") from None
    docs = yamlstream.iter_documents(text, workers=1)
    try:
        doc = next(docs, None)  # upstream reads the first document only
    except yaml.YAMLError as err:
        raise ApiError(400, "BadRequest", prefix + "yaml: " + _yaml_problem(err)) from None
    finally:
        docs.close()
    duplicates: list[str] = []
    if isinstance(doc, yamlstream.Flagged):
        duplicates = [f"line {d.line}: key {go_quote(d.key)} already set in map" for d in doc.duplicates]
        doc = doc.data
    try:
        value = jsonable(doc)
    except _Unsupported as err:
        raise ApiError(400, "BadRequest", prefix + str(err)) from None
    return Body(value, duplicates, yaml=True)


def _yaml_problem(err: yaml.YAMLError) -> str:
    problem = getattr(err, "problem", None)
    if problem == yamlstream.EXCESSIVE_ALIASING:
        return problem
    mark = getattr(err, "problem_mark", None)
    text = problem or " ".join(str(err).split())
    return f"line {mark.line + 1}: {text}" if mark is not None else text


# ---------------------------------------------------------------- duplicate keys in JSON

# A string (then, for a key, its colon) or a bracket or comma; numbers, true, false and null are skipped.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"(\s*:)?|[\[\]{},]')


def json_duplicates(text: str) -> tuple[list[str], int]:
    """Paths of the keys given twice in one object of valid JSON `text`, in document order and spelled
    as kjson's strict decoder spells them (`spec.containers[0].env[0].value`), and the deepest nesting.

    A scan of the tokens, not a parse: iterative, so that no nesting can exhaust the stack; a path is
    spelled out only for a duplicate.
    """
    found: list[str] = []
    # Per open bracket: the keys seen (an object) or None (an array), and the current key or index.
    stack: list[list[Any]] = []
    deepest = 0
    for m in _TOKEN.finditer(text):
        tok = m.group()
        c = tok[0]
        if c == '"':
            if m.group(1) is None:
                continue
            literal = tok[: m.start(1) - m.start()]
            key = json.loads(literal) if "\\" in literal else literal[1:-1]
            frame = stack[-1]
            frame[1] = key
            if key in frame[0]:
                found.append(_path(stack))
            else:
                frame[0].add(key)
        elif c in "{[":
            stack.append([set(), ""] if c == "{" else [None, 0])
            deepest = max(deepest, len(stack))
        elif c in "}]":
            stack.pop()
        elif stack and stack[-1][0] is None:  # a comma in an array
            stack[-1][1] += 1
    return found, deepest


def _path(stack: list[list[Any]]) -> str:
    out = ""
    for keys, at in stack:
        if keys is None:
            out += f"[{at}]"
        else:
            out += f".{at}" if out else at
    return out


# ---------------------------------------------------------------- YAML values as JSON values


class _Unsupported(Exception):
    """A YAML value JSON cannot hold (sigs.k8s.io/yaml refuses it while converting to JSON)."""


_INT_MIN, _UINT_MAX = -(1 << 63), (1 << 64) - 1


def jsonable(value: Any, depth: int = 0, memo: dict[int, tuple[Any, int]] | None = None) -> Any:
    """`value` (as SafeLoader builds it) as sigs.k8s.io/yaml turns YAML into JSON: keys become strings,
    timestamps and binary stay text, numbers beyond 64 bits become floats, infinities are refused.
    Shared (aliased) parts are converted once and stay shared; nesting past MAX_DEPTH is refused."""
    if memo is None:
        memo = {}
    converted, _ = _convert(value, depth, memo)
    return converted


def _convert(value: Any, depth: int, memo: dict[int, tuple[Any, int]]) -> tuple[Any, int]:
    """The converted value and its height (levels of dicts and lists, itself included)."""
    if isinstance(value, str | bool) or value is None:
        return value, 0
    if isinstance(value, int):
        return (value if _INT_MIN <= value <= _UINT_MAX else _float(value)), 0
    if isinstance(value, float):
        return _float(value), 0
    if isinstance(value, datetime.date):  # go-yaml keeps a timestamp as its text into interface{}
        return value.isoformat(), 0
    if isinstance(value, bytes):  # !!binary: the decoded bytes, as a Go string
        return value.decode("utf-8", errors="replace"), 0
    if not isinstance(value, dict | list | tuple | set):
        raise _Unsupported(f"json: unsupported type: {type(value).__name__}")
    hit = memo.get(id(value))
    if hit is not None:
        if depth + hit[1] > MAX_DEPTH:
            raise _Unsupported(f"exceeded max depth of {MAX_DEPTH}")
        return hit
    if depth + 1 > MAX_DEPTH:
        raise _Unsupported(f"exceeded max depth of {MAX_DEPTH}")
    height = 0
    out: Any
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out[_key(k)], h = _convert(v, depth + 1, memo)
            height = max(height, h)
    elif isinstance(value, set):  # !!set: a map of nulls
        out = {_key(k): None for k in value}
    else:
        out = []
        for v in value:
            item, h = _convert(v, depth + 1, memo)
            out.append(item)
            height = max(height, h)
    memo[id(value)] = (out, height + 1)
    return out, height + 1


def _float(value: float | int) -> float:
    try:
        f = float(value)
    except OverflowError:
        f = math.inf if value > 0 else -math.inf
    if math.isnan(f):
        raise _Unsupported("json: unsupported value: NaN")
    if math.isinf(f):
        raise _Unsupported(f"json: unsupported value: {'+' if f > 0 else '-'}Inf")
    return f


def _key(k: Any) -> str:
    if isinstance(k, str):
        return k
    if isinstance(k, bool):
        return "true" if k else "false"
    if isinstance(k, int):
        return str(k)
    if isinstance(k, float):
        return go_format_float_v(k)
    if k is None:
        return "null"
    raise _Unsupported(f"unsupported map key of type {type(k).__name__}: {k!r}")


# ---------------------------------------------------------------- what may be stored and answered


def check_servable(obj: Any) -> None:
    """Refuse (400) an object orjson could not write back inside any answer: too deep, or a value JSON
    has no form for. A stored one would break every later get, list and watch of its kind."""
    wrapped = obj
    for _ in range(_ORJSON_MAX_DEPTH - MAX_DEPTH):
        wrapped = [wrapped]
    try:
        orjson.dumps(wrapped)
    except orjson.JSONEncodeError as err:
        msg = f"exceeded max depth of {MAX_DEPTH}" if "Recursion" in str(err) else f"json: {err}"
        raise ApiError(400, "BadRequest", msg) from None
