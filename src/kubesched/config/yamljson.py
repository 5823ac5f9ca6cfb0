"""YAML to JSON as sigs.k8s.io/yaml does it (on top of gopkg.in/yaml.v2).

kube-scheduler converts the YAML file to JSON before decoding it, so the
scalar typing rules of yaml.v2 apply (yes/no/on/off are booleans, 0x10 is an
int, timestamps stay strings) and JSON objects come out with sorted keys.
The strict pass (YAMLToJSONStrict) reports duplicated mapping keys with the
line of the repeated value, in yaml.v2's decoding order.

PyYAML (libyaml, when available) only builds the node graph; values are
resolved here.
"""

from __future__ import annotations

import base64
import math
import re
from typing import Any

import yaml

try:
    _BaseLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - pure-Python PyYAML
    _BaseLoader = yaml.SafeLoader

_PLAIN = "!kubesched-plain"
_STR = "tag:yaml.org,2002:str"
_YAML_TAG = "tag:yaml.org,2002:"


class _NodeLoader(_BaseLoader):
    """Composes nodes and marks untagged plain scalars so they can be resolved as yaml.v2 does."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode:
            if implicit[0]:
                return _PLAIN
            if implicit[1]:
                return _STR
        return super().resolve(kind, value, implicit)


class YAMLError(Exception):
    """YAML that yaml.v2 cannot read; str() is yaml.v2's message."""


_TRUE = {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}
_FALSE = {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}
_NULL = {"", "~", "null", "Null", "NULL"}
_NAN = {".nan", ".NaN", ".NAN"}
_PINF = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"}
_NINF = {"-.inf", "-.Inf", "-.INF"}
_FLOAT_RE = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1


def _go_parse_int(s: str, bits: int = 64, unsigned: bool = False) -> int | None:
    """strconv.ParseInt/ParseUint with base 0 (prefixes 0x, 0o, 0b, leading 0 = octal)."""
    neg = False
    body = s
    if body[:1] in "+-" and body:
        if unsigned:
            return None
        neg = body[0] == "-"
        body = body[1:]
    if not body:
        return None
    base = 10
    low = body.lower()
    if low.startswith("0x"):
        base, body = 16, body[2:]
    elif low.startswith("0o"):
        base, body = 8, body[2:]
    elif low.startswith("0b"):
        base, body = 2, body[2:]
    elif body.startswith("0") and len(body) > 1:
        base, body = 8, body[1:]
    if not body or not all(c in "0123456789abcdefABCDEF"[: base if base <= 10 else 22] for c in body):
        return None
    try:
        n = int(body, base)
    except ValueError:
        return None
    n = -n if neg else n
    if unsigned:
        return n if n <= _UINT64_MAX else None
    return n if _INT64_MIN <= n <= _INT64_MAX else None


def resolve_plain(s: str) -> Any:
    """yaml.v2's resolve() for an untagged plain scalar."""
    if s in _NULL:
        return None
    if s in _TRUE:
        return True
    if s in _FALSE:
        return False
    if s in _NAN:
        return math.nan
    if s in _PINF:
        return math.inf
    if s in _NINF:
        return -math.inf
    c = s[0]
    if c == ".":
        try:
            return float(s) if _FLOAT_RE.match(s) else s
        except ValueError:
            return s
    if c in "+-0123456789":
        plain = s.replace("_", "")
        n = _go_parse_int(plain)
        if n is not None:
            return n
        n = _go_parse_int(plain, unsigned=True)
        if n is not None:
            return n
        if _FLOAT_RE.match(plain):
            return float(plain)
        if plain.startswith("0b") or plain.startswith("-0b"):
            digits = plain[2:] if plain[0] == "0" else plain[3:]
            if digits and set(digits) <= {"0", "1"}:
                v = int(digits, 2)
                return -v if plain[0] == "-" else v
    return s


def _resolve_tagged(tag: str, value: str, line: int) -> Any:
    short = "!!" + tag[len(_YAML_TAG) :] if tag.startswith(_YAML_TAG) else tag
    if short in ("!!str",):
        return value
    if short == "!!binary":
        try:
            return base64.b64decode(value.replace("\n", "")).decode("latin-1")
        except ValueError as e:
            raise YAMLError(f"yaml: !!binary value contains invalid base64 data: {e}") from None
    if short not in ("!!bool", "!!null", "!!float", "!!int", "!!timestamp"):
        return value  # unknown tags keep the text
    v = resolve_plain(value)
    ok = {
        "!!bool": isinstance(v, bool),
        "!!null": v is None,
        "!!int": isinstance(v, int) and not isinstance(v, bool),
        "!!float": isinstance(v, (int, float)) and not isinstance(v, bool),
        "!!timestamp": isinstance(v, str),
    }[short]
    if not ok:
        got = {bool: "!!bool", int: "!!int", float: "!!float", str: "!!str", type(None): "!!null"}[type(v)]
        raise YAMLError(f"yaml: cannot decode {got} `{value}` as a {short}")
    if short == "!!float" and isinstance(v, int):
        return float(v)
    return v


def _key_of(v: Any) -> tuple[str, Any]:
    """Identity of a decoded map key as Go's interface{} comparison sees it."""
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, float):
        return ("float", v)
    return (type(v).__name__, v)


def _go_key_repr(v: Any) -> str:
    """%#v of a decoded map key."""
    from kubesched.gocompat.fmt import go_format_float_v
    from kubesched.gocompat.strconv import go_quote

    if v is None:
        return "interface {}(nil)"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return go_format_float_v(v)
    return go_quote(str(v))


def _json_key(v: Any) -> str:
    """sigs.k8s.io/yaml's conversion of a non-string map key to a JSON object key."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return ".nan"
        if math.isinf(v):
            return ".inf" if v > 0 else "-.inf"
        from kubesched.gocompat.fmt import go_format_float_v

        return go_format_float_v(v)
    raise YAMLError(f"unsupported map key of type: %!s(<nil>), key: <nil>, value: {v!r}")


class _Converter:
    def __init__(self) -> None:
        self.dups: list[str] = []
        self._depth = 0

    def value(self, node: yaml.Node) -> Any:
        self._depth += 1
        if self._depth > 10000:
            raise YAMLError("yaml: exceeded max depth of 10000")
        try:
            if isinstance(node, yaml.ScalarNode):
                if node.tag == _PLAIN:
                    return resolve_plain(node.value)
                return _resolve_tagged(node.tag, node.value, node.start_mark.line + 1)
            if isinstance(node, yaml.SequenceNode):
                return [self.value(n) for n in node.value]
            if isinstance(node, yaml.MappingNode):
                out: dict[str, Any] = {}
                seen: set[tuple[str, Any]] = set()
                self._mapping(node, out, seen)
                return out
        finally:
            self._depth -= 1
        raise YAMLError("yaml: unknown node")  # pragma: no cover

    def _mapping(self, node: yaml.MappingNode, out: dict[str, Any], seen: set[tuple[str, Any]]) -> None:
        for knode, vnode in node.value:
            if isinstance(knode, yaml.ScalarNode) and knode.tag == _PLAIN and knode.value == "<<":
                self._merge(vnode, out, seen)
                continue
            if not isinstance(knode, yaml.ScalarNode):
                raise YAMLError("yaml: invalid map key: " + repr(self.value(knode)))
            k = self.value(knode)
            v = self.value(vnode)
            ident = _key_of(k)
            if ident in seen:
                # yaml.v2 strict: reported at the line of the value node, value not stored
                self.dups.append(f"line {vnode.start_mark.line + 1}: key {_go_key_repr(k)} already set in map")
            seen.add(ident)
            out[_json_key(k)] = v  # the non-strict conversion keeps the last value

    def _merge(self, vnode: yaml.Node, out: dict[str, Any], seen: set[tuple[str, Any]]) -> None:
        if isinstance(vnode, yaml.MappingNode):
            self._mapping(vnode, out, seen)
        elif isinstance(vnode, yaml.SequenceNode):
            for n in reversed(vnode.value):
                if not isinstance(n, yaml.MappingNode):
                    raise YAMLError("yaml: map merge requires map or sequence of maps as the value")
                self._mapping(n, out, seen)
        else:
            raise YAMLError("yaml: map merge requires map or sequence of maps as the value")


def _parse_error(e: yaml.MarkedYAMLError, text: str) -> YAMLError:
    """yaml.v2's message for a libyaml scanner/parser error (its odd line numbering included)."""
    problem = getattr(e, "problem", None) or "unknown problem parsing YAML content"
    pm = getattr(e, "problem_mark", None)
    cm = getattr(e, "context_mark", None)
    line = 0
    if pm is not None and pm.line != 0:
        line = pm.line + (1 if isinstance(e, yaml.scanner.ScannerError) else 0)
    elif cm is not None and cm.line != 0:
        line = cm.line
    where = f"line {line}: " if line else ""
    if isinstance(e, yaml.composer.ComposerError) and "undefined alias" in str(problem) and pm is not None:
        m = re.match(r"\*([^\s,\[\]{}]+)", text[pm.index :])
        return YAMLError(f"yaml: unknown anchor '{m.group(1) if m else ''}' referenced")
    return YAMLError(f"yaml: {where}{problem}")


def yaml_to_json(text: str) -> tuple[Any, list[str]]:
    """Convert the first YAML document; returns (JSON-like value, duplicate-key errors).

    Raises YAMLError with yaml.v2's message if the text is not valid YAML.
    """
    try:
        docs = yaml.compose_all(text, Loader=_NodeLoader)
        node = next(docs, None)
    except yaml.MarkedYAMLError as e:
        raise _parse_error(e, text) from None
    except yaml.YAMLError as e:
        raise YAMLError(f"yaml: {e}") from None
    except RecursionError:
        raise YAMLError("yaml: exceeded max depth") from None
    if node is None:
        return None, []
    conv = _Converter()
    try:
        value = conv.value(node)
    except RecursionError:
        raise YAMLError("yaml: exceeded max depth") from None
    _check_json_floats(value)
    return value, conv.dups


def _check_json_floats(v: Any) -> None:
    """encoding/json refuses NaN and infinities."""
    if isinstance(v, float):
        if math.isnan(v):
            raise YAMLError("json: unsupported value: NaN")
        if math.isinf(v):
            raise YAMLError("json: unsupported value: " + ("+Inf" if v > 0 else "-Inf"))
    elif isinstance(v, dict):
        for x in v.values():
            _check_json_floats(x)
    elif isinstance(v, list):
        for x in v:
            _check_json_floats(x)
