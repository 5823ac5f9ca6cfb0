"""The attempt records that reports read: an AttemptObserver that keeps each pod's last attempt.

`simulate`, `explain`, `replay` and `capacity` install an AttemptRecorder on
their Scheduler (Simulation does); it keeps, per pod key, what the pod's latest
attempt decided: the node or the failure's reason and message, and (with
`keep_scores`) the per-node scores. That is one record per pod for the whole
run, plus one array per Score plugin per pod with scores kept: right for a
report about a finite scenario, wrong for a scheduler that runs for months,
which is why the Scheduler keeps none of it itself (scheduler.AttemptObserver).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from collections.abc import Set as AbstractSet

import numpy as np

from kubesched.framework.types import PodInfo
from kubesched.scheduler import NodeScores


class Attempt:
    """What the scheduler saw on one attempt of one pod (for reports and `explain`).

    Scores are kept as the arrays the cycle produced; the per-node dictionaries
    are only built when someone asks for them.
    """

    __slots__ = (
        "_names",
        "_per_plugin",
        "_spool",
        "_spooled",
        "_tied",
        "_totals",
        "message",
        "node",
        "number",
        "pod",
        "reason",
        "score",
        "time",
    )

    def __init__(self, pod: str, time: float, number: int = 1) -> None:
        self.pod = pod
        self.time = time
        # Which attempt of the pod this is (1: its first).
        self.number = number
        self.node = ""
        # The chosen node's total score (None: the only feasible node, not scored).
        self.score: int | None = None
        self.message = ""
        self.reason = ""
        self._names: np.ndarray | None = None
        self._totals: np.ndarray | None = None
        self._per_plugin: Mapping[str, np.ndarray] = {}
        self._tied: np.ndarray | None = None
        self._spool: ScoreSpool | None = None
        self._spooled: tuple[int, int] | None = None

    def record_scores(self, scores: NodeScores) -> None:
        self._names, self._totals, self._per_plugin, self._tied = (
            scores.names,
            scores.totals,
            scores.per_plugin,
            scores.tied,
        )

    def spool_scores(self, scores: NodeScores, spool: ScoreSpool) -> None:
        """Keep the totals and the tie on disk (`scores`, `tied`), not the arrays (no per-plugin scores)."""
        self._spool = spool
        self._spooled = spool.put(scores)

    def clear_scores(self) -> None:
        self._names, self._totals, self._per_plugin, self._tied = None, None, {}, None
        self._spool = self._spooled = None
        self.score = None

    @property
    def tied(self) -> list[str]:
        """Every node sharing the top score, when two or more did."""
        if self._spool is not None and self._spooled is not None:
            return self._spool.get(self._spooled)[1]
        if self._names is None or self._tied is None or len(self._tied) < 2:
            return []
        return [str(self._names[int(i)]) for i in self._tied]

    @property
    def scores(self) -> dict[str, int]:
        if self._spool is not None and self._spooled is not None:
            return self._spool.get(self._spooled)[0]
        if self._names is None or self._totals is None:
            return {}
        return {str(n): int(t) for n, t in zip(self._names, self._totals, strict=True)}

    def scores_and_tie(self) -> tuple[dict[str, int], list[str]]:
        """`scores` and `tied` together: a spooled attempt's are one read of the spool, not two."""
        if self._spool is not None and self._spooled is not None:
            return self._spool.get(self._spooled)
        return self.scores, self.tied

    @property
    def plugin_scores(self) -> dict[str, dict[str, int]]:
        if self._names is None:
            return {}
        names = [str(n) for n in self._names]
        return {pl: {n: int(v) for n, v in zip(names, arr, strict=True)} for pl, arr in self._per_plugin.items()}


class ScoreSpool:
    """Per-node totals parked in a temporary file until a report prints them.

    `simulate -o json` prints every scored pod's totals; held as arrays until the
    end they grow with pods × nodes (gigabytes at 5,000 nodes), on disk they
    cost the process nothing, and the writer reads them back one pod at a time.
    Each entry is the JSON text of (totals by node, tied nodes).
    """

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the simulation
        self._end = 0

    def put(self, scores: NodeScores) -> tuple[int, int]:
        names = scores.names.tolist()
        tied = [names[i] for i in scores.tied.tolist()] if len(scores.tied) > 1 else []
        data = json.dumps([dict(zip(names, scores.totals.tolist(), strict=True)), tied]).encode()
        self._file.seek(self._end)
        self._file.write(data)
        at = self._end
        self._end += len(data)
        return at, len(data)

    def get(self, where: tuple[int, int]) -> tuple[dict[str, int], list[str]]:
        self._file.seek(where[0])
        totals, tied = json.loads(self._file.read(where[1]))
        return totals, tied


class AttemptRecorder:
    """The recording AttemptObserver: the latest Attempt of every pod, by pod key.

    Per-node scores are kept only for the pods a report prints them for:
    `keep_scores` is True (every pod: `simulate -o json`), False (none: the
    table, replay), or a set of pod keys (`explain` keeps its one pod's). One
    array per Score plugin per pod adds up to gigabytes on a large cluster.
    The decision, the chosen node's total and the attempt count are always kept.
    """

    def __init__(self, keep_scores: bool | AbstractSet[str] = True, spool: ScoreSpool | None = None) -> None:
        """`spool`: where kept scores go (their totals and tie only), instead of memory."""
        self.keep_scores = keep_scores
        self.spool = spool
        self.attempts: dict[str, Attempt] = {}

    def _current(self, pod: PodInfo, now: float) -> Attempt:
        a = self.attempts.get(pod.key)
        if a is None:
            a = self.attempts[pod.key] = Attempt(pod.key, now)
        return a

    def attempt_started(self, pod: PodInfo, now: float) -> None:
        before = self.attempts.get(pod.key)
        self.attempts[pod.key] = Attempt(pod.key, now, 1 if before is None else before.number + 1)

    def wants_plugin_scores(self, pod: PodInfo) -> bool:
        keep = self.keep_scores
        return keep is True or (keep is not False and pod.key in keep)

    def node_chosen(self, pod: PodInfo, node: str, scores: NodeScores | None, now: float) -> None:
        a = self._current(pod, now)
        a.node = node
        if scores is None:
            return
        # The chosen node has the top total, as every node in `tied` does.
        a.score = int(scores.totals[int(scores.tied[0])])
        if self.wants_plugin_scores(pod):
            if self.spool is not None:
                a.spool_scores(scores, self.spool)
            else:
                a.record_scores(scores)

    def attempt_failed(self, pod: PodInfo, reason: str, message: str, now: float) -> None:
        # A failure after a node was chosen (Reserve, Permit, binding) undoes the choice.
        a = self._current(pod, now)
        a.node = ""
        a.clear_scores()
        a.message = message
        a.reason = reason
