"""What kube-apiserver refuses in an object before storing it (pkg/apis/*/validation), for the fields
the scheduler reads and the object metadata every kind shares.

Upstream's validation is the specification: the same rules, paths and words
(`spec.containers[0].resources.requests[cpu]: Invalid value: "-8": must be greater than or equal to 0`),
in the same order, so that a user can search for the message. Each kind's rules live in a module
named after its API group (core, apps, batch, scheduling, storage, resource) and register here.

`validate(kind, obj)` takes the typed object as decoded (before the embedded API server's defaulting,
which the validators apply where upstream validates defaulted values) and returns its errors, the
first of which is what a command reports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.config.field import FieldError

Validator = Callable[[Any], list[FieldError]]

_VALIDATORS: dict[str, Validator] = {}


def validator(*kinds: str) -> Callable[[Validator], Validator]:
    """Register a function as the validation of `kinds` (on create)."""

    def register(fn: Validator) -> Validator:
        for kind in kinds:
            _VALIDATORS[kind] = fn
        return fn

    return register


def validate(kind: str, obj: Any) -> list[FieldError]:
    """The API server's errors for creating `obj` (empty when it would accept it)."""
    fn = _VALIDATORS.get(kind)
    return fn(obj) if fn is not None else []


def validated_kinds() -> frozenset[str]:
    return frozenset(_VALIDATORS)


# Each kind's validators register on import.
from kubesched.api.validation import (  # noqa: E402, F401  (register)
    apps,
    batch,
    core,
    pod,
    policy,
    resource,
    scheduling,
    storage,
    volumes,
)
