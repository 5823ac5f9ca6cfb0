"""The set of plugins a PreFilter or PreScore pass skipped, as one shared frozenset per combination.

Every cycle hands the skipped set to the next pass (CycleState.skip_filter_plugins /
skip_score_plugins), which looks up the plugins it runs by it. Built anew per pod, the set
costs a frozenset, its hash and an element-wise comparison at each lookup; pods alike skip
alike, so the pass collects a bit per skipping plugin and takes the one frozenset of that
combination instead (hashed once, compared by identity).
"""

from __future__ import annotations

from collections.abc import Sequence

# Combinations kept: far more than the few a profile's pods make; a bound all the same.
_KEPT = 4096


class SkipSets:
    """frozensets of the names of `plugins` by bit mask (bit k: the k-th plugin skipped)."""

    __slots__ = ("_names", "_sets")

    def __init__(self, names: Sequence[str]) -> None:
        self._names = tuple(names)
        self._sets: dict[int, frozenset[str]] = {0: frozenset()}

    def of(self, mask: int) -> frozenset[str]:
        """The names of the plugins whose bits are set in `mask`: the same object for the same mask."""
        got = self._sets.get(mask)
        if got is None:
            if len(self._sets) >= _KEPT:
                self._sets = {0: self._sets[0]}
            got = self._sets[mask] = frozenset(n for k, n in enumerate(self._names) if mask >> k & 1)
        return got
