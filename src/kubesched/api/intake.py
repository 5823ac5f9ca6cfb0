"""A manifest taken in as kube-apiserver takes it: kind and version resolved, decoded strictly, validated.

The steps, in the API server's order:
1. the kind: `apiVersion` and `kind` must name a kind the server serves (kubectl's "no matches for
   kind" otherwise). Kinds the scheduler does not read (ConfigMaps, Secrets, custom resources)
   are skipped by the caller, which says so once per kind;
2. strict decoding (`fieldValidation=Strict`, kubectl's default): a value of the wrong JSON type is
   refused; unknown and duplicate fields are refused, warned about or dropped as the level says;
3. validation (pkg/apis/*/validation): always, whatever the level, as the server does.

Errors are IntakeError(field, message): the caller adds the file and the object.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api import openapi
from kubesched.api.decode import KINDS, DecodeError, decode
from kubesched.api.validation import validate


class FieldValidation(enum.Enum):
    """kubectl's --validate: what to do with unknown and duplicate fields."""

    STRICT = "strict"
    WARN = "warn"
    IGNORE = "ignore"

    @classmethod
    def parse(cls, text: str) -> FieldValidation:
        """kubectl's spellings: strict (or true), warn, ignore (or false)."""
        aliases = {"true": "strict", "false": "ignore"}
        try:
            return cls(aliases.get(text.lower(), text.lower()))
        except ValueError:
            raise ValueError(
                f'invalid - validate option "{text}"; must be one of: strict (or true), warn, ignore (or false)'
            ) from None


class IntakeError(ValueError):
    """The API server would refuse the manifest: `field` (may be empty) and the message. `invalid`: refused
    by validation (HTTP 422 Invalid), not by decoding (400) or admission."""

    def __init__(self, message: str, field: str = "", invalid: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.invalid = invalid


@dataclass(frozen=True)
class Skip:
    """A kind the API server knows (or a custom resource's) that the scheduler never reads."""

    kind: str
    api_version: str
    why: str


Warn = Callable[[str, str], None]  # (field, message)


def resolve_kind(raw: Mapping[str, Any]) -> str | Skip:
    """The kind to decode `raw` as, or a Skip; IntakeError when no server would serve it."""
    kind = raw.get("kind")
    if not isinstance(kind, str) or not kind:
        raise IntakeError("Required value: kind not set", "kind")
    api_version = raw.get("apiVersion")
    if api_version is None or api_version == "":
        raise IntakeError("Required value: apiVersion not set", "apiVersion")
    if not isinstance(api_version, str):
        raise IntakeError(f"json: cannot unmarshal {type(api_version).__name__} into apiVersion of type string")
    info = openapi.served(api_version, kind)
    if info is not None:
        if kind in KINDS:
            return kind
        return Skip(kind, api_version, "not read by the scheduler")
    if kind in KINDS and kind not in openapi.served_kind_names():
        return kind  # a kind an out-of-tree plugin brought (e.g. PodGroup): its own API group
    group = api_version.rpartition("/")[0]
    if group not in openapi.builtin_groups() and "." in group:
        return Skip(kind, api_version, "a custom resource the scheduler does not read")
    message = f'no matches for kind "{kind}" in version "{api_version}"'
    versions = openapi.versions_of(kind)
    if versions:
        raise IntakeError(message + f" (served as {' or '.join(repr(v) for v in versions)})", "apiVersion")
    close = difflib.get_close_matches(kind, sorted(openapi.served_kind_names()), n=1, cutoff=0.6)
    raise IntakeError(message + (f' (did you mean "{close[0]}"?)' if close else ""), "kind")


def admit(
    kind: str,
    raw: Mapping[str, Any],
    level: FieldValidation = FieldValidation.STRICT,
    warn: Warn | None = None,
    duplicates: Sequence[tuple[str, str, int]] = (),
    admission: Callable[[Any], str | None] | None = None,
) -> Any:
    """The typed object for `raw` (of a kind resolve_kind returned), or IntakeError. `duplicates`: the
    keys the reader saw twice, as (field path, key, line; 0 for JSON, which gives no line). `admission`:
    the mutating admission checks that run between decoding and validation (its refusal, or None)."""
    info = openapi.served(str(raw.get("apiVersion")), kind)
    problems = openapi.check(info, raw) if info is not None else None
    if problems is not None and problems.type_error is not None:
        field, message = problems.type_error
        raise IntakeError(message, field)
    if level is not FieldValidation.IGNORE:
        for path, key, line in duplicates:
            # The API server's words: go-yaml's for YAML (with the line), encoding/json's for JSON.
            message = f'line {line}: key "{key}" already set in map' if line else f'duplicate field "{path}"'
            _field_problem(level, warn, message, path)
        if problems is not None and problems.unknown:
            unknown = ", ".join(f'unknown field "{path}"' for path in problems.unknown)
            if level is FieldValidation.STRICT:
                raise IntakeError(f"strict decoding error: {unknown}")
            for path in problems.unknown:
                _field_problem(level, warn, f'unknown field "{path}"', "")
    if problems is not None and problems.unknown:
        problems.drop_unknown()
    try:
        obj = decode(kind, raw)
    except DecodeError as err:
        raise IntakeError(err.message, err.field) from None
    if admission is not None:
        refusal = admission(obj)
        if refusal:
            raise IntakeError(refusal)
    errors = validate(kind, obj)
    if not errors:
        return obj
    refused = [e for e in errors if e.detail not in TOLERATED]
    if refused:
        raise IntakeError(refused[0].body(), refused[0].field, invalid=True)
    if warn is not None:
        for e in errors:
            warn(e.field, f"{e.body()} (kube-apiserver refuses this; read as kube-scheduler reads it)")
    return obj


# Validation errors read as warnings, not refusals: kube-scheduler's own fixtures break these rules (its
# golden cases request nvidia.com/gpu with no limit, through a client that does not validate), and
# what the scheduler does with such an object is well defined.
TOLERATED = frozenset({"Limit must be set for non overcommitable resources"})


def _field_problem(level: FieldValidation, warn: Warn | None, message: str, field: str) -> None:
    if level is FieldValidation.STRICT:
        raise IntakeError(message, field)
    if warn is not None:
        warn(field, message)
