"""What reports learn of each scheduling attempt: the AttemptObserver protocol and NodeScores.

kubesched's own hook (upstream has none: its reports are metrics and events).
A module of its own so that the observers (simulate/attempts.py) read the
protocol without reading the scheduling cycle that calls it (schedule_one.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import numpy as np

from kubesched.framework.types import PodInfo


class NodeScores:
    """How the scored nodes of one cycle ranked: the arrays the cycle produced, as they are.

    `names` is made when first read (`names[pick]` of every node's names): an observer that keeps
    only the top total, as a simulation by default does, costs no copy of them per pod.
    """

    __slots__ = ("_names", "_pick", "per_plugin", "tied", "totals")

    def __init__(
        self,
        names: np.ndarray,
        totals: np.ndarray,
        per_plugin: Mapping[str, np.ndarray],
        tied: np.ndarray,
        pick: np.ndarray | None = None,
    ) -> None:
        self._names = names
        self._pick = pick
        self.totals = totals  # their weighted totals, in the order of `names`
        self.per_plugin = per_plugin  # each Score plugin's weighted scores, in the same order
        self.tied = tied  # positions in `names` of every node sharing the top total

    @property
    def names(self) -> np.ndarray:
        """The scored nodes."""
        if self._pick is not None:
            self._names, self._pick = self._names[self._pick], None
        return self._names

    def __iter__(self) -> Iterator[Any]:
        """(names, totals, per_plugin, tied), as the named tuple it was."""
        return iter((self.names, self.totals, self.per_plugin, self.tied))


class AttemptObserver(Protocol):
    """Told what each scheduling attempt decided, as it decides it.

    The reports of `simulate`, `explain`, `replay` and `capacity` are built from
    these calls (simulate/attempts.py keeps them); the scheduler keeps nothing of
    an attempt once it is over, so a scheduler that runs for months
    (`kubesched run`, `serve`'s built-in one) installs no observer and holds no
    record of pods that are gone. `now` is the scheduler's clock.
    """

    def attempt_started(self, pod: PodInfo, now: float) -> None:
        """A scheduling cycle begins for `pod`."""

    def node_chosen(self, pod: PodInfo, node: str, scores: NodeScores | None, now: float) -> None:
        """The cycle picked `node`; `scores` is None when only one node was feasible (nothing was scored)."""

    def wants_plugin_scores(self, pod: PodInfo) -> bool:
        """Whether node_chosen will read each Score plugin's scores of `pod` (`NodeScores.per_plugin`): when
        not, the cycle may work out the totals alone (empty per_plugin), which is cheaper."""

    def attempt_failed(self, pod: PodInfo, reason: str, message: str, now: float) -> None:
        """The attempt failed (in either cycle): `reason` is the PodScheduled condition's, `message` its text."""
