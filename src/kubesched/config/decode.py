"""Strict decoding of a KubeSchedulerConfiguration, as kube-scheduler's loadConfig does it.

Order of events upstream (scheme.Codecs.UniversalDecoder().Decode):
1. JSON input (first non-blank byte "{") is read as JSON, anything else is
   converted from YAML to JSON (a broken YAML file fails here);
2. apiVersion/kind are read; a missing one or an unregistered kind fails;
3. the object is decoded strictly: duplicated YAML keys, then unknown (or
   duplicated JSON) fields, are collected as strict errors; a type mismatch
   is fatal on its own;
4. each pluginConfig[].args of a plugin whose "<Name>Args" kind is registered
   is decoded the same way into its typed args (others stay raw);
5. all strict errors are reported together as one "strict decoding error".

The result is the v1 object as plain dicts (only given fields, see
schema.StrictDecoder), with typed args marked by a "_kind" key on their
pluginConfig entry.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from kubesched.config.errors import ConfigError
from kubesched.config.schema import ARGS_KINDS, KUBE_SCHEDULER_CONFIGURATION
from kubesched.config.strictjson import FatalDecodeError, FloatLit, Pairs, StrictDecoder
from kubesched.config.types import API_VERSION, KIND
from kubesched.config.yamljson import YAMLError, yaml_to_json
from kubesched.gocompat.jsonenc import innermost_open_bracket

GROUP = "kubescheduler.config.k8s.io"
SCHEME = "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme/scheme.go:29"
_FIND_KIND_TYPE = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
)
REGISTERED_KINDS = {KIND, *ARGS_KINDS}


class _Fail(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _strict_error(errs: list[str]) -> str:
    return "strict decoding error: " + ", ".join(errs)


# ---------------------------------------------------------------- JSON input


def _json_pairs(pairs: list[tuple[str, Any]]) -> Pairs:
    obj = Pairs()
    for k, v in pairs:
        obj[k] = v
    obj.pairs = pairs
    return obj


def _go_json_syntax_error(text: str, e: json.JSONDecodeError) -> str:
    """A Go-like encoding/json syntax error for malformed JSON."""
    pos = e.pos
    if pos >= len(text) or text[pos:].strip() == "":
        return "unexpected end of JSON input"
    ch = text[pos]
    shown = "'" + ch + "'" if ch != "'" else "'\\''"
    if "property name" in e.msg:
        return f"invalid character {shown} looking for beginning of object key string"
    if "':' delimiter" in e.msg:
        return f"invalid character {shown} after object key"
    if "',' delimiter" in e.msg:
        before = text[:pos].rstrip()
        ctx = "object key:value pair" if innermost_open_bracket(before) == "{" else "array element"
        return f"invalid character {shown} after {ctx}"
    if "Extra data" in e.msg:
        return f"invalid character {shown} after top-level value"
    return f"invalid character {shown} looking for beginning of value"


def _load_json(text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_json_pairs, parse_float=FloatLit)
    except json.JSONDecodeError as e:
        raise _Fail("couldn't get version/kind; json parse error: " + _go_json_syntax_error(text, e)) from None
    except RecursionError:
        raise _Fail("couldn't get version/kind; json parse error: exceeded max depth") from None


# ---------------------------------------------------------------- apiVersion / kind


def _find_kind(obj: Any) -> tuple[str, str]:
    """Interpret(): read apiVersion/kind with encoding/json's case-insensitive matching."""
    if obj is None:
        return "", ""
    if not isinstance(obj, dict):
        what = {list: "array", str: "string", bool: "bool"}.get(type(obj), "number")
        raise _Fail(
            f"couldn't get version/kind; json parse error: json: cannot unmarshal {what} into Go value of "
            f"type {_FIND_KIND_TYPE}"
        )
    found = {"apiversion": "", "kind": ""}
    items = obj.pairs if isinstance(obj, Pairs) else sorted(obj.items())
    for k, v in items:
        lk = k.lower()
        if lk in found:
            if v is None:
                continue
            if not isinstance(v, str):
                what = {dict: "object", list: "array", bool: "bool"}.get(type(v), "number")
                if isinstance(v, dict):
                    what = "object"
                field = "apiVersion" if lk == "apiversion" else "kind"
                raise _Fail(
                    f"couldn't get version/kind; json parse error: json: cannot unmarshal {what} into Go "
                    f"struct field .{field} of type string"
                )
            found[lk] = v
    return found["apiversion"], found["kind"]


def _parse_group_version(api_version: str) -> tuple[str, str] | None:
    if api_version in ("", "/"):
        return "", ""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", api_version
    if len(parts) == 2:
        return parts[0], parts[1]
    return None


def _gv_string(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def _check_kind(api_version: str, kind: str, original: str, default: tuple[str, str, str] | None) -> tuple[str, str]:
    """Resolve the group/version/kind (with defaults for nested args); raise if it is not registered."""
    gv = _parse_group_version(api_version)
    group, version = gv if gv is not None else ("", "")
    if default is not None:
        dg, dv, dk = default
        if not kind:
            kind = dk
        if not version and not group:
            group, version = dg, dv
        if not version and group == dg:
            version = dv
    if not kind:
        raise _Fail(f"Object 'Kind' is missing in '{original}'")
    if not version:
        raise _Fail(f"Object 'apiVersion' is missing in '{original}'")
    if group != GROUP or version != "v1" or kind not in REGISTERED_KINDS:
        if version == "__internal":
            raise _Fail(
                f'no kind "{kind}" is registered for the internal version of group "{group}" in scheme "{SCHEME}"'
            )
        raise _Fail(f'no kind "{kind}" is registered for version "{_gv_string(group, version)}" in scheme "{SCHEME}"')
    return _gv_string(group, version), kind


# ---------------------------------------------------------------- nested plugin args


def _schema_for(kind: str) -> Any:
    return KUBE_SCHEDULER_CONFIGURATION if kind == KIND else ARGS_KINDS[kind]


def _decode_args(name: str, raw: Any, sort_keys: bool) -> tuple[dict | None, list[str]]:
    """PluginConfig.decodeNestedObjects: typed args for a registered "<Name>Args" kind, else None (raw)."""
    kind = name + "Args"
    if kind not in ARGS_KINDS:
        return None, []
    prefix = f"decoding args for plugin {name}: "
    try:
        api_version, got_kind = _find_kind(raw)
        original = json.dumps(raw, separators=(",", ":")) if raw is not None else ""
        _, got_kind = _check_kind(api_version, got_kind, original, (GROUP, "v1", kind))
    except _Fail as e:
        raise _Fail(prefix + e.message) from None
    dec = StrictDecoder(sort_keys)
    try:
        obj = dec.decode(raw, _schema_for(got_kind))
    except FatalDecodeError as e:
        raise _Fail(prefix + str(e)) from None
    if got_kind != kind:
        raise _Fail(f"args for plugin {name} were not of type {kind}.{GROUP}, got {got_kind}.{GROUP}")
    if not isinstance(obj, dict):
        obj = {}
    obj["_kind"] = kind
    strict = [_strict_error([prefix + _strict_error(dec.strict)])] if dec.strict else []
    return obj, strict


# ---------------------------------------------------------------- entry points


def _decode_object(obj: Any, original: str, pre_strict: list[str], sort_keys: bool) -> dict:
    api_version, kind = _find_kind(obj)
    _, kind = _check_kind(api_version, kind, original, None)
    dec = StrictDecoder(sort_keys)
    try:
        cfg = dec.decode(obj, _schema_for(kind))
    except FatalDecodeError as e:
        raise _Fail(str(e)) from None
    strict = list(pre_strict) + dec.strict
    if not isinstance(cfg, dict):
        cfg = {}
    if kind != KIND:
        if strict:
            raise _Fail(_strict_error(strict))
        raise _Fail(f"couldn't decode as KubeSchedulerConfiguration, got {GROUP}/v1, Kind={kind}: ")
    nested: list[str] = []
    for i, prof in enumerate(cfg.get("profiles") or []):
        for j, pc in enumerate(prof.get("pluginConfig") or []):
            try:
                typed, errs = _decode_args(pc.get("name", ""), pc.get("args"), sort_keys)
            except _Fail as e:
                raise _Fail(f"decoding .profiles[{i}].pluginConfig[{j}]: {e.message}") from None
            if typed is not None:
                pc["args"] = typed
            nested.extend(f"decoding .profiles[{i}].pluginConfig[{j}]: {x}" for x in errs)
    strict += nested
    if strict:
        raise _Fail(_strict_error(strict))
    cfg["apiVersion"] = API_VERSION
    cfg["kind"] = KIND
    return cfg


def decode_text(text: str, source: str = "<config>") -> dict:
    """Decode a configuration file's text into the v1 object (plain dicts); raises ConfigError."""
    try:
        stripped = text.lstrip(" \t\r\n")
        if stripped.startswith("{"):
            obj = _load_json(text)
            return _decode_object(obj, text, [], sort_keys=False)
        try:
            obj, dups = yaml_to_json(text)
        except YAMLError as e:
            raise _Fail(str(e)) from None
        pre = ["yaml: unmarshal errors:\n  " + "\n  ".join(dups)] if dups else []
        return _decode_object(obj, text, pre, sort_keys=True)
    except _Fail as e:
        raise ConfigError("decode", [e.message], e.message, source) from None


def decode_mapping(obj: Any, source: str = "<config>") -> dict:
    """Decode an already parsed YAML mapping (no duplicate-key detection is possible)."""
    try:
        value = _to_json_like(obj)
        original = yaml.safe_dump(obj, default_flow_style=False) if obj is not None else ""
        return _decode_object(value, original, [], sort_keys=True)
    except _Fail as e:
        raise ConfigError("decode", [e.message], e.message, source) from None


def _to_json_like(v: Any) -> Any:
    """What sigs.k8s.io/yaml would have produced from the same YAML (keys as strings)."""
    import datetime
    import math

    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if isinstance(k, bool):
                ks = "true" if k else "false"
            elif isinstance(k, (int, str)):
                ks = str(k)
            elif isinstance(k, float):
                ks = repr(k)
            else:
                raise _Fail(f"unsupported map key of type: {type(k).__name__}")
            out[ks] = _to_json_like(x)
        return out
    if isinstance(v, (list, tuple)):
        return [_to_json_like(x) for x in v]
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    if isinstance(v, float) and not math.isfinite(v):
        raise _Fail("json: unsupported value: " + ("NaN" if math.isnan(v) else ("+Inf" if v > 0 else "-Inf")))
    if isinstance(v, bytes):
        return v.decode("latin-1")
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise _Fail(f"json: unsupported type: {type(v).__name__}")
