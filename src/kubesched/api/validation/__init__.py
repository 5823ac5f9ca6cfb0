"""What kube-apiserver refuses in an object before storing it (pkg/apis/*/validation), for the fields
the scheduler reads and the object metadata every kind shares.

Upstream's validation is the specification: the same rules, paths and words
(`spec.containers[0].resources.requests[cpu]: Invalid value: "-8": must be greater than or equal to 0`),
in the same order, so that a user can search for the message. Each kind's rules live in a module
named after its API group (core, apps, batch, scheduling, storage, resource), which registers
its validators (registry.py) when this package imports it.

`validate(kind, obj)` takes the typed object as decoded (before the embedded API server's defaulting,
which the validators apply where upstream validates defaulted values) and returns its errors, the
first of which is what a command reports.
"""

from __future__ import annotations

from typing import Any

# Each API group's validators register on import.
from kubesched.api.validation import (  # noqa: F401  (register)
    apps,
    batch,
    core,
    pod,
    policy,
    resource,
    resource_slice,
    scheduling,
    storage,
    volumes,
)
from kubesched.api.validation.registry import VALIDATORS
from kubesched.gocompat.field import FieldError


def validate(kind: str, obj: Any) -> list[FieldError]:
    """The API server's errors for creating `obj` (empty when it would accept it)."""
    fn = VALIDATORS.get(kind)
    return fn(obj) if fn is not None else []


def validated_kinds() -> frozenset[str]:
    return frozenset(VALIDATORS)
