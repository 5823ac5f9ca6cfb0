"""Per-node pod counts kept in step with the snapshot, row by row.

InterPodAffinity and PodTopologySpread ask, every cycle, how many pods of each
node match some selector (the incoming pod's terms or spread constraints), and
which existing pods carry terms that match the incoming pod. Upstream walks
every pod of the cluster for that. Here each question has an index on the
snapshot: an array over nodes, recomputed only for the rows whose NodeInfo
changed since the index last looked (usually the one node the last pod went to).

- `CountIndex`: per node, the number of pods satisfying one predicate
  (e.g. "in namespace ns and matching selector s").
- `KeyIndex`: per node, how many times each key occurs among its pods
  (e.g. the distinct required anti-affinity terms of existing pods), with one
  array per key; keys that no pod carries any more are dropped.
- `SumsIndex`: per node, the summed requests of some of its pods (e.g. those
  below a priority, which preemption would evict).
- `RowValues`: per node, any value derived from its NodeInfo.

All are built on first use (one pass over all pods, as upstream pays every
cycle) and dropped when the node list changes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar, cast

import numpy as np

from kubesched.framework.types import NodeInfo, Resource

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


class CountIndex:
    """Per node, `count(node_info)`: how many of its pods satisfy one predicate."""

    __slots__ = ("count", "counts", "gens")

    def __init__(self, n: int, count: Callable[[NodeInfo], int]) -> None:
        self.count = count
        self.counts = np.zeros(n, np.int64)
        self.gens = np.full(n, -1, np.int64)

    def sync(self, nodes: list[NodeInfo], row_gen: np.ndarray) -> np.ndarray:
        stale = (self.gens != row_gen).nonzero()[0]
        if len(stale):
            counts, count = self.counts, self.count
            for i in stale.tolist():
                counts[i] = count(nodes[i])
            self.gens[stale] = row_gen[stale]
        return self.counts


class KeyIndex(Generic[K]):
    """Per key that some node's pods carry, an array of how many times each node's pods carry it."""

    __slots__ = ("arrays", "extract", "gens", "per_node", "totals")

    def __init__(self, n: int, extract: Callable[[NodeInfo], Iterable[K]]) -> None:
        self.extract = extract
        self.gens = np.full(n, -1, np.int64)
        self.per_node: list[dict[K, int]] = [{} for _ in range(n)]
        self.arrays: dict[K, np.ndarray] = {}
        self.totals: dict[K, int] = {}

    def sync(self, nodes: list[NodeInfo], row_gen: np.ndarray) -> dict[K, np.ndarray]:
        stale = (self.gens != row_gen).nonzero()[0]
        if not len(stale):
            return self.arrays
        n = len(self.gens)
        arrays, totals = self.arrays, self.totals
        for i in stale.tolist():
            new: dict[K, int] = {}
            for key in self.extract(nodes[i]):
                new[key] = new.get(key, 0) + 1
            old = self.per_node[i]
            if old == new:
                continue
            for key, c in old.items():
                arrays[key][i] -= c
                left = totals[key] - c
                if left:
                    totals[key] = left
                else:
                    del totals[key], arrays[key]
            for key, c in new.items():
                arr = arrays.get(key)
                if arr is None:
                    arr = arrays[key] = np.zeros(n, np.int64)
                    totals[key] = 0
                arr[i] += c
                totals[key] += c
            self.per_node[i] = new
        self.gens[stale] = row_gen[stale]
        return arrays


class SumsIndex:
    """Per node, summed requests and number of the pods `select(node_info)` picks (as a Resource and a count)."""

    __slots__ = ("cpu", "eph", "gens", "mem", "pods", "scalar", "select")

    def __init__(self, n: int, select: Callable[[NodeInfo], tuple[Resource, int]]) -> None:
        self.select = select
        self.gens = np.full(n, -1, np.int64)
        self.cpu = np.zeros(n, np.int64)
        self.mem = np.zeros(n, np.int64)
        self.eph = np.zeros(n, np.int64)
        self.pods = np.zeros(n, np.int64)
        self.scalar: dict[str, np.ndarray] = {}

    def sync(self, nodes: list[NodeInfo], row_gen: np.ndarray) -> SumsIndex:
        stale = (self.gens != row_gen).nonzero()[0]
        if len(stale):
            n = len(self.gens)
            for i in stale.tolist():
                r, count = self.select(nodes[i])
                self.cpu[i] = r.milli_cpu
                self.mem[i] = r.memory
                self.eph[i] = r.ephemeral_storage
                self.pods[i] = count
                for column in self.scalar.values():
                    column[i] = 0
                for name, v in r.scalar.items():
                    arr = self.scalar.get(name)
                    if arr is None:
                        arr = self.scalar[name] = np.zeros(n, np.int64)
                    arr[i] = v
            self.gens[stale] = row_gen[stale]
        return self


class RowValues(Generic[T]):
    """Per node, a value derived from its NodeInfo (e.g. its pods in some order), rebuilt when the row changes."""

    __slots__ = ("derive", "gens", "values")

    def __init__(self, n: int, derive: Callable[[NodeInfo], T]) -> None:
        self.derive = derive
        self.gens = np.full(n, -1, np.int64)
        # Placeholders: every row is stale until the first sync, which derives them all.
        self.values: list[T] = cast("list[T]", [None] * n)

    def sync(self, nodes: list[NodeInfo], row_gen: np.ndarray) -> list[T]:
        stale = (self.gens != row_gen).nonzero()[0]
        if len(stale):
            values, derive = self.values, self.derive
            for i in stale.tolist():
                values[i] = derive(nodes[i])
            self.gens[stale] = row_gen[stale]
        return self.values


class RowScores:
    """Per node, an int64 that depends on its row alone (e.g. a score for one pod shape), kept in step.

    `one(node_info)` computes a row; `many(indices)` computes several at once (the same numbers, as
    arrays). Rows are computed when first asked for and recomputed when their NodeInfo changes: a
    handful at a time one by one, more at once with `many`.
    """

    __slots__ = ("gens", "many", "one", "values")

    # Up to this many changed rows are recomputed one by one (cheaper than array passes over a few rows).
    ONE_BY_ONE = 16

    def __init__(self, n: int, one: Callable[[NodeInfo], int], many: Callable[[np.ndarray], np.ndarray]) -> None:
        self.one = one
        self.many = many
        self.gens = np.full(n, -1, np.int64)
        self.values = np.zeros(n, np.int64)

    def _refresh_few(self, nodes: list[NodeInfo], row_gen: np.ndarray) -> np.ndarray | None:
        """Recompute the stale rows one by one when they are few (usually the node the last pod changed);
        when there are more, recompute nothing and return them."""
        gens = self.gens
        stale: np.ndarray = (gens != row_gen).nonzero()[0]
        if len(stale) > self.ONE_BY_ONE:
            return stale
        values, one = self.values, self.one
        for i in stale.tolist():
            values[i] = one(nodes[i])
            gens[i] = row_gen[i]
        return None

    def sync(self, nodes: list[NodeInfo], row_gen: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """The values at `idx` (a new array), every one of them up to date."""
        if self._refresh_few(nodes, row_gen) is not None:
            gens = self.gens
            stale = idx[gens[idx] != row_gen[idx]]
            if len(stale):
                self.values[stale] = self.many(stale)
                gens[stale] = row_gen[stale]
        at: np.ndarray = self.values[idx]
        return at

    def sync_all(self, nodes: list[NodeInfo], row_gen: np.ndarray) -> np.ndarray:
        """Every node's value, up to date: the index's own array (read it, do not keep or write it)."""
        stale = self._refresh_few(nodes, row_gen)
        if stale is not None:
            self.values[stale] = self.many(stale)
            self.gens[stale] = row_gen[stale]
        return self.values
