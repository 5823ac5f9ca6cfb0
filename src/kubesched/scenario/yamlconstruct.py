"""The fast YAML reader of one stream in one process: CSafeLoader with a cached resolver and a tight
constructor that hands whatever it does not handle to SafeConstructor (see yamlstream for the rules).

Separate from yamlstream.py, which splits large streams across processes and reads each part with this.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Generator
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kubesched.scenario.yamlaliases import EXCESSIVE_ALIASING, AliasCounts, check_aliasing
from kubesched.scenario.yamlduplicates import Flagged, find_duplicates

_BaseLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"
_VALUE = "tag:yaml.org,2002:value"

# SafeConstructor's scalar constructors: pure functions of the node's text whose results are immutable.
_PURE_SCALARS = frozenset(
    {
        SafeConstructor.construct_yaml_null,
        SafeConstructor.construct_yaml_bool,
        SafeConstructor.construct_yaml_int,
        SafeConstructor.construct_yaml_float,
        SafeConstructor.construct_yaml_binary,
        SafeConstructor.construct_yaml_timestamp,
    }
)
_RESOLVE_CACHE_LIMIT = 1 << 16
_SCALAR_CACHE_LIMIT = 1 << 16
_INTERN_LIMIT = 1 << 17


class _Fallback(Exception):
    """The fast constructor met something it leaves to SafeConstructor."""


class Loader(_BaseLoader):
    """CSafeLoader with cached scalar resolution and node errors for SafeConstructor's Python errors."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        if not self.yaml_path_resolvers and None not in self.yaml_implicit_resolvers:
            # The composer calls these on every node; without path resolvers they do nothing.
            self.descend_resolver = operator.is_
            self.ascend_resolver = ().__len__
            self.resolve = _cached_resolver(self)

    def flatten_mapping(self, node: MappingNode) -> None:
        """Merge keys by our rule (merge_sources), whatever the installed PyYAML does with them."""
        _flatten(self, node, set())

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except (ValueError, KeyError, TypeError, OverflowError) as err:
            raise ConstructorError(None, None, _cannot_construct(node, err), node.start_mark) from None


def _cannot_construct(node: Node, err: Exception) -> str:
    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
    value = f" from {node.value!r}" if isinstance(node, ScalarNode) else ""
    detail = f": {err}" if isinstance(err, ValueError | OverflowError) else ""
    return f"cannot construct {tag}{value}{detail}"


def _cached_resolver(loader: Any) -> Callable[[type[Node], Any, tuple[bool, bool]], str]:
    """BaseResolver.resolve when no path resolver and no wildcard implicit resolver is registered: a plain
    scalar gets the tag of the first implicit resolver for its first character whose pattern matches,
    anything else its kind's default tag. Plain scalars are remembered by text.

    It reads the loader's tables, not the loader: stored on the loader, a reference back would make a
    cycle that keeps the parser (and its copy of the text) alive until the next collection.
    """
    implicit_resolvers = dict(loader.yaml_implicit_resolvers)
    default = loader.DEFAULT_SCALAR_TAG
    collections: dict[type[Node], str] = {
        MappingNode: loader.DEFAULT_MAPPING_TAG,
        SequenceNode: loader.DEFAULT_SEQUENCE_TAG,
    }
    cache: dict[str, str] = {}

    def resolve(kind: type[Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is not ScalarNode:
            return collections[kind]
        if not implicit[0] or value[:1] not in implicit_resolvers:
            return default
        tag = cache.get(value)
        if tag is None:
            tag = default
            for candidate, regexp in implicit_resolvers.get(value[:1], ()):
                if regexp.match(value):
                    tag = candidate
                    break
            if len(cache) >= _RESOLVE_CACHE_LIMIT:
                cache.clear()
            cache[value] = tag
        return tag

    return resolve


_Build = Callable[[Node, "dict[Node, Any] | None", "AliasCounts | None"], Any]


def _constructor(loader: Any, duplicates: list[Node]) -> tuple[_Build, Callable[[], None]] | None:
    """A function building one document's objects as SafeConstructor would (merge keys by our rule), and
    the function that takes it apart once the stream is read; or None if the loader's constructors are
    not SafeConstructor's own. It raises on anything it does not handle, and appends to `duplicates`
    each mapping in which a key repeats."""
    table = type(loader).yaml_constructors
    if (
        table.get(_STR) is not SafeConstructor.construct_yaml_str
        or table.get(_MAP) is not SafeConstructor.construct_yaml_map
        or table.get(_SEQ) is not SafeConstructor.construct_yaml_seq
    ):
        return None
    scalars = {tag: fn for tag, fn in table.items() if fn in _PURE_SCALARS}
    scalar_cache: dict[tuple[str, str], Any] = {}
    # Keys and short values repeat in every manifest: share one string object each.
    interned: dict[str, str] = {}

    def scalar(node: Any) -> Any:
        key = (node.tag, node.value)
        try:
            return scalar_cache[key]
        except KeyError:
            pass
        fn = scalars.get(node.tag)
        if fn is None:
            raise _Fallback
        value = fn(loader, node)
        if len(scalar_cache) >= _SCALAR_CACHE_LIMIT:
            scalar_cache.clear()
        scalar_cache[key] = value
        return value

    def intern(s: str) -> str:
        if len(interned) >= _INTERN_LIMIT:
            interned.clear()
        interned[s] = s
        return s

    def build(node: Any, memo: dict[Node, Any] | None, counts: AliasCounts | None) -> Any:
        # The hot paths (string keys and string values) are written out inline: this runs once per node
        # of every document.
        cls = node.__class__
        if counts is not None:
            counts.decoded_count += 1
        if cls is ScalarNode:
            if node.tag == _STR:
                value = node.value
                return (interned.get(value) or intern(value)) if len(value) <= 64 else value
            return scalar(node)
        if memo is not None and node in memo:
            if counts is not None:
                counts.decoded_count -= 1  # counted again, with everything under it, as expanded
                counts.expanded(node)
            return memo[node]
        if cls is MappingNode:
            if node.tag != _MAP:
                raise _Fallback
            out: dict[Any, Any] = {}
            if memo is not None:
                memo[node] = out
            pairs = node.value
            for key_node, value_node in pairs:
                if key_node.__class__ is not ScalarNode:
                    raise _Fallback
                tag = key_node.tag
                if tag == _STR:
                    key = key_node.value
                    key = interned.get(key) or intern(key)
                elif tag == _MERGE:
                    out.clear()
                    return build_merged(node, out, memo, counts)
                elif tag == _VALUE:
                    # SafeConstructor retags such keys in place, which aliases of them would see.
                    raise _Fallback
                else:
                    key = scalar(key_node)
                if value_node.__class__ is ScalarNode and value_node.tag == _STR:
                    value = value_node.value
                    out[key] = (interned.get(value) or intern(value)) if len(value) <= 64 else value
                else:
                    out[key] = build(value_node, memo, counts)
            if len(out) != len(pairs):
                duplicates.append(node)
            return out
        if cls is SequenceNode:
            if node.tag != _SEQ:
                raise _Fallback
            items: list[Any] = []
            if memo is not None:
                memo[node] = items
            for child in node.value:
                items.append(build(child, memo, counts))
            return items
        raise _Fallback

    def build_merged(
        node: Any, out: dict[Any, Any], memo: dict[Node, Any] | None, counts: AliasCounts | None
    ) -> dict[Any, Any]:
        """A mapping with `<<` keys, by the YAML merge spec (see merge_sources)."""
        own: list[tuple[Node, Node]] = []
        sources: list[Any] = []
        for key_node, value_node in node.value:
            if key_node.__class__ is not ScalarNode:
                raise _Fallback
            if key_node.tag == _MERGE:
                for source in merge_sources(value_node):
                    merged = build(source, memo, counts)
                    if merged is not out:  # a mapping merged into itself adds nothing
                        sources.append(merged)
            elif key_node.tag == _VALUE:
                raise _Fallback
            else:
                own.append((key_node, value_node))
        for merged in sources:
            for key, value in merged.items():
                if key not in out:
                    out[key] = value
        keys = set()
        for key_node, value_node in own:
            key = build(key_node, memo, counts)
            keys.add(key)
            out[key] = build(value_node, memo, counts)
        if len(keys) != len(own):
            duplicates.append(node)
        return out

    def release() -> None:
        """Undo the recursive functions' references to each other: a cycle that would keep the loader (and
        libyaml's copy of the text) alive until the next collection, or for good with the collector off."""
        nonlocal build, build_merged
        del build, build_merged

    return build, release


def merge_sources(value_node: Node) -> list[MappingNode]:
    """The mappings a `<<` key merges, earliest first: the mapping's own keys win over merged ones, and
    an earlier merged mapping over a later one; keys keep the order they first appear in (merged
    mappings first, then the mapping's own keys). Our own rule, so that no PyYAML release changes it."""
    if isinstance(value_node, MappingNode):
        return [value_node]
    if isinstance(value_node, SequenceNode) and all(isinstance(n, MappingNode) for n in value_node.value):
        return list(value_node.value)
    raise _Fallback


def iter_serial(text: str, skip: int = 0) -> Generator[Any, None, None]:
    """The documents of `text` after the first `skip` (which are composed but not constructed)."""
    loader = Loader(text)
    duplicates: list[Node] = []
    made = _constructor(loader, duplicates)
    build, release = made if made is not None else (None, None)
    try:
        # Without an alias ("*name") no node is reached twice, so nothing needs remembering.
        aliases = "*" in text
        n = 0
        while loader.check_node():
            node = loader.get_node()
            n += 1
            if n <= skip:
                continue
            flagged = False
            data: Any = None
            if build is not None:
                try:
                    data = build(node, {} if aliases else None, AliasCounts() if aliases else None)
                    flagged = bool(duplicates)
                except ConstructorError as err:
                    if err.problem == EXCESSIVE_ALIASING:
                        raise
                    build_failed = True
                except Exception:  # noqa: BLE001 - anything unusual: SafeConstructor decides, on the same nodes
                    build_failed = True
                else:
                    build_failed = False
                duplicates.clear()
            if build is None or build_failed:
                if aliases:
                    check_aliasing(node)
                found = find_duplicates(node, lambda k: _node_key(loader, k))
                data = loader.construct_document(node)
                if found:
                    data = Flagged(data, found)
            elif flagged:
                data = Flagged(data, find_duplicates(node, lambda k: _node_key(loader, k)))
            yield data
    finally:
        if release is not None:
            release()
        loader.dispose()


def _node_key(loader: Any, node: Node) -> Any:
    """The dict key a key node becomes (for pure scalars), else something equal only to itself."""
    if isinstance(node, ScalarNode):
        if node.tag == _STR:
            return node.value
        fn = type(loader).yaml_constructors.get(node.tag)
        if fn in _PURE_SCALARS:
            try:
                return fn(loader, node)
            except Exception:  # noqa: BLE001 - SafeConstructor reports it when it builds the document
                return (node.tag, node.value)
        return (node.tag, node.value)
    return node


def _flatten(loader: Any, node: MappingNode, active: set[int]) -> None:
    """Resolve `node`'s merge keys in place by our rule (merge_sources): each key once, at the position it
    first appears in, with the value that wins."""
    own: list[tuple[Node, Node]] = []
    merged: list[list[tuple[Node, Node]]] = []
    has_merge = False
    active.add(id(node))
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE:
            has_merge = True
            try:
                sources = merge_sources(value_node)
            except _Fallback:
                if isinstance(value_node, SequenceNode):
                    bad = next(n for n in value_node.value if not isinstance(n, MappingNode))
                    raise ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"expected a mapping for merging, but found {bad.id}",
                        bad.start_mark,
                    ) from None
                raise ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"expected a mapping or list of mappings for merging, but found {value_node.id}",
                    value_node.start_mark,
                ) from None
            for source in sources:
                if id(source) in active:
                    continue  # a mapping merged into itself adds nothing
                _flatten(loader, source, active)
                merged.append(source.value)
        else:
            if key_node.tag == _VALUE:
                key_node.tag = _STR
            own.append((key_node, value_node))
    active.discard(id(node))
    if not has_merge:
        return
    chosen: dict[Any, tuple[Node, Node]] = {}
    for source_pairs in merged:
        # A merged mapping is what it builds to: of its own duplicate keys the last wins (at the first's place).
        built: dict[Any, tuple[Node, Node]] = {}
        for key_node, value_node in source_pairs:
            built[_node_key(loader, key_node)] = (key_node, value_node)
        for key, pair in built.items():
            chosen.setdefault(key, pair)
    pairs = list(chosen.values())
    for pair in own:
        key = _node_key(loader, pair[0])
        if key in chosen:
            pairs[list(chosen).index(key)] = pair
        else:
            pairs.append(pair)
    node.value = pairs
