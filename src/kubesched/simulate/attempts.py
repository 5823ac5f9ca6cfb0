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

import numpy as np

from kubesched.framework.types import PodInfo
from kubesched.scheduler import NodeScores


class Attempt:
    """What the scheduler saw on one attempt of one pod (for reports and `explain`).

    Scores are kept as the arrays the cycle produced; the per-node dictionaries
    are only built when someone asks for them.
    """

    __slots__ = ("_names", "_per_plugin", "_tied", "_totals", "message", "node", "pod", "reason", "time")

    def __init__(self, pod: str, time: float) -> None:
        self.pod = pod
        self.time = time
        self.node = ""
        self.message = ""
        self.reason = ""
        self._names: np.ndarray | None = None
        self._totals: np.ndarray | None = None
        self._per_plugin: dict[str, np.ndarray] = {}
        self._tied: np.ndarray | None = None

    def record_scores(self, scores: NodeScores) -> None:
        self._names, self._totals, self._per_plugin, self._tied = scores

    def clear_scores(self) -> None:
        self._names, self._totals, self._per_plugin, self._tied = None, None, {}, None

    @property
    def tied(self) -> list[str]:
        """Every node sharing the top score, when two or more did."""
        if self._names is None or self._tied is None or len(self._tied) < 2:
            return []
        return [str(self._names[int(i)]) for i in self._tied]

    @property
    def scores(self) -> dict[str, int]:
        if self._names is None or self._totals is None:
            return {}
        return {str(n): int(t) for n, t in zip(self._names, self._totals, strict=True)}

    @property
    def plugin_scores(self) -> dict[str, dict[str, int]]:
        if self._names is None:
            return {}
        names = [str(n) for n in self._names]
        return {pl: {n: int(v) for n, v in zip(names, arr, strict=True)} for pl, arr in self._per_plugin.items()}


class AttemptRecorder:
    """The recording AttemptObserver: the latest Attempt of every pod, by pod key.

    `keep_scores=False` keeps the decisions without the per-node scores (replay,
    `simulate --no-scores`: one array per Score plugin per pod adds up).
    """

    def __init__(self, keep_scores: bool = True) -> None:
        self.keep_scores = keep_scores
        self.attempts: dict[str, Attempt] = {}

    def _current(self, pod: PodInfo, now: float) -> Attempt:
        a = self.attempts.get(pod.key)
        if a is None:
            a = self.attempts[pod.key] = Attempt(pod.key, now)
        return a

    def attempt_started(self, pod: PodInfo, now: float) -> None:
        self.attempts[pod.key] = Attempt(pod.key, now)

    def node_chosen(self, pod: PodInfo, node: str, scores: NodeScores | None, now: float) -> None:
        a = self._current(pod, now)
        a.node = node
        if scores is not None and self.keep_scores:
            a.record_scores(scores)

    def attempt_failed(self, pod: PodInfo, reason: str, message: str, now: float) -> None:
        # A failure after a node was chosen (Reserve, Permit, binding) undoes the choice.
        a = self._current(pod, now)
        a.node = ""
        a.clear_scores()
        a.message = message
        a.reason = reason
