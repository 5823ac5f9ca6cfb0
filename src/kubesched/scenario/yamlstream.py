"""YAML streams read exactly as `yaml.load_all(text, Loader=yaml.CSafeLoader)` reads them, several times faster.

Scenario files can hold hundreds of thousands of documents, and PyYAML's safe
loading is generic: a regex resolver runs on every plain scalar, two Python
callbacks run on every node for path resolvers nobody registered, and
SafeConstructor builds every object through generators and per-node
bookkeeping. libyaml still scans, parses and composes here, so what is valid
YAML and where an error is reported stay libyaml's. What changes:

- Plain scalars are resolved through a cache keyed by their text (with no
  path resolvers registered, resolution depends on nothing else), and the
  path-resolver callbacks are C no-ops.
- Each document's nodes become Python objects through a tight constructor for
  what SafeConstructor does the same way for every input: str, int, float,
  bool, null, timestamp and binary scalars (cached by tag and text; all are
  immutable), maps with merge keys, sequences and aliases (shared as
  SafeConstructor shares them). Anything else (another tag, a `=` key, a
  non-scalar key, a merge cycle, any exception) sends the document through
  SafeConstructor itself, on the same untouched nodes, so the result or the
  error is SafeConstructor's.
- A large stream, when a second core is idle, is split at document starts
  (`---` at the start of a line, which libyaml reads as a document start or
  rejects) and the later part is read by a forked process that sends the
  documents back pickled (exact for every type SafeConstructor makes). If any
  part fails, the stream is read again serially, skipping the documents
  already delivered, so errors (and a split libyaml would not have made) come
  out as in a serial read.

Where SafeConstructor itself fails with a Python error rather than a YAML one
(`!!int abc`, `!!bool maybe`, a timestamp offset of 30 hours), the error is
turned into a ConstructorError at the node, so that callers can report it as
malformed YAML with a line and column instead of crashing.
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing
import operator
import os
import pickle
import queue
import re
import threading
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any, NamedTuple

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

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

# Streams at least this long are split across processes (a few thousand manifests: below that a
# fork costs more than it saves).
PARALLEL_MIN_CHARS = 4_000_000
# The share of the stream the calling process reads itself: it also decodes every document.
_FIRST_SHARE = 0.38
_BATCH = 500
# A document start: "---" at the start of a line, then a blank, a line break or the end.
_DOC_START = re.compile(r"\n(?=---(?:[ \t\r\n\x85\u2028\u2029]|\Z))")


class _Fallback(Exception):
    """The fast constructor met something it leaves to SafeConstructor."""


class Loader(_BaseLoader):  # type: ignore[misc,valid-type]
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
    collections = {MappingNode: loader.DEFAULT_MAPPING_TAG, SequenceNode: loader.DEFAULT_SEQUENCE_TAG}
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


_Build = Callable[[Node, "dict[Node, Any] | None", "_AliasCounts | None"], Any]


def _constructor(loader: Any, duplicates: list[Node]) -> _Build | None:
    """A function building one document's objects as SafeConstructor would (merge keys by our rule), or
    None if the loader's constructors are not SafeConstructor's own. It raises on anything it does not
    handle, and appends to `duplicates` each mapping in which a key repeats."""
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

    def build(node: Any, memo: dict[Node, Any] | None, counts: _AliasCounts | None) -> Any:
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
        node: Any, out: dict[Any, Any], memo: dict[Node, Any] | None, counts: _AliasCounts | None
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

    return build


def merge_sources(value_node: Node) -> list[MappingNode]:
    """The mappings a `<<` key merges, earliest first: the mapping's own keys win over merged ones, and
    an earlier merged mapping over a later one; keys keep the order they first appear in (merged
    mappings first, then the mapping's own keys). Our own rule, so that no PyYAML release changes it."""
    if isinstance(value_node, MappingNode):
        return [value_node]
    if isinstance(value_node, SequenceNode) and all(isinstance(n, MappingNode) for n in value_node.value):
        return list(value_node.value)
    raise _Fallback


class _AliasCounts:
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


EXCESSIVE_ALIASING = "document contains excessive aliasing"


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


def _check_aliasing(root: Node) -> None:
    """The alias-bomb guard for a document SafeConstructor builds: the same counts, from the node graph."""
    counts = _AliasCounts()
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
    return str(node.value) if isinstance(node, ScalarNode) else f"<{node.id}>"


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


def _iter_serial(text: str, skip: int = 0) -> Iterator[Any]:
    """The documents of `text` after the first `skip` (which are composed but not constructed)."""
    loader = Loader(text)
    try:
        duplicates: list[Node] = []
        build = _constructor(loader, duplicates)
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
                    data = build(node, {} if aliases else None, _AliasCounts() if aliases else None)
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
                    _check_aliasing(node)
                found = find_duplicates(node, lambda k: _node_key(loader, k))
                data = loader.construct_document(node)
                if found:
                    data = Flagged(data, found)
            elif flagged:
                data = Flagged(data, find_duplicates(node, lambda k: _node_key(loader, k)))
            yield data
    finally:
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
    merged: list[tuple[Node, Node]] = []
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
                merged.extend(source.value)
        else:
            if key_node.tag == _VALUE:
                key_node.tag = _STR
            own.append((key_node, value_node))
    active.discard(id(node))
    if not has_merge:
        return
    chosen: dict[Any, tuple[Node, Node]] = {}
    for key_node, value_node in merged:
        chosen.setdefault(_node_key(loader, key_node), (key_node, value_node))
    pairs = list(chosen.values())
    for pair in own:
        key = _node_key(loader, pair[0])
        if key in chosen:
            pairs[list(chosen).index(key)] = pair
        else:
            pairs.append(pair)
    node.value = pairs


def _bounds(text: str, parts: int) -> list[int]:
    """Offsets splitting `text` at document starts into up to `parts` pieces, the first _FIRST_SHARE long."""
    bounds = [0]
    n = len(text)
    rest = (1 - _FIRST_SHARE) / (parts - 1)
    for k in range(1, parts):
        target = int(n * (_FIRST_SHARE + rest * (k - 1)))
        m = _DOC_START.search(text, max(target, bounds[-1]))
        if m is None:
            break
        bounds.append(m.end())
    bounds.append(n)
    return bounds


def _can_fork() -> bool:
    """Forking is cheap (the text is shared) but unsafe once other threads exist."""
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def _default_workers(text: str) -> int:
    """2 for a large stream when this process may use two cores and one of them is idle: on a busy
    machine a second reader only adds the cost of pickling. (The load average counts this process too
    once it has been busy for a while: a long-running caller that wants the split asks for 2.)"""
    if len(text) < PARALLEL_MIN_CHARS:
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cpus < 2:
        return 1
    try:
        busy = os.getloadavg()[0]
    except OSError:
        busy = 0.0
    return 2 if cpus - busy >= 0.75 else 1


def _worker(text: str, start: int, end: int, conn: Connection) -> None:
    """A forked reader: pickled batches of documents, then ("end", None), or ("error", None).

    Batches queue up here and a thread sends them, so that reading does not stall on the pipe
    while the parent is still busy with its own share.
    """
    gc.disable()
    out: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
    sender = threading.Thread(target=_send_all, args=(out, conn), daemon=True)
    sender.start()
    try:
        batch: list[Any] = []
        for doc in _iter_serial(text[start:end]):
            batch.append(doc)
            if len(batch) >= _BATCH:
                out.put(pickle.dumps(("docs", batch), pickle.HIGHEST_PROTOCOL))
                batch = []
        out.put(pickle.dumps(("docs", batch), pickle.HIGHEST_PROTOCOL))
        out.put(pickle.dumps(("end", None)))
    except Exception:  # noqa: BLE001 - the parent rereads serially and reports the real error
        out.put(pickle.dumps(("error", None)))
    out.put(None)
    sender.join()
    conn.close()


def _send_all(out: queue.SimpleQueue[bytes | None], conn: Connection) -> None:
    while (msg := out.get()) is not None:
        try:
            conn.send_bytes(msg)
        except OSError:
            return


def iter_documents(text: str, workers: int | None = None) -> Iterator[Any]:
    """Every document of the stream (None for an empty one), equal to what
    `yaml.load_all(text, Loader=yaml.CSafeLoader)` yields, or its error.

    `workers`: processes to read with; None: see _default_workers; 1: never fork. The
    documents, and any error, are the same whatever the number.
    """
    if workers is None:
        workers = _default_workers(text)
    bounds = _bounds(text, workers) if workers > 1 and _can_fork() else [0, len(text)]
    if len(bounds) <= 2:
        yield from _iter_serial(text)
        return
    ctx = multiprocessing.get_context("fork")
    children: list[tuple[Any, Connection]] = []
    docs = _iter_serial(text[: bounds[1]])
    delivered = 0
    failed = False
    try:
        try:
            for start, end in itertools.pairwise(bounds[1:]):
                recv, send = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_worker, args=(text, start, end, send), daemon=True)
                try:
                    proc.start()
                except OSError:
                    recv.close()
                    raise
                finally:
                    send.close()
                children.append((proc, recv))
        except OSError:
            failed = True
        while not failed:
            try:
                doc = next(docs)
            except StopIteration:
                break
            except Exception:  # noqa: BLE001 - reread serially below for the exact error
                failed = True
                break
            yield doc
            delivered += 1
        for _, recv in children:
            while not failed:
                try:
                    status, batch = pickle.loads(recv.recv_bytes())
                except (EOFError, OSError, pickle.UnpicklingError):
                    status, batch = "error", None
                if status == "end":
                    break
                if status != "docs":
                    failed = True
                    break
                for doc in batch:
                    yield doc
                    delivered += 1
    finally:
        docs.close()
        for proc, recv in children:
            recv.close()
            if proc.is_alive():
                proc.terminate()
            proc.join()
    if failed:
        yield from _iter_serial(text, skip=delivered)
