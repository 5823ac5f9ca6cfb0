"""Keys given twice in one mapping of a YAML document, found on its nodes: the API server refuses or warns
about them (fieldValidation), while a lenient decode keeps the last value. Shared with jsonstream."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

_MERGE = "tag:yaml.org,2002:merge"


class DuplicateKey(NamedTuple):
    """A key given twice in one mapping: where (a field path), which key, and the line of the second."""

    path: str
    key: str
    line: int


class Flagged:
    """A document with duplicate keys: `data` as decoded (the last value of each key wins, as a lenient
    decoder takes it) and the duplicates, for the caller to refuse or warn about."""

    __slots__ = ("data", "duplicates")

    def __init__(self, data: Any, duplicates: tuple[DuplicateKey, ...]) -> None:
        self.data = data
        self.duplicates = duplicates

    def __reduce__(self) -> tuple[Any, ...]:
        return (Flagged, (self.data, self.duplicates))


def _key_text(node: Node) -> str:
    return f"<{node.id}>" if isinstance(node, MappingNode | SequenceNode) else str(node.value)


def find_duplicates(root: Node, key_of: Callable[[Node], Any]) -> tuple[DuplicateKey, ...]:
    """Every key given twice in one mapping of the document (merge keys aside), with its field path."""
    found: list[DuplicateKey] = []
    seen: set[int] = set()
    stack: list[tuple[Node, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            keys: set[Any] = set()
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE:
                    stack.append((value_node, path))
                    continue
                text = _key_text(key_node)
                child = f"{path}.{text}" if path else text
                try:
                    key = key_of(key_node)
                    hash(key)
                except Exception:  # noqa: BLE001 - an unhashable or unbuildable key is SafeConstructor's to report
                    key = None
                if key is not None or isinstance(key_node, ScalarNode):
                    if key in keys:
                        found.append(DuplicateKey(child, text, key_node.start_mark.line + 1))
                    keys.add(key)
                stack.append((value_node, child))
        elif isinstance(node, SequenceNode):
            for i, child_node in enumerate(node.value):
                stack.append((child_node, f"{path}[{i}]"))
    found.sort(key=lambda d: d.line)
    return tuple(found)
