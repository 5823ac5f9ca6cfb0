"""fieldValidation: what a write does with the duplicate keys of its body, as kube-apiserver does.

Strict (kubectl's default) refuses the body, Warn (the server's default when the request names none)
accepts it with `Warning: 299 - "..."` headers, Ignore accepts it silently; the last value of a key wins.
Messages as upstream's (checked against kube-apiserver v1.34.1):

    create/update: 400 Pod in version "v1" cannot be handled as a Pod: strict decoding error:
                   duplicate field "spec.containers[0].resources.requests.cpu"
                   (YAML: `yaml: unmarshal errors:\\n  line 12: key "cpu" already set in map`)
    patch:         422  "" is invalid: patch: Invalid value: "<...>": strict decoding error: duplicate field ...

Unknown fields, which upstream's strict decoding also reports, are not checked here.
"""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from kubesched.gocompat.fmt import go_format_float_v
from kubesched.gocompat.jsonenc import go_json
from kubesched.gocompat.strconv import go_quote
from kubesched.serve.body import Body, duplicate_field
from kubesched.serve.status import ApiError

VALIDATIONS = ("", "Ignore", "Strict", "Warn")
# Warning headers: at most this many characters in all; past it each is cut to _WARNING_ITEM and the
# rest dropped (upstream's recorder, k8s.io/apiserver/pkg/endpoints/filters/warning.go, bounds them too).
_WARNINGS_TOTAL = 4 * 1024
_WARNING_ITEM = 256


def field_validation(req: web.Request, options: str) -> str:
    """The request's fieldValidation: Strict, Warn (also when not given, as upstream) or Ignore.
    `options`: CreateOptions, UpdateOptions or PatchOptions, which upstream names in its refusal."""
    value = req.query.get("fieldValidation", "")
    if value not in VALIDATIONS:
        supported = ", ".join(go_quote(v) for v in VALIDATIONS)
        cause = f"Unsupported value: {go_quote(value)}: supported values: {supported}"
        raise ApiError(
            422,
            "Invalid",
            f'{options}.meta.k8s.io "" is invalid: fieldValidation: {cause}',
            {
                "group": "meta.k8s.io",
                "kind": options,
                "causes": [{"reason": "FieldValueNotSupported", "message": cause, "field": "fieldValidation"}],
            },
        )
    return value or "Warn"


def strict_error(body: Body, kind: str, group_version: str) -> ApiError:
    """fieldValidation=Strict on a create or update: the body's duplicate keys, in one BadRequest."""
    if body.yaml:
        detail = "yaml: unmarshal errors:\n  " + "\n  ".join(body.duplicates)
    else:
        detail = ", ".join(body.duplicates)
    return ApiError(
        400,
        "BadRequest",
        f"{kind} in version {go_quote(group_version)} cannot be handled as a {kind}: strict decoding error: {detail}",
    )


def patch_strict_error(duplicates: list[str], shown: str) -> ApiError:
    """fieldValidation=Strict on a patch: 422 naming `shown`, which upstream prints as the patched object
    (JSON and merge patches) or the patch as a Go map (strategic merge patches)."""
    cause = f"Invalid value: {go_quote(shown)}: strict decoding error: {', '.join(duplicates)}"
    return ApiError(
        422,
        "Invalid",
        f' "" is invalid: patch: {cause}',
        {"causes": [{"reason": "FieldValueInvalid", "message": cause, "field": "patch"}]},
    )


def json_patch_duplicates(paths: list[str], ops: list[Any]) -> list[str]:
    """Duplicate keys inside a JSON patch's values, as paths of the object they are written into
    (`[0].value.a` of an add at /metadata/labels is `metadata.labels.a`); others are dropped."""
    out = []
    for d in paths:
        m = re.match(r"\[(\d+)\]\.value(.*)$", d)
        if m is None:
            continue
        op = ops[int(m.group(1))]
        pointer = str(op.get("path", "")) if isinstance(op, dict) else ""
        base = ""
        for part in pointer.split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            base += f"[{part}]" if part.isdigit() else (f".{part}" if base else part)
        out.append(duplicate_field(base + m.group(2)))
    return out


# ---------------------------------------------------------------- how upstream prints the patch


def go_json_sorted(value: Any) -> str:
    """json.Marshal of a Go map: keys sorted."""
    return go_json(_sorted(value))


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def go_value(value: Any) -> str:
    """fmt's %v of a decoded JSON value (map[string]interface{}: keys sorted, numbers float64)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_value(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return go_format_float_v(float(value))
    return str(value)


# ---------------------------------------------------------------- Warn


def warning_headers(texts: list[str]) -> list[str]:
    """`Warning` header values for `texts`, bounded in all: past _WARNINGS_TOTAL characters each text is
    cut to _WARNING_ITEM and those that still do not fit are dropped."""
    headers = [warning_header(t) for t in texts]
    if sum(map(len, headers)) <= _WARNINGS_TOTAL:
        return headers
    out: list[str] = []
    total = 0
    for text in texts:
        header = warning_header(text[:_WARNING_ITEM])
        if total + len(header) > _WARNINGS_TOTAL:
            break
        out.append(header)
        total += len(header)
    return out


def warning_header(text: str) -> str:
    """`299 - "text"` with `"` and `\\` escaped (apimachinery's NewWarningHeader); line breaks and other
    control characters, which no header may carry, become spaces as Go's server writes them."""
    text = "".join(" " if ord(ch) < 0x20 or ord(ch) == 0x7F else ch for ch in text)
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
