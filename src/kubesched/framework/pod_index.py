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

Both are built on first use (one pass over all pods, as upstream pays every
cycle) and dropped when the node list changes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable

import numpy as np

from kubesched.framework.types import NodeInfo


class CountIndex:
    __slots__ = ("count", "counts", "gens")

    def __init__(self, n: int, count: Callable[[NodeInfo], int]) -> None:
        self.count = count
        self.counts = np.zeros(n, np.int64)
        self.gens = np.full(n, -1, np.int64)

    def sync(self, nodes: list[NodeInfo], row_gen: np.ndarray) -> np.ndarray:
        stale = np.flatnonzero(self.gens != row_gen)
        if len(stale):
            counts, count = self.counts, self.count
            for i in stale.tolist():
                counts[i] = count(nodes[i])
            self.gens[stale] = row_gen[stale]
        return self.counts


class KeyIndex:
    __slots__ = ("arrays", "extract", "gens", "per_node", "totals")

    def __init__(self, n: int, extract: Callable[[NodeInfo], Iterable[Hashable]]) -> None:
        self.extract = extract
        self.gens = np.full(n, -1, np.int64)
        self.per_node: list[dict[Hashable, int]] = [{} for _ in range(n)]
        self.arrays: dict[Hashable, np.ndarray] = {}
        self.totals: dict[Hashable, int] = {}

    def sync(self, nodes: list[NodeInfo], row_gen: np.ndarray) -> dict[Hashable, np.ndarray]:
        stale = np.flatnonzero(self.gens != row_gen)
        if not len(stale):
            return self.arrays
        n = len(self.gens)
        arrays, totals = self.arrays, self.totals
        for i in stale.tolist():
            new: dict[Hashable, int] = {}
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
