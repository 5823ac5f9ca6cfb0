"""The table of validators by kind, kept apart from the package's __init__.

Each API group's module registers its validators with `@validator(kind)` when
it is imported, and the package's __init__ imports all of them; with the table
here, those modules import this leaf instead of the package that imports them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.gocompat.field import FieldError

Validator = Callable[[Any], list[FieldError]]

VALIDATORS: dict[str, Validator] = {}


def validator(*kinds: str) -> Callable[[Validator], Validator]:
    """Register a function as the validation of `kinds` (on create)."""

    def register(fn: Validator) -> Validator:
        for kind in kinds:
            VALIDATORS[kind] = fn
        return fn

    return register
