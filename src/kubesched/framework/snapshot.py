"""The Snapshot: NodeInfos in scheduling order, plus columnar arrays over all nodes.

Upstream (backend/cache/snapshot.go) copies changed NodeInfos into a snapshot
at the start of every cycle. Here the cache mutates NodeInfos only between
cycles, so the snapshot shares them and refreshes, per cycle, only the rows of
the columns whose NodeInfo generation changed.

Columns are int64 arrays indexed by a node's position in `nodes` (its
`NodeInfo.index`): the whole-snapshot fast paths of plugins work on them.
Their arithmetic wraps as Go's int64 arithmetic does (a node may declare
2^63-1 of something, or an amount that Go read as a wrapped negative).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, TypeVar, cast, overload

import numpy as np

from kubesched.api.int64 import MAX_INT64, MIN_INT64, wrap
from kubesched.framework.pod_index import CountIndex, KeyIndex, RowChanges, RowScores, RowValues, SumsIndex
from kubesched.framework.types import NodeInfo, Resource

PodIndex = CountIndex | KeyIndex[Any] | SumsIndex | RowValues[Any] | RowScores

# Pod indexes kept at once (least recently used dropped): each holds an int64 per node.
MAX_POD_INDEXES = 128

# While every amount in the columns is in [0, NARROW), sums of two and products with 100 stay
# in int64 and scores stay in [0, 100]: plugins may skip Go's wrapping arithmetic (NodeColumns.wide).
NARROW = 1 << 54

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
IndexT = TypeVar("IndexT", bound=PodIndex)


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


class NodeSubset(Sequence[NodeInfo]):
    """Some of the snapshot's NodeInfos, by index, materialized only when read."""

    __slots__ = ("_idx", "_nodes")

    def __init__(self, nodes: list[NodeInfo], idx: np.ndarray) -> None:
        self._nodes = nodes
        self._idx = idx

    def __len__(self) -> int:
        return len(self._idx)

    @property
    def indices(self) -> np.ndarray:
        """The snapshot indices of the subset's nodes (read-only)."""
        return self._idx

    @overload
    def __getitem__(self, i: int) -> NodeInfo: ...

    @overload
    def __getitem__(self, i: slice) -> list[NodeInfo]: ...

    def __getitem__(self, i: int | slice) -> NodeInfo | list[NodeInfo]:
        if isinstance(i, slice):
            return [self._nodes[int(j)] for j in self._idx[i]]
        return self._nodes[int(self._idx[i])]

    def __iter__(self) -> Iterator[NodeInfo]:
        nodes = self._nodes
        return (nodes[int(j)] for j in self._idx)


class NodeColumns:
    """Allocatable and requested resources of every node, one int64 array each."""

    BASE = (
        "alloc_cpu",
        "alloc_mem",
        "alloc_eph",
        "alloc_pods",
        "req_cpu",
        "req_mem",
        "req_eph",
        "nz_cpu",
        "nz_mem",
        "pod_count",
    )

    def __init__(self, n: int) -> None:
        self.n = n
        self.alloc_cpu = np.zeros(n, np.int64)
        self.alloc_mem = np.zeros(n, np.int64)
        self.alloc_eph = np.zeros(n, np.int64)
        self.alloc_pods = np.zeros(n, np.int64)
        self.req_cpu = np.zeros(n, np.int64)
        self.req_mem = np.zeros(n, np.int64)
        self.req_eph = np.zeros(n, np.int64)
        self.nz_cpu = np.zeros(n, np.int64)
        self.nz_mem = np.zeros(n, np.int64)
        self.pod_count = np.zeros(n, np.int64)
        # allocatable - requested (wrapped as Go's int64 subtraction): what NodeResourcesFit compares a request with.
        self.free_cpu = np.zeros(n, np.int64)
        self.free_mem = np.zeros(n, np.int64)
        self.free_eph = np.zeros(n, np.int64)
        self.has_ports = np.zeros(n, bool)
        # The allocatable each row was written from (see write_row).
        self._alloc_of: list[Resource | None] = [None] * n
        # scalar resource name -> (allocatable, requested, has-allocatable-entry)
        self.scalar_alloc: dict[str, np.ndarray] = {}
        self.scalar_req: dict[str, np.ndarray] = {}
        self.scalar_present: dict[str, np.ndarray] = {}
        # Set (for good) once some amount is negative or reaches NARROW.
        self.wide = False

    def _ensure_scalar(self, name: str, nodes: list[NodeInfo]) -> None:
        if name in self.scalar_alloc:
            return
        self.scalar_alloc[name] = np.array([ni.allocatable.scalar.get(name, 0) for ni in nodes], np.int64)
        self.scalar_req[name] = np.array([ni.requested.scalar.get(name, 0) for ni in nodes], np.int64)
        self.scalar_present[name] = np.array([name in ni.allocatable.scalar for ni in nodes], bool)

    def write_row(self, i: int, ni: NodeInfo, nodes: list[NodeInfo]) -> None:
        a, r, z = ni.allocatable, ni.requested, ni.non_zero_requested
        a_cpu, a_mem, a_eph = a.milli_cpu, a.memory, a.ephemeral_storage
        r_cpu, r_mem, r_eph = r.milli_cpu, r.memory, r.ephemeral_storage
        alloc_of = self._alloc_of
        if alloc_of[i] is not a:
            # A NodeInfo's allocatable is replaced, never changed in place: a pod's change leaves it as written.
            alloc_of[i] = a
            self.alloc_cpu[i] = a_cpu
            self.alloc_mem[i] = a_mem
            self.alloc_eph[i] = a_eph
            self.alloc_pods[i] = a.allowed_pod_number
            if not (0 <= a_cpu < NARROW and 0 <= a_mem < NARROW and 0 <= a_eph < NARROW):
                self.wide = True
        self.req_cpu[i] = r_cpu
        self.req_mem[i] = r_mem
        self.req_eph[i] = r_eph
        self.nz_cpu[i] = z.milli_cpu
        self.nz_mem[i] = z.memory
        self.pod_count[i] = len(ni.pods)
        # Go's int64 subtraction (wrap) only where it can leave the range: both amounts are int64.
        free = a_cpu - r_cpu
        self.free_cpu[i] = free if MIN_INT64 <= free <= MAX_INT64 else wrap(free)
        free = a_mem - r_mem
        self.free_mem[i] = free if MIN_INT64 <= free <= MAX_INT64 else wrap(free)
        free = a_eph - r_eph
        self.free_eph[i] = free if MIN_INT64 <= free <= MAX_INT64 else wrap(free)
        self.has_ports[i] = bool(ni.used_ports)
        if not self.wide and not (
            0 <= r_cpu < NARROW
            and 0 <= r_mem < NARROW
            and 0 <= r_eph < NARROW
            and 0 <= z.milli_cpu < NARROW
            and 0 <= z.memory < NARROW
        ):
            self.wide = True
        if a.scalar or r.scalar or self.scalar_alloc:  # the usual cluster has no scalar resource
            self._write_scalars(i, a, r, nodes)

    def _write_scalars(self, i: int, a: Resource, r: Resource, nodes: list[NodeInfo]) -> None:
        for v in (*a.scalar.values(), *r.scalar.values()):
            if not 0 <= v < NARROW:
                self.wide = True
        for name in a.scalar.keys() | r.scalar.keys():
            self._ensure_scalar(name, nodes)
        for name, arr in self.scalar_alloc.items():
            arr[i] = a.scalar.get(name, 0)
            self.scalar_req[name][i] = r.scalar.get(name, 0)
            self.scalar_present[name][i] = name in a.scalar

    def scalar(self, name: str, nodes: list[NodeInfo]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(allocatable, requested, present) arrays of a scalar resource, zeros if unknown."""
        self._ensure_scalar(name, nodes)
        return self.scalar_alloc[name], self.scalar_req[name], self.scalar_present[name]


class Snapshot:
    """NodeInfos in scheduling order, by name, and the columns. Read-only for plugins."""

    def __init__(self) -> None:
        self.nodes: list[NodeInfo] = []
        self.node_map: dict[str, NodeInfo] = {}
        self.columns = NodeColumns(0)
        # Each row's NodeInfo generation as of the last refresh: the pod indexes sync against it.
        self.row_gen = np.zeros(0, np.int64)
        # Which rows each refresh rewrote: a pod index checks those rather than every row.
        self.row_changes = RowChanges()
        self._pod_indexes: OrderedDict[Hashable, PodIndex] = OrderedDict()
        # Bumped when the node list or any Node object changes (labels, taints, allocatable, images).
        self.node_generation = 0
        # Bumped whenever anything changes.
        self.generation = 0
        self._affinity_lists: tuple[list[NodeInfo], list[NodeInfo]] | None = None
        # Indices of nodes with pods that have (anti-)affinity, maintained row by row.
        self._with_affinity: set[int] = set()
        self._with_anti_affinity: set[int] = set()
        self._used_pvcs: set[str] | None = None
        # Caches that depend only on Node objects, dropped when node_generation changes.
        self._node_caches: dict[object, object] = {}
        self._node_caches_generation = -1

    # ------------------------------------------------------------ read access

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    def get(self, name: str) -> NodeInfo | None:
        return self.node_map.get(name)

    def node_infos(self) -> list[NodeInfo]:
        """The NodeInfos in scheduling order (NodeInfoLister.List upstream); the same list as `nodes`."""
        return self.nodes

    def have_pods_with_affinity(self) -> list[NodeInfo]:
        return self._lists()[0]

    def have_pods_with_required_anti_affinity(self) -> list[NodeInfo]:
        return self._lists()[1]

    def any_pods_with_affinity(self) -> bool:
        """Whether have_pods_with_affinity() is not empty (without building it)."""
        return bool(self._with_affinity)

    def any_pods_with_required_anti_affinity(self) -> bool:
        """Whether have_pods_with_required_anti_affinity() is not empty (without building it)."""
        return bool(self._with_anti_affinity)

    def _lists(self) -> tuple[list[NodeInfo], list[NodeInfo]]:
        if self._affinity_lists is None:
            nodes = self.nodes
            self._affinity_lists = (
                [nodes[i] for i in sorted(self._with_affinity)],
                [nodes[i] for i in sorted(self._with_anti_affinity)],
            )
        return self._affinity_lists

    def _track_affinity(self, i: int, ni: NodeInfo) -> None:
        has_affinity = bool(ni.pods_with_affinity)
        has_anti_affinity = bool(ni.pods_with_required_anti_affinity)
        with_affinity, with_anti_affinity = self._with_affinity, self._with_anti_affinity
        if has_affinity == (i in with_affinity) and has_anti_affinity == (i in with_anti_affinity):
            return  # the usual row: no change to either list
        for members, has in ((with_affinity, has_affinity), (with_anti_affinity, has_anti_affinity)):
            if has != (i in members):
                if has:
                    members.add(i)
                else:
                    members.discard(i)
                self._affinity_lists = None

    def is_pvc_used_by_pods(self, key: str) -> bool:
        if self._used_pvcs is None:
            self._used_pvcs = {k for ni in self.nodes for k in ni.pvc_ref_counts}
        return key in self._used_pvcs

    def scalar_columns(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.columns.scalar(name, self.nodes)

    def node_cache(self, key: object, build: Callable[[], T]) -> T:
        """A value derived from Node objects only (labels, taints, images), rebuilt when a node changes."""
        if self._node_caches_generation != self.node_generation:
            self._node_caches = {}
            self._node_caches_generation = self.node_generation
        try:
            return self._node_caches[key]  # type: ignore[return-value]
        except KeyError:
            value = build()
            self._node_caches[key] = value
            return value

    def label_values(self, key: str) -> np.ndarray:
        """Every node's value of label `key` (None where absent), as an object array."""
        return self.node_cache(
            ("label", key),
            lambda: np.array(
                [ni.node.metadata.labels.get(key) if ni.node is not None else None for ni in self.nodes], dtype=object
            ),
        )

    def pod_counts(self, key: Hashable, count: Callable[[NodeInfo], int]) -> np.ndarray:
        """Per node, `count(node_info)`, recomputed only on rows that changed; `key` names the predicate.

        The array is the index's own: read it, do not write it.
        """
        index = self._pod_index(key, lambda: CountIndex(self.num_nodes, count))
        return index.sync(self.nodes, self.row_gen, self.row_changes)

    def key_counts(self, key: Hashable, extract: Callable[[NodeInfo], Iterable[K]]) -> dict[K, np.ndarray]:
        """Per key that `extract` yields for some node, how many times each node yields it."""
        index = self._pod_index(key, lambda: KeyIndex(self.num_nodes, extract))
        return index.sync(self.nodes, self.row_gen, self.row_changes)

    def pod_sums(self, key: Hashable, select: Callable[[NodeInfo], tuple[Resource, int]]) -> SumsIndex:
        """Per node, the summed requests and number of the pods `select` picks (arrays, read-only)."""
        index = self._pod_index(key, lambda: SumsIndex(self.num_nodes, select))
        return index.sync(self.nodes, self.row_gen, self.row_changes)

    def row_values(self, key: Hashable, derive: Callable[[NodeInfo], T]) -> list[T]:
        """Per node, `derive(node_info)`, recomputed only on rows that changed."""
        index = self._pod_index(key, lambda: RowValues(self.num_nodes, derive))
        return index.sync(self.nodes, self.row_gen, self.row_changes)

    def row_scores(
        self,
        key: Hashable,
        build: Callable[[], tuple[Callable[[NodeInfo], int], Callable[[np.ndarray], np.ndarray]]],
        idx: np.ndarray,
    ) -> np.ndarray:
        """At `idx`, per node an int64 that depends on its row alone; `key` names the question (e.g. a
        plugin and a pod shape). `build()` gives `one(node_info)` and `many(indices)` (several rows at
        once); it is called only when the index is made, so callers need not build them per pod. Each row
        is computed once and again only when it changes: pods of one shape share the work (a new array)."""
        index = self._pod_index(key, lambda: RowScores(self.num_nodes, *build()))
        return index.sync(self.nodes, self.row_gen, idx, self.row_changes)

    def row_scores_all(
        self,
        key: Hashable,
        build: Callable[[], tuple[Callable[[NodeInfo], int], Callable[[np.ndarray], np.ndarray]]],
    ) -> RowScores:
        """row_scores at every node: the index itself, up to date (read its `values` and `nonzero`, do not keep
        or write them)."""
        index = self._pod_index(key, lambda: RowScores(self.num_nodes, *build()))
        index.sync_all(self.nodes, self.row_gen, self.row_changes)
        return index

    def _pod_index(self, key: Hashable, build: Callable[[], IndexT]) -> IndexT:
        indexes = self._pod_indexes
        index = indexes.get(key)
        if index is None:
            built = build()
            indexes[key] = built
            if len(indexes) > MAX_POD_INDEXES:
                indexes.popitem(last=False)
            return built
        indexes.move_to_end(key)
        # A key names one question, always asked through the same method: its index is of the kind built for it.
        return cast(IndexT, index)

    def rotated_indices(self, start: int) -> np.ndarray:
        """Every node index from `start` on, wrapping around (0 <= start < num_nodes): a read-only view of one
        array kept per node list, rather than a new one per pod."""
        n = self.num_nodes
        twice = self.node_cache("rotations", lambda: _read_only(np.tile(np.arange(n, dtype=np.int64), 2)))
        return twice[start : start + n]

    def node_names(self) -> np.ndarray:
        return self.node_cache("names", lambda: np.array([ni.name for ni in self.nodes], dtype=object))

    # ------------------------------------------------------------ updates (by the cache)

    def rebuild(self, ordered: list[NodeInfo]) -> None:
        """New node list (nodes added, removed or moved between zones): rebuild every column."""
        self.nodes = ordered
        self.node_map = {ni.name: ni for ni in ordered}
        self.columns = NodeColumns(len(ordered))
        self._with_affinity = set()
        self._with_anti_affinity = set()
        for i, ni in enumerate(ordered):
            ni.index = i
            self.columns.write_row(i, ni, ordered)
            self._track_affinity(i, ni)
        self.row_gen = np.array([ni.generation for ni in ordered], np.int64)
        self.row_changes.forget()
        self._pod_indexes = OrderedDict()
        self.node_generation += 1
        self._affinity_lists = None
        self._invalidate()

    def refresh(self, changed: Iterable[NodeInfo], node_objects_changed: bool) -> None:
        """Rewrite the rows of NodeInfos that changed since the last refresh."""
        cols = self.columns
        gens = self.row_gen
        rows: list[int] = []
        for ni in changed:
            i = ni.index
            if 0 <= i < len(gens) and self.nodes[i] is ni and gens[i] != ni.generation:
                cols.write_row(i, ni, self.nodes)
                gens[i] = ni.generation
                self._track_affinity(i, ni)
                rows.append(i)
        any_change = bool(rows)
        if rows:
            self.row_changes.record(rows)
        if node_objects_changed:
            self.node_generation += 1
            any_change = True
        if any_change:
            self._invalidate()

    def _invalidate(self) -> None:
        self.generation += 1
        self._used_pvcs = None
