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
cycle) and dropped when the node list changes. Between syncs, the snapshot's
`RowChanges` tells an index which rows may have changed, so that a sync need
not compare every row's generation.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, TypeVar, cast

import numpy as np

from kubesched.framework.types import NodeInfo, Resource

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


class RowChanges:
    """The rows the snapshot rewrote at each of its last refreshes, numbered by a serial.

    An index that was up to date at serial s can only be stale on rows rewritten since: it checks
    those (usually the one node the last pod went to) instead of comparing every row.
    """

    __slots__ = ("_log", "serial")

    # Refreshes remembered; an index that last synced before them compares every row.
    KEPT = 32

    def __init__(self) -> None:
        self.serial = 0
        self._log: deque[tuple[int, list[int]]] = deque(maxlen=self.KEPT)

    def record(self, rows: list[int]) -> None:
        """A refresh rewrote `rows`."""
        self.serial += 1
        self._log.append((self.serial, rows))

    def forget(self) -> None:
        """Rows changed without a record (a rebuild): every index synced before compares every row."""
        self.serial += 1
        self._log.clear()

    def one_row_since(self, serial: int) -> int:
        """The row, when exactly one refresh came after `serial` and it rewrote that one row (a cycle's usual
        change: the node the last pod went to); else -1."""
        if serial < 0 or serial + 1 != self.serial:
            return -1
        last = self._log[-1] if self._log else None
        if last is None or last[0] != self.serial or len(last[1]) != 1:
            return -1
        return last[1][0]

    def since(self, serial: int) -> list[int] | None:
        """The rows rewritten after `serial` (repeats possible), or None when that is no longer known."""
        if serial == self.serial:
            return []
        log = self._log
        if serial < 0 or not log or serial < log[0][0] - 1:
            return None
        if serial == log[-1][0] - 1:
            return log[-1][1]
        return [i for s, rows in log if s > serial for i in rows]


# Above this many rows to check, one vector comparison of all rows is cheaper than a look at each.
_FEW_ROWS = 64


class _RowIndex:
    """Per-row generations as of an index's last look at each row, and the serial at which it was last up to
    date on every row (-1: never, or unknown)."""

    __slots__ = ("gens", "serial")

    def __init__(self, n: int) -> None:
        self.gens = np.full(n, -1, np.int64)
        self.serial = -1

    def _listed(self, row_gen: np.ndarray, changes: RowChanges | None) -> list[int] | None:
        """The stale rows, in increasing order, found among those the snapshot rewrote since this index was
        up to date; None when those are unknown or too many to look at one by one (compare every row)."""
        if changes is None:
            return None
        i = changes.one_row_since(self.serial)
        if i >= 0:  # the usual cycle: one row rewritten since the last look, judged without building lists
            return [i] if self.gens.item(i) != row_gen.item(i) else []
        rows = changes.since(self.serial)
        if rows is None or len(rows) > _FEW_ROWS:
            return None
        gens = self.gens
        return sorted({i for i in rows if gens[i] != row_gen[i]})

    def _stale(self, row_gen: np.ndarray, changes: RowChanges | None) -> list[int]:
        """The rows whose NodeInfo changed since this index looked at them, in increasing order."""
        rows = self._listed(row_gen, changes)
        if rows is None:
            return (self.gens != row_gen).nonzero()[0].tolist()  # type: ignore[no-any-return]
        return rows

    def _synced(self, row_gen: np.ndarray, stale: list[int] | np.ndarray, changes: RowChanges | None) -> None:
        """The `stale` rows were recomputed: every row is up to date."""
        gens = self.gens
        if len(stale) > _FEW_ROWS:
            gens[stale] = row_gen[stale]
        else:
            for i in stale:
                gens[i] = row_gen[i]
        self.serial = changes.serial if changes is not None else -1

    def _refill(
        self,
        nodes: list[NodeInfo],
        row_gen: np.ndarray,
        changes: RowChanges | None,
        out: Any,
        fn: Callable[[NodeInfo], Any],
    ) -> None:
        """out[i] = fn(node i) for the rows that changed since the last sync (a list or an array alike)."""
        stale = self._stale(row_gen, changes)
        for i in stale:
            out[i] = fn(nodes[i])
        self._synced(row_gen, stale, changes)


class CountIndex(_RowIndex):
    """Per node, `count(node_info)`: how many of its pods satisfy one predicate."""

    __slots__ = ("count", "counts")

    def __init__(self, n: int, count: Callable[[NodeInfo], int]) -> None:
        super().__init__(n)
        self.count = count
        self.counts = np.zeros(n, np.int64)

    def sync(self, nodes: list[NodeInfo], row_gen: np.ndarray, changes: RowChanges | None = None) -> np.ndarray:
        self._refill(nodes, row_gen, changes, self.counts, self.count)
        return self.counts


class KeyIndex(_RowIndex, Generic[K]):
    """Per key that some node's pods carry, an array of how many times each node's pods carry it."""

    __slots__ = ("arrays", "extract", "per_node", "totals")

    def __init__(self, n: int, extract: Callable[[NodeInfo], Iterable[K]]) -> None:
        super().__init__(n)
        self.extract = extract
        self.per_node: list[dict[K, int]] = [{} for _ in range(n)]
        self.arrays: dict[K, np.ndarray] = {}
        self.totals: dict[K, int] = {}

    def sync(
        self, nodes: list[NodeInfo], row_gen: np.ndarray, changes: RowChanges | None = None
    ) -> dict[K, np.ndarray]:
        stale = self._stale(row_gen, changes)
        n = len(self.gens)
        arrays, totals = self.arrays, self.totals
        for i in stale:
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
        self._synced(row_gen, stale, changes)
        return arrays


class SumsIndex(_RowIndex):
    """Per node, summed requests and number of the pods `select(node_info)` picks (as a Resource and a count)."""

    __slots__ = ("cpu", "eph", "mem", "pods", "scalar", "select")

    def __init__(self, n: int, select: Callable[[NodeInfo], tuple[Resource, int]]) -> None:
        super().__init__(n)
        self.select = select
        self.cpu = np.zeros(n, np.int64)
        self.mem = np.zeros(n, np.int64)
        self.eph = np.zeros(n, np.int64)
        self.pods = np.zeros(n, np.int64)
        self.scalar: dict[str, np.ndarray] = {}

    def sync(self, nodes: list[NodeInfo], row_gen: np.ndarray, changes: RowChanges | None = None) -> SumsIndex:
        stale = self._stale(row_gen, changes)
        n = len(self.gens)
        for i in stale:
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
        self._synced(row_gen, stale, changes)
        return self


class RowValues(_RowIndex, Generic[T]):
    """Per node, a value derived from its NodeInfo (e.g. its pods in some order), rebuilt when the row changes."""

    __slots__ = ("derive", "values")

    def __init__(self, n: int, derive: Callable[[NodeInfo], T]) -> None:
        super().__init__(n)
        self.derive = derive
        # Placeholders: every row is stale until the first sync, which derives them all.
        self.values: list[T] = cast("list[T]", [None] * n)

    def sync(self, nodes: list[NodeInfo], row_gen: np.ndarray, changes: RowChanges | None = None) -> list[T]:
        self._refill(nodes, row_gen, changes, self.values, self.derive)
        return self.values


class RowScores(_RowIndex):
    """Per node, an int64 that depends on its row alone (e.g. a score for one pod shape), kept in step.

    `one(node_info)` computes a row; `many(indices)` computes several at once (the same numbers, as
    arrays). Rows are computed when first asked for and recomputed when their NodeInfo changes: a
    handful at a time one by one, more at once with `many`.
    """

    __slots__ = ("many", "nonzero", "one", "values")

    # Up to this many changed rows are recomputed one by one (cheaper than array passes over a few rows).
    ONE_BY_ONE = 16

    def __init__(self, n: int, one: Callable[[NodeInfo], int], many: Callable[[np.ndarray], np.ndarray]) -> None:
        super().__init__(n)
        self.one = one
        self.many = many
        self.values = np.zeros(n, np.int64)
        # How many values are not 0, kept as rows change: "does any node fail?" without a pass over them all.
        self.nonzero = 0

    def _set_many(self, rows: np.ndarray) -> None:
        values = self.values
        new = self.many(rows)
        self.nonzero += int(np.count_nonzero(new)) - int(np.count_nonzero(values[rows]))
        values[rows] = new

    def _refresh_few(self, nodes: list[NodeInfo], row_gen: np.ndarray, changes: RowChanges | None) -> np.ndarray | None:
        """Recompute the stale rows one by one when they are few (usually the node the last pod changed);
        when there are more, recompute nothing and return them."""
        if changes is not None and changes.serial == self.serial:
            return None  # nothing rewritten since the last look
        stale = self._listed(row_gen, changes)
        if stale is None:
            # Rows outside the `idx` of earlier syncs may stay stale for long: compare them all, as an array.
            every: np.ndarray = (self.gens != row_gen).nonzero()[0]
            if len(every) > self.ONE_BY_ONE:
                return every
            stale = every.tolist()
        elif len(stale) > self.ONE_BY_ONE:
            return np.array(stale, np.int64)
        values, one = self.values, self.one
        nonzero = self.nonzero
        for i in stale:
            v = one(nodes[i])
            if v:
                if not values[i]:
                    nonzero += 1
            elif values[i]:
                nonzero -= 1
            values[i] = v
        self.nonzero = nonzero
        self._synced(row_gen, stale, changes)
        return None

    def sync(
        self, nodes: list[NodeInfo], row_gen: np.ndarray, idx: np.ndarray, changes: RowChanges | None = None
    ) -> np.ndarray:
        """The values at `idx` (a new array), every one of them up to date."""
        if self._refresh_few(nodes, row_gen, changes) is not None:
            # Only the rows at idx are brought up to date: the serial stays where it was.
            gens = self.gens
            stale = idx[gens[idx] != row_gen[idx]]
            if len(stale):
                self._set_many(stale)
                gens[stale] = row_gen[stale]
        at: np.ndarray = self.values[idx]
        return at

    def sync_all(self, nodes: list[NodeInfo], row_gen: np.ndarray, changes: RowChanges | None = None) -> np.ndarray:
        """Every node's value, up to date: the index's own array (read it, do not keep or write it)."""
        stale = self._refresh_few(nodes, row_gen, changes)
        if stale is not None:
            self._set_many(stale)
            self._synced(row_gen, stale, changes)
        return self.values
