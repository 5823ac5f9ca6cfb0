"""Edits of a raw manifest for validation tests: set or drop the field at a dotted path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def set_field(path: str, value: object) -> Callable[[dict[str, Any]], None]:
    """A change that sets the field at a dotted path (creating mappings on the way)."""

    def change(raw: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = raw
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value

    return change


def drop_field(path: str) -> Callable[[dict[str, Any]], None]:
    """A change that removes the field at a dotted path."""

    def change(raw: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = raw
        for p in parents:
            node = node[p]
        del node[last]

    return change
