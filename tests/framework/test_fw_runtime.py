"""The framework runtime (framework/runtime/framework.go): running each extension point's plugins."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from kubesched.framework.cycle_state import BIND_NOT_BEFORE, PRE_BIND_NEXT, CycleState
from kubesched.framework.interface import (
    BindPlugin,
    FilterPlugin,
    FilterVerdicts,
    NodeScoreList,
    PermitPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    RowScore,
    ScorePlugin,
    SummableScorePlugin,
    VectorFilterPlugin,
)
from kubesched.framework.runtime import Framework
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.plugins.noderesources.fit import Fit
from kubesched.queue.nominator import MODE_OVERRIDE, NominatingInfo, Nominator
from kubesched.testing import Env, make_node, make_pod

U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


class PF(PreFilterPlugin):
    """A PreFilter plugin returning a fixed (result, status) and recording its calls."""

    def __init__(self, name: str, status: Status | None = None, nodes: set[str] | None = None) -> None:
        self.name = name  # type: ignore[misc]
        self.status = status
        self.nodes = nodes
        self.calls = 0

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]):
        self.calls += 1
        return (PreFilterResult(self.nodes) if self.nodes is not None else None), self.status


class F(FilterPlugin):
    """A Filter plugin failing the nodes `reject` says, recording the nodes it saw."""

    def __init__(self, name: str, reject: Callable[[str], Status | None], raises: bool = False) -> None:
        self.name = name  # type: ignore[misc]
        self.reject = reject
        self.raises = raises
        self.seen: list[str] = []

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        self.seen.append(node_info.name)
        if self.raises:
            raise RuntimeError("kaboom")
        return self.reject(node_info.name)


class VF(VectorFilterPlugin):
    """The same, with a vector path."""

    def __init__(self, name: str, reject: Callable[[str], Status | None]) -> None:
        self.name = name  # type: ignore[misc]
        self.reject = reject

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        return self.reject(node_info.name)

    def filter_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> FilterVerdicts | None:
        statuses = [self.reject(ni.name) for ni in snapshot.nodes]
        failed = np.array([s is not None for s in statuses], bool)
        if not failed.any():
            return None
        return FilterVerdicts(failed, lambda i: statuses[i])


class S(ScorePlugin):
    def __init__(self, name: str, scores: dict[str, int], status: Status | None = None, normalize: bool = False):
        self.name = name  # type: ignore[misc]
        self.scores = scores
        self.status = status
        self._normalize = normalize

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        return self.scores.get(node_info.name, 0), self.status

    def has_normalize(self) -> bool:
        return self._normalize

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: NodeScoreList) -> Status | None:
        top = int(scores.scores.max())
        scores.scores = scores.scores * 100 // top if top else scores.scores
        return None


class PostF(PostFilterPlugin):
    def __init__(self, name: str, status: Status | None, result: PostFilterResult | None = None) -> None:
        self.name = name  # type: ignore[misc]
        self.status = status
        self.result = result
        self.calls = 0

    def post_filter(self, state: CycleState, pod: PodInfo, node_to_status: Any):
        self.calls += 1
        return self.result, self.status


def _fw(env: Env, weights: dict[str, int] | None = None, **points: list[Any]) -> Framework:
    return Framework("default-scheduler", points, weights or {}, None, env.handle)


def _env(n: int = 4) -> Env:
    return Env([make_node(f"n{i}") for i in range(n)])


POD = PodInfo(make_pod("p", "100m"))


def _no(name: str) -> Callable[[str], Status | None]:
    return lambda node: Status(U, f"{name} says no") if node else None


# ---------------------------------------------------------------- PreFilter


def test_pre_filter_skip_records_the_plugin_to_skip_at_filter() -> None:
    env = _env()
    a, b = PF("A", Status(Code.SKIP)), PF("B")
    state = CycleState()
    res, status, plugins = _fw(env, preFilter=[a, b]).run_pre_filter_plugins(state, POD, env.snapshot.nodes)
    assert (res, status, plugins) == (None, None, set())
    assert state.skip_filter_plugins == frozenset({"A"})
    assert b.calls == 1


def test_pre_filter_skip_sets_follow_each_pod() -> None:
    """The skipped set is the plugins that skipped this pod, whatever earlier pods skipped; pods that skip alike
    share one set object; a stop keeps what skipped before it."""

    class Picky(PreFilterPlugin):
        """Skips the pods whose name lists it ("A-C": A and C skip); Stop stops the pods named "...-stop"."""

        def __init__(self, name: str) -> None:
            self.name = name  # type: ignore[misc]

        def pre_filter(self, state, pod, nodes):
            parts = pod.name.split("-")
            if self.name == "Stop" and "stop" in parts:
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "no")
            return None, (Status(Code.SKIP) if self.name in parts else None)

    env = _env()
    fw = _fw(env, preFilter=[Picky("A"), Picky("B"), Picky("Stop"), Picky("C")])
    seen: dict[frozenset[str], frozenset[str]] = {}
    for name, want in [
        ("A-C", {"A", "C"}),
        ("B", {"B"}),
        ("x", set()),
        ("A-B-C", {"A", "B", "C"}),
        ("C-A", {"A", "C"}),
        ("x-stop", set()),
        ("A-C-stop", {"A"}),
    ]:
        state = CycleState()
        fw.run_pre_filter_plugins(state, PodInfo(make_pod(name, "100m")), env.snapshot.nodes)
        assert state.skip_filter_plugins == frozenset(want), name
        assert seen.setdefault(frozenset(want), state.skip_filter_plugins) is state.skip_filter_plugins


def test_skipped_plugins_filter_is_not_run() -> None:
    env = _env()
    f = F("A", _no("A"))
    fw = _fw(env, preFilter=[PF("A", Status(Code.SKIP))], filter=[f])
    state = CycleState()
    fw.run_pre_filter_plugins(state, POD, env.snapshot.nodes)
    assert fw.run_filter_plugins(state, POD, env.snapshot.nodes[0]) is None
    assert f.seen == []


def test_pre_filter_unschedulable_continues_and_unresolvable_stops() -> None:
    env = _env()
    a, b, c = PF("A", Status(U, "a says no")), PF("B", nodes={"n1"}), PF("C")
    res, status, plugins = _fw(env, preFilter=[a, b, c]).run_pre_filter_plugins(CycleState(), POD, env.snapshot.nodes)
    assert (a.calls, b.calls, c.calls) == (1, 1, 1)
    assert status is not None and (status.code, status.message(), status.plugin) == (U, "a says no", "A")
    assert res is not None and res.node_names == {"n1"}
    assert plugins == {"B"}

    a, b = PF("A", Status(UU, "never")), PF("B")
    res, status, plugins = _fw(env, preFilter=[a, b]).run_pre_filter_plugins(CycleState(), POD, env.snapshot.nodes)
    assert b.calls == 0
    assert (res, plugins) == (None, set())
    assert (status.code, status.message(), status.plugin) == (UU, "never", "A")


def test_pre_filter_error_stops_with_an_error_status() -> None:
    env = _env()
    b = PF("B")
    _, status, _ = _fw(env, preFilter=[PF("A", Status(Code.ERROR, "boom")), b]).run_pre_filter_plugins(
        CycleState(), POD, env.snapshot.nodes
    )
    assert (status.code, status.plugin) == (Code.ERROR, "A")
    assert "boom" in status.message()
    assert b.calls == 0


def test_pre_filter_error_message() -> None:
    env = _env()
    _, status, _ = _fw(env, preFilter=[PF("A", Status(Code.ERROR, "boom"))]).run_pre_filter_plugins(
        CycleState(), POD, env.snapshot.nodes
    )
    assert status.message() == 'running PreFilter plugin "A": boom'


def test_pre_filter_results_intersect() -> None:
    env = _env()
    plugins = [PF("A", nodes={"n0", "n1", "n2"}), PF("B"), PF("C", nodes={"n1", "n2", "n3"})]
    res, status, names = _fw(env, preFilter=plugins).run_pre_filter_plugins(CycleState(), POD, env.snapshot.nodes)
    assert status is None
    assert res.node_names == {"n1", "n2"}
    assert names == {"A", "C"}


def test_pre_filter_result_emptied_by_one_plugin() -> None:
    env = _env()
    c = PF("C")
    res, status, names = _fw(env, preFilter=[PF("A", nodes=set()), c]).run_pre_filter_plugins(
        CycleState(), POD, env.snapshot.nodes
    )
    assert (status.code, status.message()) == (UU, "node(s) didn't satisfy plugin A")
    assert res is not None and res.node_names == set()
    assert names == {"A"}
    assert c.calls == 0


def test_pre_filter_results_with_no_common_node() -> None:
    env = _env()
    _, status, names = _fw(env, preFilter=[PF("A", nodes={"n0"}), PF("B", nodes={"n1"})]).run_pre_filter_plugins(
        CycleState(), POD, env.snapshot.nodes
    )
    assert (status.code, status.message()) == (UU, "node(s) didn't satisfy plugin(s) [A B] simultaneously")
    assert names == {"A", "B"}


def test_pre_filter_conflict_lists_plugins_sorted() -> None:
    env = _env()
    _, status, _ = _fw(env, preFilter=[PF("Zeta", nodes={"n0"}), PF("Alpha", nodes={"n1"})]).run_pre_filter_plugins(
        CycleState(), POD, env.snapshot.nodes
    )
    assert status.message() == "node(s) didn't satisfy plugin(s) [Alpha Zeta] simultaneously"


def test_pre_filter_plugin_that_raises_becomes_an_error_naming_it() -> None:
    class Boom(PreFilterPlugin):
        name = "Boom"

        def pre_filter(self, state, pod, nodes):
            raise ValueError("bad input")

    env = _env()
    _, status, _ = _fw(env, preFilter=[Boom()]).run_pre_filter_plugins(CycleState(), POD, env.snapshot.nodes)
    assert (status.code, status.plugin) == (Code.ERROR, "Boom")
    assert "Boom" in status.message() and "bad input" in status.message()


# ---------------------------------------------------------------- Filter


def test_filter_stops_at_the_first_failure_per_node() -> None:
    env = _env()
    first = F("First", lambda n: Status(U, "first") if n == "n1" else None)
    second = F("Second", lambda n: Status(UU, "second") if n in ("n1", "n2") else None)
    fw = _fw(env, filter=[first, second])
    state = CycleState()
    statuses = {ni.name: fw.run_filter_plugins(state, POD, ni) for ni in env.snapshot.nodes}
    assert statuses["n0"] is None and statuses["n3"] is None
    assert (statuses["n1"].message(), statuses["n1"].plugin, statuses["n1"].code) == ("first", "First", U)
    assert (statuses["n2"].message(), statuses["n2"].plugin, statuses["n2"].code) == ("second", "Second", UU)
    assert second.seen == ["n0", "n2", "n3"]


def test_filter_returning_a_non_rejection_becomes_an_error() -> None:
    env = _env()
    fw = _fw(env, filter=[F("Odd", lambda n: Status(Code.WAIT, "wait?"))])
    s = fw.run_filter_plugins(CycleState(), POD, env.snapshot.nodes[0])
    assert (s.code, s.plugin) == (Code.ERROR, "Odd")


def test_filter_error_message() -> None:
    env = _env()
    fw = _fw(env, filter=[F("Odd", lambda n: Status(Code.WAIT, "wait?"))])
    assert fw.run_filter_plugins(CycleState(), POD, env.snapshot.nodes[0]).message() == (
        'running "Odd" filter plugin: wait?'
    )


@pytest.mark.parametrize("vector", [True, False])
def test_find_feasible_stops_after_enough_feasible_nodes(vector: bool) -> None:
    env = _env(10)
    odd = (VF if vector else F)("Odd", lambda n: Status(U, "odd") if int(n[1:]) % 2 else None)
    fw = _fw(env, filter=[odd])
    order = np.arange(10, dtype=np.int64)
    out = fw.find_feasible(CycleState(), POD, env.snapshot, order, 3)
    names = [env.snapshot.nodes[int(i)].name for i in out.feasible]
    assert names == ["n0", "n2", "n4"]
    # as upstream's checkNode: the search stops at the next feasible node (n6, not counted); the failure met
    # before it (n5) is recorded and counted as processed
    assert out.processed == 6
    assert out.num_failed == 3
    assert {env.snapshot.nodes[i].name: s.message() for i, s in out.statuses().items()} == {
        "n1": "odd",
        "n3": "odd",
        "n5": "odd",
    }
    assert all(s.plugin == "Odd" for s in out.statuses().values())
    everything = fw.find_feasible(CycleState(), POD, env.snapshot, order, 100)
    assert (len(everything.feasible), everything.processed, everything.num_failed) == (5, 10, 5)


def test_find_feasible_follows_the_given_order() -> None:
    env = _env(6)
    fw = _fw(env, filter=[VF("None", lambda n: None)])
    order = np.array([4, 5, 0, 1, 2, 3], np.int64)
    out = fw.find_feasible(CycleState(), POD, env.snapshot, order, 2)
    assert out.feasible.tolist() == [4, 5]
    assert out.processed == 2


def test_find_feasible_mixes_vector_and_per_node_plugins_in_order() -> None:
    env = _env(4)
    per_node = F("PerNode", lambda n: Status(U, "per-node") if n in ("n1", "n2") else None)
    vec = VF("Vector", lambda n: Status(UU, "vector") if n in ("n2", "n3") else None)
    fw = _fw(env, filter=[per_node, vec])
    out = fw.find_feasible(CycleState(), POD, env.snapshot, np.arange(4, dtype=np.int64), 100)
    got = {env.snapshot.nodes[i].name: (s.plugin, s.message()) for i, s in out.statuses().items()}
    assert got == {"n1": ("PerNode", "per-node"), "n2": ("PerNode", "per-node"), "n3": ("Vector", "vector")}
    assert out.feasible.tolist() == [0]


def test_find_feasible_plugin_that_raises_is_an_error_naming_it() -> None:
    env = _env(3)
    fw = _fw(env, filter=[F("Broken", lambda n: None, raises=True)])
    out = fw.find_feasible(CycleState(), POD, env.snapshot, np.arange(3, dtype=np.int64), 3)
    assert out.error is not None
    assert (out.error.code, out.error.plugin) == (Code.ERROR, "Broken")
    assert "kaboom" in out.error.message()


def test_nominated_pods_of_equal_or_higher_priority_count_on_their_node() -> None:
    env = Env([make_node("n0", cpu="2"), make_node("n1", cpu="2")])
    nominator = Nominator()
    env.handle._nominator = lambda: nominator
    high = PodInfo(make_pod("high", "1500m", priority=10))
    low = PodInfo(make_pod("low", "1500m", priority=1))
    nominator.add(high, NominatingInfo("n0", MODE_OVERRIDE))
    nominator.add(low, NominatingInfo("n1", MODE_OVERRIDE))
    fit = Fit()
    fw = _fw(env, preFilter=[fit], filter=[fit])
    pod = PodInfo(make_pod("p", "1", priority=5))
    state = CycleState()
    fw.run_pre_filter_plugins(state, pod, env.snapshot.nodes)
    n0, n1 = env.snapshot.get("n0"), env.snapshot.get("n1")
    s = fw.run_filter_plugins_with_nominated_pods(state, pod, n0)
    assert (s.code, s.message(), s.plugin) == (U, "Insufficient cpu", "NodeResourcesFit")
    assert fw.run_filter_plugins_with_nominated_pods(state, pod, n1) is None
    assert n0.requested.milli_cpu == 0  # the real NodeInfo is untouched
    out = fw.find_feasible(state, pod, env.snapshot, np.arange(2, dtype=np.int64), 2)
    assert out.feasible.tolist() == [n1.index]
    assert {i: st.message() for i, st in out.statuses().items()} == {n0.index: "Insufficient cpu"}


# ---------------------------------------------------------------- PostFilter


def test_post_filter_collects_reasons_of_unschedulable_plugins() -> None:
    env = _env()
    a = PostF("A", Status(U, "no new claims to deallocate"))
    b = PostF("B", Status(U, "preemption: not eligible"), PostFilterResult("n1"))
    res, status = _fw(env, postFilter=[a, b]).run_post_filter_plugins(CycleState(), POD, None)
    assert (status.code, status.message(), status.plugin) == (
        U,
        "no new claims to deallocate, preemption: not eligible",
        "A",
    )
    assert res is not None and res.nominated_node_name == "n1"


def test_post_filter_stops_at_success_or_unresolvable() -> None:
    env = _env()
    after = PostF("After", Status(U, "x"))
    res, status = _fw(env, postFilter=[PostF("Ok", None, PostFilterResult("n2")), after]).run_post_filter_plugins(
        CycleState(), POD, None
    )
    assert status.code == Code.SUCCESS and res.nominated_node_name == "n2"
    assert after.calls == 0
    res, status = _fw(env, postFilter=[PostF("Stop", Status(UU, "stop")), after]).run_post_filter_plugins(
        CycleState(), POD, None
    )
    assert (status.code, status.plugin, after.calls) == (UU, "Stop", 0)


# ---------------------------------------------------------------- Score


def _over_every_node(env: Env, run: Callable[..., Any], state: CycleState | None = None) -> Any:
    """A score pass (run_score_plugins, run_score_totals) of POD over every node."""
    return run(state or CycleState(), POD, env.snapshot, np.arange(env.snapshot.num_nodes, dtype=np.int64))


def _scores(env: Env, fw: Framework, state: CycleState | None = None):
    return _over_every_node(env, fw.run_score_plugins, state)


def test_score_weights_multiply_each_plugins_scores() -> None:
    env = _env(3)
    a = S("A", {"n0": 10, "n1": 20, "n2": 30})
    b = S("B", {"n0": 100, "n1": 0, "n2": 50})
    total, per_plugin, status = _scores(env, _fw(env, {"A": 2, "B": 3}, score=[a, b]))
    assert status is None
    assert per_plugin["A"].tolist() == [20, 40, 60]
    assert per_plugin["B"].tolist() == [300, 0, 150]
    assert total.tolist() == [320, 40, 210]


def test_score_normalization_runs_before_weights_and_skipped_plugins_do_not_score() -> None:
    env = _env(3)
    a = S("A", {"n0": 1, "n1": 2, "n2": 4}, normalize=True)
    b = S("B", {"n0": 100})
    state = CycleState()
    state.skip_score_plugins = frozenset({"B"})
    total, per_plugin, status = _scores(env, _fw(env, {"A": 2}, score=[a, b]), state)
    assert status is None
    assert per_plugin["A"].tolist() == [50, 100, 200]
    assert "B" not in per_plugin
    assert total.tolist() == [50, 100, 200]


@pytest.mark.parametrize("bad", [101, -1])
def test_score_out_of_range_is_an_error(bad: int) -> None:
    env = _env(2)
    total, _, status = _scores(env, _fw(env, score=[S("Bad", {"n1": bad})]))
    assert total is None
    assert status.code == Code.ERROR
    assert f"invalid score {bad}" in status.message()


def test_score_out_of_range_message() -> None:
    env = _env(2)
    _, _, status = _scores(env, _fw(env, score=[S("Bad", {"n1": 101})]))
    assert status.message() == (
        'applying score defaultWeights on Score plugins: plugin "Bad" returns an invalid score 101, '
        "it should in the range of [0, 100] after normalizing"
    )


class Sum(SummableScorePlugin):
    """A summable Score plugin: a per-row score (by node name), or the same `uniform` score on every node."""

    def __init__(self, name: str, scores: dict[str, int] | None = None, uniform: int | None = None) -> None:
        self.name = name  # type: ignore[misc]
        self.scores = scores or {}
        self.uniform = uniform
        self.raises = False

    def _of(self, ni: NodeInfo) -> int:
        if self.raises:
            raise RuntimeError("kaboom")
        return self.uniform if self.uniform is not None else self.scores.get(ni.name, 0)

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        return self._of(node_info), None

    def score_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        return np.array([self._of(snapshot.nodes[int(i)]) for i in idx], np.int64)

    def score_terms(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> int | RowScore:
        if self.uniform is not None:
            return self.uniform
        many = lambda rows: np.array([self._of(snapshot.nodes[int(i)]) for i in rows], np.int64)  # noqa: E731
        return RowScore((self.name, id(self)), lambda: (self._of, many))


def _totals(env: Env, fw: Framework, state: CycleState | None = None):
    return _over_every_node(env, fw.run_score_totals, state)


def test_score_totals_sum_row_scores_and_uniform_scores_with_their_weights() -> None:
    env = _env(3)
    a = Sum("A", {"n0": 10, "n1": 20, "n2": 30})
    u = Sum("U", uniform=100)
    fw = _fw(env, {"A": 2, "U": 3}, score=[a, u])
    totals = _totals(env, fw)
    assert totals is not None and totals.tolist() == [320, 340, 360]
    assert totals.tolist() == _scores(env, fw)[0].tolist()
    # Kept per row: a change to a node's scores shows only once its row changes (as a pod landing there does).
    a.scores["n1"] = 0
    assert _totals(env, fw).tolist() == [320, 340, 360]
    env.cache.add_pod(PodInfo(make_pod("x", "100m", node="n1")))
    env.cache.update_snapshot(env.snapshot)
    assert _totals(env, fw).tolist() == [320, 300, 360]


def test_score_totals_give_way_to_the_full_pass() -> None:
    """None (the full pass then runs, with its errors in upstream's words) for a plugin that cannot sum, a score
    out of range, a plugin that raises, a row score with NormalizeScore, or reference paths."""
    env = _env(2)
    assert _totals(env, _fw(env, score=[Sum("A", {"n0": 5}), S("B", {})])) is None
    assert _totals(env, _fw(env, score=[Sum("A", {"n1": 101})])) is None
    assert _totals(env, _fw(env, score=[Sum("U", uniform=-1)])) is None
    raising = Sum("A", {"n0": 5})
    raising.raises = True
    assert _totals(env, _fw(env, score=[raising])) is None
    normalizing = Sum("A", {"n0": 5})
    normalizing.normalize_score = lambda *a: None  # type: ignore[method-assign]
    normalizing.has_normalize = lambda: True  # type: ignore[method-assign]
    assert _totals(env, _fw(env, score=[normalizing])) is None
    reference = _fw(env, score=[Sum("A", {"n0": 5})])
    reference.use_vector_paths = False
    assert _totals(env, reference) is None
    assert _totals(env, _fw(env, score=[Sum("A", {"n0": 5})])).tolist() == [5, 0]


def test_score_plugin_error_status() -> None:
    env = _env(2)
    _, _, status = _scores(env, _fw(env, score=[S("Err", {}, Status(Code.ERROR, "broken"))]))
    assert status.code == Code.ERROR
    assert "broken" in status.message()


def test_score_plugin_error_message() -> None:
    env = _env(2)
    _, _, status = _scores(env, _fw(env, score=[S("Err", {}, Status(Code.ERROR, "broken"))]))
    assert status.message() == 'running Score plugins: plugin "Err" failed with: broken'


def test_pre_score_skip_and_error() -> None:
    class PS(PreScorePlugin):
        def __init__(self, name: str, status: Status | None) -> None:
            self.name = name  # type: ignore[misc]
            self.status = status

        def pre_score(self, state, pod, nodes):
            return self.status

    env = _env(2)
    state = CycleState()
    assert _fw(env, preScore=[PS("A", Status(Code.SKIP)), PS("B", None)]).run_pre_score_plugins(state, POD, []) is None
    assert state.skip_score_plugins == frozenset({"A"})
    s = _fw(env, preScore=[PS("E", Status(Code.UNSCHEDULABLE, "x"))]).run_pre_score_plugins(CycleState(), POD, [])
    assert s.code == Code.ERROR


# ---------------------------------------------------------------- error texts (framework.go, %q quoting)


class _Failing(ScorePlugin):
    """Returns an Error status (or a Wait) from whichever extension point it is asked to run at."""

    def __init__(self, name: str, status: Status) -> None:
        self.name = name  # type: ignore[misc]
        self.status = status

    def score(self, state, pod, node_info):
        return 0, None

    def has_normalize(self) -> bool:
        return True

    def normalize_score(self, state, pod, scores):
        return self.status

    def pre_score(self, state, pod, nodes):
        return self.status

    def reserve(self, state, pod, node_name):
        return self.status

    def permit(self, state, pod, node_name):
        return self.status, 10.0

    def pre_bind(self, state, pod, node_name):
        return self.status

    def bind(self, state, pod, node_name):
        return self.status

    def pre_filter_extensions(self):
        return self

    def add_pod(self, state, pod, pod_to_add, node_info):
        return self.status

    def remove_pod(self, state, pod, pod_to_remove, node_info):
        return self.status


def _failing(*bases: type) -> _Failing:
    cls = type("P", (_Failing, *bases), {})
    return cls('My "P"', Status(Code.ERROR, "boom"))


def test_normalize_error_message() -> None:
    env = _env(2)
    _, _, status = _scores(env, _fw(env, score=[_failing()]))
    assert status.message() == 'running Normalize on Score plugins: plugin "My \\"P\\"" failed with: boom'


def test_score_errors_are_reported_before_normalize_and_range_errors() -> None:
    # Every plugin scores before any normalizes; every plugin normalizes before any range check.
    env = _env(2)
    _, _, status = _scores(env, _fw(env, score=[S("Bad", {"n1": 101}), S("Err", {}, Status(Code.ERROR, "broken"))]))
    assert status.message() == 'running Score plugins: plugin "Err" failed with: broken'
    _, _, status = _scores(env, _fw(env, score=[S("Bad", {"n1": 101}), _failing()]))
    assert status.message().startswith("running Normalize on Score plugins")


def test_extension_point_error_messages() -> None:
    env = _env(2)
    ni = env.snapshot.nodes[0]
    pre_score = _failing(PreScorePlugin)
    s = _fw(env, preScore=[pre_score]).run_pre_score_plugins(CycleState(), POD, [])
    assert (s.message(), s.plugin) == ('running PreScore plugin "My \\"P\\"": boom', "")
    pf = _failing(PreFilterPlugin)
    fw = _fw(env, preFilter=[pf])
    s = fw.run_pre_filter_extension_add_pod(CycleState(), POD, POD, ni)
    assert (s.message(), s.plugin) == ('running AddPod on PreFilter plugin "My \\"P\\"": boom', "")
    s = fw.run_pre_filter_extension_remove_pod(CycleState(), POD, POD, ni)
    assert (s.message(), s.plugin) == ('running RemovePod on PreFilter plugin "My \\"P\\"": boom', "")
    s = _fw(env, reserve=[_failing(ReservePlugin)]).run_reserve_plugins_reserve(CycleState(), POD, "n0")
    assert (s.message(), s.plugin) == ('running Reserve plugin "My \\"P\\"": boom', "")
    s = _fw(env, permit=[_failing(PermitPlugin)]).run_permit_plugins(CycleState(), POD, "n0")
    assert (s.message(), s.plugin) == ('running Permit plugin "My \\"P\\"": boom', 'My "P"')
    s = _fw(env, preBind=[_failing(PreBindPlugin)]).run_pre_bind_plugins(CycleState(), POD, "n0")
    assert (s.message(), s.plugin) == ('running PreBind plugin "My \\"P\\"": boom', "")
    s = _fw(env, bind=[_failing(BindPlugin)]).run_bind_plugins(CycleState(), POD, "n0")
    assert (s.message(), s.plugin) == ('running Bind plugin "My \\"P\\"": boom', "")


def test_permit_wait_message_quotes_the_pod_name() -> None:
    env = _env(2)
    waiter = type("W", (_Failing, PermitPlugin), {})("W", Status(Code.WAIT))
    s = _fw(env, permit=[waiter]).run_permit_plugins(CycleState(), POD, "n0")
    assert (s.code, s.message()) == (Code.WAIT, 'one or more plugins asked to wait and no plugin rejected pod "p"')


class _PreBind(PreBindPlugin):
    """Records its calls; `wait` asks the binding cycle to wait (as VolumeBinding does for its claims)."""

    def __init__(self, name: str, calls: list[str], wait: bool = False) -> None:
        self.name = name  # type: ignore[misc]
        self.calls, self.wait = calls, wait

    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        self.calls.append(self.name)
        if self.wait:
            state.write(BIND_NOT_BEFORE, 1.0)
        return None


def test_pre_bind_plugins_after_one_that_waits_run_when_the_wait_ends() -> None:
    # Upstream's PreBind blocks while VolumeBinding waits for the claims: DynamicResources' PreBind, after it,
    # writes the claim's allocation only then (until then the claim is in the process of being allocated).
    calls: list[str] = []
    fw = _fw(_env(1), preBind=[_PreBind("A", calls), _PreBind("Volumes", calls, wait=True), _PreBind("Claims", calls)])
    state = CycleState()
    assert fw.run_pre_bind_plugins(state, POD, "n0") is None
    assert calls == ["A", "Volumes"] and state.get(PRE_BIND_NEXT) == 2
    state.delete(BIND_NOT_BEFORE)
    assert fw.run_pre_bind_plugins(state, POD, "n0") is None
    assert calls == ["A", "Volumes", "Claims"] and state.get(PRE_BIND_NEXT) is None
