"""What filtering found: the feasible nodes, and why the others failed (worded only when asked).

The vector pass records, per node, the position of its first failing vector plugin; the
statuses are built from the plugins' verdicts only when a message or preemption needs
them, and then grouped by verdict rather than node by node.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kubesched.framework.interface import FilterPlugin, FilterVerdicts
from kubesched.framework.status import Status

# first_fail's value for a node no vector plugin failed.
NO_FAILURE = np.int32(1 << 30)


class FilterOutcome:
    """The result of filtering: feasible node indices (in scheduling order) and, lazily, why others failed."""

    __slots__ = ("_failed", "_grouper", "_status_of", "_statuses", "error", "feasible", "processed")

    def __init__(
        self,
        feasible: np.ndarray,
        processed: int,
        failed: np.ndarray,
        status_of: Callable[[int], Status],
        error: Status | None = None,
        grouper: Callable[[np.ndarray], list[tuple[np.ndarray, Status]]] | None = None,
    ) -> None:
        self.feasible = feasible
        self.processed = processed
        self._failed = failed
        self._status_of = status_of
        self.error = error
        self._statuses: dict[int, Status] | None = None
        self._grouper = grouper

    def groups(self) -> list[tuple[np.ndarray, Status]]:
        """The failed nodes as (snapshot indices, status) per distinct status."""
        if self._grouper is not None:
            return self._grouper(self._failed)
        by_status: dict[int, tuple[list[int], Status]] = {}
        for i, st in self.statuses().items():
            by_status.setdefault(id(st), ([], st))[0].append(i)
        return [(np.array(ix, np.int64), st) for ix, st in by_status.values()]

    def statuses(self) -> dict[int, Status]:
        """Snapshot index -> the status of its first failing plugin, for every processed failing node."""
        if self._statuses is None:
            self._statuses = {int(i): self._status_of(int(i)) for i in self._failed}
        return self._statuses

    @property
    def num_failed(self) -> int:
        return len(self._failed)


class VectorPass:
    """What the vector pass of find_feasible found, and how to word it.

    `first_fail[i]` is the position (in `plugins`) of node i's first failing vector plugin
    (NO_FAILURE: none; the array is None when no vector plugin failed anywhere), `verdicts`
    those plugins' verdicts by position, `per_node` the positions left for the per-node pass,
    `nominated` the verdicts re-judged with nominated pods counted, `error` a plugin's failure.
    """

    __slots__ = ("error", "first_fail", "nominated", "per_node", "plugins", "verdicts")

    def __init__(self, plugins: list[FilterPlugin]) -> None:
        self.plugins = plugins
        self.first_fail: np.ndarray | None = None
        self.verdicts: dict[int, FilterVerdicts] = {}
        self.per_node: list[int] = []
        self.nominated: NominatedVerdicts | None = None
        self.error: Status | None = None

    def status(self, i: int) -> Status:
        """Node i's status: its first failing vector plugin's verdict."""
        first_fail = self.first_fail
        assert first_fail is not None
        pos = int(first_fail[i])
        nominated = self.nominated
        if nominated is not None and nominated.rows[i] >= 0:
            s = nominated.verdicts[pos].status(int(nominated.rows[i]))
        else:
            s = self.verdicts[pos].status(i)
        s.plugin = self.plugins[pos].name
        return s

    def groups(self, failed: np.ndarray) -> list[tuple[np.ndarray, Status]]:
        assert self.first_fail is not None
        return group_failures(failed, self.first_fail, self.verdicts, self.plugins, self.nominated)

    def outcome(self, order: np.ndarray, num_to_find: int) -> FilterOutcome:
        """The outcome when the vector verdicts decide every node (no per-node plugin, no nominated pod to add)."""
        first_fail = self.first_fail
        if first_fail is None:
            feasible = order[:num_to_find]
            return FilterOutcome(feasible, len(feasible), order[:0], self.status)
        ok = first_fail[order] == NO_FAILURE
        total_ok = int(np.count_nonzero(ok))
        if total_ok <= num_to_find:
            processed = len(order)
        else:
            # Upstream stops when it meets one feasible node more than it needs (not counted);
            # the failures met before that one are counted as processed.
            processed = int(np.searchsorted(np.cumsum(ok), num_to_find + 1))
        head = order[:processed]
        ok_head = ok[:processed]
        return FilterOutcome(head[ok_head], processed, head[~ok_head], self.status, grouper=self.groups)


class NominatedVerdicts:
    """Nodes whose first failure comes from re-judging them with their nominated pods counted.

    `rows[i]` is node i's row in the re-judged verdicts (-1: not re-judged), and
    `verdicts[pos]` those of the plugin at position pos.
    """

    __slots__ = ("rows", "verdicts")

    def __init__(self, n: int) -> None:
        self.rows = np.full(n, -1, np.int64)
        self.verdicts: dict[int, FilterVerdicts] = {}


def group_failures(
    failed: np.ndarray,
    first_fail: np.ndarray,
    verdicts: dict[int, FilterVerdicts],
    plugins: list[FilterPlugin],
    nominated: NominatedVerdicts | None,
) -> list[tuple[np.ndarray, Status]]:
    """The statuses of the failed nodes (snapshot indices), grouped by their first failing plugin's verdict."""
    out: list[tuple[np.ndarray, Status]] = []
    ff = first_fail[failed]
    rows = nominated.rows[failed] if nominated is not None else None
    # Plugin positions: small and non-negative, counted rather than sorted (np.unique).
    positions = np.bincount(ff).nonzero()[0] if len(ff) and ff[ff.argmax()] < len(plugins) else np.unique(ff)
    for pos in positions.tolist():
        sel = ff == pos
        parts: list[tuple[np.ndarray, FilterVerdicts, np.ndarray]] = []
        if rows is None:
            parts.append((failed[sel], verdicts[pos], failed[sel]))
        else:
            base = sel & (rows < 0)
            over = sel & (rows >= 0)
            if base.any():
                parts.append((failed[base], verdicts[pos], failed[base]))
            if over.any():
                parts.append((failed[over], nominated.verdicts[pos], rows[over]))  # type: ignore[union-attr]
        for nodes, v, at in parts:
            for js, st in v.grouped(at):
                st.plugin = plugins[pos].name
                out.append((nodes[js], st))
    return out


def error_outcome(status: Status) -> FilterOutcome:
    """The outcome of a filter pass that stopped on a plugin's error: no node, the error."""
    empty = np.zeros(0, np.int64)
    return FilterOutcome(empty, 0, empty, lambda _i: status, error=status)
