"""PreScore, Score and NormalizeScore (framework.go: RunPreScorePlugins, RunScorePlugins).

Every plugin scores every feasible node (a vector path scores them all at once), then
every plugin normalizes, then the scores are range-checked and weighted, as upstream.

A mixin of the Framework (framework.py), which sets the attributes it reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    NodeScoreList,
    PreScorePlugin,
    RowScore,
    ScorePlugin,
    SummableScorePlugin,
    VectorScorePlugin,
)
from kubesched.framework.runtime.plugin_failures import plugin_raised, score_failed
from kubesched.framework.runtime.skip_sets import SkipSets
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.gocompat.strconv import go_quote

if TYPE_CHECKING:
    from kubesched.framework.snapshot import Snapshot


_SUCCESS, _SKIP = Code.SUCCESS, Code.SKIP


class ScoreRun:
    """The Score plugins a cycle runs once PreScore skipped some, with what the passes read of them.

    Kept per skipped set: pods alike skip alike, and these do not change once the profile is built.
    """

    __slots__ = ("_last_totals", "names", "normalizing", "plugins", "summable", "vector", "weights")

    def __init__(self, plugins: list[ScorePlugin], score_weights: Mapping[str, int]) -> None:
        self.plugins = plugins
        self.names = tuple(pl.name for pl in plugins)
        # The weights as a column per plugin, for one product with the score matrix.
        self.weights = np.array([score_weights.get(n, 1) for n in self.names], np.int64)
        # Each plugin again where it has a vector path (all nodes at once), else None.
        self.vector = [pl if isinstance(pl, VectorScorePlugin) else None for pl in plugins]
        # The positions of the plugins with a NormalizeScore (ScoreExtensions() != nil upstream).
        self.normalizing = [k for k, pl in enumerate(plugins) if pl.has_normalize()]
        # (plugin, weight, has NormalizeScore) of each plugin when all of them can sum their scores without
        # arrays (SummableScorePlugin); else None.
        weights = self.weights.tolist()
        summable = [(pl, weights[k], k in self.normalizing) for k, pl in enumerate(plugins)]
        self.summable = summable if all(isinstance(pl, SummableScorePlugin) for pl in plugins) else None
        # The last totals key with the constant and RowScores it was made of (see totals_key).
        self._last_totals: tuple[int, list[RowScore], tuple[Any, ...]] | None = None

    def totals_key(self, constant: int, rows: list[tuple[int, RowScore]]) -> tuple[Any, ...]:
        """The row-score key of these weighted terms' sum plus `constant`. The plugins hand pods alike the same
        RowScore objects: then the last key is the answer (no nested tuple built and hashed per pod)."""
        last = self._last_totals
        if last is not None and last[0] == constant and len(last[1]) == len(rows):
            for (_, term), seen in zip(rows, last[1], strict=True):
                if term is not seen:
                    break
            else:
                return last[2]
        key = ("score totals", constant, *[(w, t.key) for w, t in rows])
        self._last_totals = (constant, [t for _, t in rows], key)
        return key


class ScorePasses:
    """The PreScore and Score extension points; the Framework sets the attributes below."""

    pre_score_plugins: list[PreScorePlugin]
    score_plugins: list[ScorePlugin]
    score_weights: dict[str, int]
    use_vector_paths: bool
    # The Score plugins run, by the set of those PreScore skipped.
    _score_runs: dict[frozenset[str], ScoreRun]
    _pre_score_bits: list[tuple[PreScorePlugin, int]]
    _pre_score_skips: SkipSets
    _totals_out_of_range: list[bool]

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def run_pre_score_plugins(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        skip = 0
        try:
            for pl, bit in self._pre_score_bits:
                try:
                    s = pl.pre_score(state, pod, nodes)
                except Exception as err:  # noqa: BLE001
                    return plugin_raised("PreScore", pl, err)
                if s is None:
                    continue
                code = s.code
                if code == _SKIP:
                    skip |= bit
                elif code != _SUCCESS:
                    return Status.as_error(f"running PreScore plugin {go_quote(pl.name)}: {s.message()}")
            return None
        finally:
            state.skip_score_plugins = self._pre_score_skips.of(skip)

    def _score_run(self, skip: frozenset[str]) -> ScoreRun:
        run = self._score_runs.get(skip)
        if run is None:
            plugins = [pl for pl in self.score_plugins if pl.name not in skip]
            run = self._score_runs[skip] = ScoreRun(plugins, self.score_weights)
        return run

    def run_score_plugins(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> tuple[np.ndarray | None, Mapping[str, np.ndarray], Status | None]:
        """Totals over `idx` and each plugin's weighted scores; or an Error status.

        As RunScorePlugins: every plugin scores every node, then every plugin
        normalizes, then the scores are range-checked and weighted; each phase
        reports its own error. The scores are one matrix (a row per plugin): the
        range check is one pass over it, the totals one product with the weights.
        """
        run = self._score_run(state.skip_score_plugins)
        raw, s = self._score(run, state, pod, snapshot, idx)
        if s is None:
            s = _normalize(run, raw, state, pod, snapshot, idx)
        if s is not None:
            return None, {}, s
        if not raw:
            return np.zeros(len(idx), np.int64), {}, None
        stacked = np.array(raw).astype(np.int64, copy=False)
        s = _out_of_range(run.plugins, stacked)
        if s is not None:
            return None, {}, s
        total: np.ndarray = run.weights @ stacked
        return total, WeightedScores(run.names, stacked, run.weights), None

    def run_score_totals(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> np.ndarray | None:
        """The totals run_score_plugins would give over `idx`, when every plugin can say what it adds without
        an array per pod (SummableScorePlugin.score_terms): a weighted sum per node, kept row by row on the
        snapshot for pods alike, plus what the plugins that score every node alike add. None when some plugin
        cannot (or fails, or a score is out of range: run_score_plugins then reports it as upstream does)."""
        run = self._score_run(state.skip_score_plugins)
        if run.summable is None or not self.use_vector_paths:
            return None
        constant = 0
        rows: list[tuple[int, RowScore]] = []
        try:
            for pl, weight, normalizes in run.summable:
                term = pl.score_terms(state, pod, snapshot)  # type: ignore[attr-defined]
                if term is None:
                    return None
                if term.__class__ is RowScore:
                    if normalizes:
                        return None
                    rows.append((weight, term))
                elif MIN_NODE_SCORE <= term <= MAX_NODE_SCORE:
                    constant += weight * term
                else:
                    return None
            if not rows:
                return np.full(len(idx), constant, np.int64)
            # The constant is part of what is kept: pods alike add it once, not once per pod.
            key = run.totals_key(constant, rows)
            flag = self._totals_out_of_range
            totals = snapshot.row_scores(key, lambda: _weighted_sum(rows, constant, flag), idx)
        except Exception:  # noqa: BLE001 - run_score_plugins reports it, in upstream's words
            return None
        if flag[0] and len(totals) and totals[totals.argmin()] < 0:
            return None
        return totals

    def _score(
        self, run: ScoreRun, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> tuple[list[np.ndarray], Status | None]:
        """Every plugin's raw scores over `idx`: all at once where it has a vector path, else node by node."""
        nodes = snapshot.nodes
        raw: list[np.ndarray] = []
        use_vector = self.use_vector_paths
        for pl, vector in zip(run.plugins, run.vector, strict=True):
            try:
                if use_vector and vector is not None:
                    scores = np.asarray(vector.score_all(state, pod, snapshot, idx), np.int64)
                else:
                    scores = np.empty(len(idx), np.int64)
                    for k, i in enumerate(idx):
                        v, s = pl.score(state, pod, nodes[int(i)])
                        if s is not None and s.code != Code.SUCCESS:
                            return raw, score_failed("running Score plugins", pl, s)
                        scores[k] = v
            except Exception as err:  # noqa: BLE001
                return raw, plugin_raised("Score", pl, err)
            raw.append(scores)
        return raw, None


def _weighted_sum(
    rows: list[tuple[int, RowScore]], constant: int, out_of_range: list[bool]
) -> tuple[Callable[[NodeInfo], int], Callable[[np.ndarray], np.ndarray]]:
    """one(node) and many(indices) of a weighted sum of row scores plus `constant`; -1 where some score is out
    of range, which also sets out_of_range[0]."""
    parts = [(w, *t.build()) for w, t in rows]

    def one(ni: NodeInfo) -> int:
        total = constant
        for w, one_score, _ in parts:
            v = one_score(ni)
            if not MIN_NODE_SCORE <= v <= MAX_NODE_SCORE:
                out_of_range[0] = True
                return -1
            total += w * v
        return total

    def many(indices: np.ndarray) -> np.ndarray:
        total = np.full(len(indices), constant, np.int64)
        bad = np.zeros(len(indices), bool)
        for w, _, many_scores in parts:
            v = np.asarray(many_scores(indices), np.int64)
            bad |= (v < MIN_NODE_SCORE) | (v > MAX_NODE_SCORE)
            total += w * v
        if np.count_nonzero(bad):
            out_of_range[0] = True
            total[bad] = -1
        return total

    return one, many


def _normalize(
    run: ScoreRun,
    raw: list[np.ndarray],
    state: CycleState,
    pod: PodInfo,
    snapshot: Snapshot,
    idx: np.ndarray,
) -> Status | None:
    """NormalizeScore, in place in `raw`; the node names are looked up only if a plugin reads them."""
    names: list[Any] = []

    def node_names() -> Any:
        if not names:
            names.append(snapshot.node_names()[idx])
        return names[0]

    for k in run.normalizing:
        pl = run.plugins[k]
        lst = NodeScoreList(node_names, raw[k])
        try:
            s = pl.normalize_score(state, pod, lst)
        except Exception as err:  # noqa: BLE001
            return plugin_raised("NormalizeScore", pl, err)
        if s is not None and s.code != Code.SUCCESS:
            return score_failed("running Normalize on Score plugins", pl, s)
        raw[k] = lst.scores
    return None


def _out_of_range(plugins: list[ScorePlugin], stacked: np.ndarray) -> Status | None:
    """The error for a score outside [MIN_NODE_SCORE, MAX_NODE_SCORE] after normalizing; None when all are in."""
    # One pass for the common case, all in range: MIN_NODE_SCORE is 0, so a negative score is a huge uint64.
    # (argmax, not max: ndarray.max goes through a Python wrapper, several times argmax's cost on small arrays.)
    flat = stacked.view(np.uint64).reshape(-1)
    if not flat.size or flat[flat.argmax()] <= MAX_NODE_SCORE:
        return None
    # Upstream checks node by node (in parallel, the first node usually first), each node's
    # plugins in order: the error names the first node's first out-of-range plugin.
    out = (stacked > MAX_NODE_SCORE) | (stacked < MIN_NODE_SCORE)
    node = int(np.flatnonzero(out.any(axis=0))[0])
    k = int(np.flatnonzero(out[:, node])[0])
    return Status.as_error(
        f"applying score defaultWeights on Score plugins: plugin {go_quote(plugins[k].name)} returns an "
        f"invalid score {int(stacked[k, node])}, it should in the range of "
        f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
    )


class WeightedScores(Mapping[str, np.ndarray]):
    """Each Score plugin's weighted scores (plugin name -> array over the scored nodes), made when read."""

    __slots__ = ("_names", "_stacked", "_weights")

    def __init__(self, names: tuple[str, ...], stacked: np.ndarray, weights: np.ndarray) -> None:
        self._names = names
        self._stacked = stacked
        self._weights = weights

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            k = self._names.index(name)
        except ValueError:
            raise KeyError(name) from None
        weighted: np.ndarray = self._stacked[k] * self._weights[k]
        return weighted

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)
