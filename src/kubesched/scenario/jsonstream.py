"""JSON manifests (`kubectl get -o json`, API responses): one or more JSON values, read as JSON.

YAML readers take most JSON, but also what JSON forbids (a trailing comma, single quotes), which
the API server refuses; so a stream that starts with `{` or `[` is read by the json module. Duplicate
keys are reported as yamlstream reports them (a Flagged document), with the path the API server
names (`duplicate field "status.capacity.cpu"`) and no line (json does not say where a key was).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from kubesched.scenario.yamlstream import DuplicateKey, Flagged


class JSONStreamError(ValueError):
    """Malformed JSON: where, and json's description."""

    def __init__(self, line: int, column: int, problem: str) -> None:
        super().__init__(f"line {line}, column {column}: {problem}")
        self.line = line
        self.column = column
        self.problem = problem


def looks_like_json(text: str) -> bool:
    return text.lstrip()[:1] in ("{", "[")


def iter_json_documents(text: str) -> Iterator[Any]:
    """Each JSON value of `text` in turn (whitespace between them), Flagged when a key repeats."""
    repeated: dict[int, list[str]] = {}  # id of an object -> its keys given twice

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(items)
        if len(obj) != len(items):
            seen: set[str] = set()
            keys = repeated.setdefault(id(obj), [])
            for key, _ in items:
                if key in seen:
                    keys.append(key)
                seen.add(key)
        return obj

    decoder = json.JSONDecoder(object_pairs_hook=pairs)
    pos = 0
    end = len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos >= end:
            return
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            raise JSONStreamError(err.lineno, err.colno, err.msg) from None
        except RecursionError:
            raise JSONStreamError(text.count("\n", 0, pos) + 1, 1, "nested too deeply") from None
        if repeated:
            value = Flagged(value, _duplicates(value, repeated))
            repeated.clear()
        yield value


def _duplicates(value: Any, repeated: dict[int, list[str]]) -> tuple[DuplicateKey, ...]:
    """The repeated keys with their paths (line 0: JSON does not say where)."""
    found: list[DuplicateKey] = []
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        v, path = stack.pop()
        if isinstance(v, dict):
            for key in repeated.get(id(v), ()):
                found.append(DuplicateKey(f"{path}.{key}" if path else key, key, 0))
            stack += [(x, f"{path}.{k}" if path else k) for k, x in v.items()]
        elif isinstance(v, list):
            stack += [(x, f"{path}[{i}]") for i, x in enumerate(v)]
    return tuple(sorted(found))
