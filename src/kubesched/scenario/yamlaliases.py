"""go-yaml's guard against alias bombs, as the API server applies it to a YAML document: kept apart from
the constructor because both the fast path and SafeConstructor's fallback apply it."""

from __future__ import annotations

from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

EXCESSIVE_ALIASING = "document contains excessive aliasing"


class AliasCounts:
    """go-yaml's guard against alias bombs, as the API server applies it: nodes decoded counting every
    alias as expanded, and how many of those came from expanding aliases; a document whose expansion
    is mostly aliases (above a ratio that falls from 99% to 10% as documents grow) is refused."""

    __slots__ = ("aliased", "decoded_count", "sizes")

    def __init__(self) -> None:
        self.decoded_count = 0
        self.aliased = 0
        self.sizes: dict[Node, int] = {}

    def expanded(self, node: Node) -> None:
        size = _expanded_size(node, self.sizes, set())
        self.decoded_count += size
        self.aliased += size
        self.check(node)

    def check(self, node: Node) -> None:
        if (
            self.aliased > 100
            and self.decoded_count > 1000
            and self.aliased / self.decoded_count > _allowed_ratio(self.decoded_count)
        ):
            raise ConstructorError(None, None, EXCESSIVE_ALIASING, node.start_mark)


def _allowed_ratio(decoded: int) -> float:
    low, high = 400_000, 4_000_000
    if decoded <= low:
        return 0.99
    if decoded >= high:
        return 0.10
    return 0.99 - 0.89 * (decoded - low) / (high - low)


def _expanded_size(node: Node, sizes: dict[Node, int], active: set[int]) -> int:
    """How many nodes `node` stands for once every alias under it is expanded (a cycle counts once)."""
    size = sizes.get(node)
    if size is not None:
        return size
    if id(node) in active:
        return 1
    if isinstance(node, ScalarNode):
        return 1
    active.add(id(node))
    total = 1
    if isinstance(node, MappingNode):
        for key_node, value_node in node.value:
            total += _expanded_size(key_node, sizes, active) + _expanded_size(value_node, sizes, active)
    else:
        for child in node.value:
            total += _expanded_size(child, sizes, active)
    active.discard(id(node))
    sizes[node] = total
    return total


def check_aliasing(root: Node) -> None:
    """The alias-bomb guard for a document SafeConstructor builds: the same counts, from the node graph."""
    counts = AliasCounts()
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen and not isinstance(node, ScalarNode):
            counts.expanded(node)
            continue
        seen.add(id(node))
        counts.decoded_count += 1
        if isinstance(node, MappingNode):
            for key_node, value_node in reversed(node.value):
                stack.append(value_node)
                stack.append(key_node)
        elif isinstance(node, SequenceNode):
            stack.extend(reversed(node.value))
