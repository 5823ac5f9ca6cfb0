"""The snapshot's pod indexes (framework/pod_index.py through Snapshot.pod_counts / key_counts / pod_sums /
row_values / row_scores): after any sequence of cache changes and a snapshot refresh, every index equals the
same question answered from scratch over snapshot.nodes, although it only recomputes the rows whose NodeInfo
changed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.cache.cache import Cache
from kubesched.framework import snapshot as snapshot_mod
from kubesched.framework.pod_index import RowChanges, RowScores
from kubesched.framework.snapshot import MAX_POD_INDEXES, Snapshot
from kubesched.framework.types import NodeInfo, PodInfo, Resource
from kubesched.testing import make_node, make_pod

GPU = "example.com/gpu"
ZONE = "topology.kubernetes.io/zone"
NODE_NAMES = [f"n{i}" for i in range(5)]
POD_NAMES = [f"p{i}" for i in range(10)]
PRIORITIES = [-5, 0, 10, 100]
LOWER_THAN = (0, 10, 101)


# ---------------------------------------------------------------- the questions the indexes answer


def _web(ni: NodeInfo) -> int:
    return sum(1 for pi in ni.pods if pi.labels.get("app") == "web")


def _high(ni: NodeInfo) -> int:
    return sum(1 for pi in ni.pods if pi.priority >= 10)


def _label_keys(ni: NodeInfo) -> list[Hashable]:
    keys: list[Hashable] = []
    for pi in ni.pods:
        keys.extend(sorted(pi.labels.items()))
        keys.append(("priority", pi.priority))
    return keys


def _row(ni: NodeInfo) -> tuple[Any, ...]:
    tier = ni.node.metadata.labels.get("tier") if ni.node is not None else None
    return (ni.name, tier, tuple(sorted(pi.name for pi in ni.pods)))


def _sums_below(priority: int) -> Callable[[NodeInfo], tuple[Resource, int]]:
    return lambda ni: ni.lower_priority_sums(priority)


def _expected_sums(ni: NodeInfo, priority: int) -> tuple[int, int, int, int, dict[str, int]]:
    """Summed requests and number of the node's pods below `priority`, walking its pods."""
    cpu = mem = eph = count = 0
    scalar: Counter[str] = Counter()
    for pi in ni.pods:
        if pi.priority < priority:
            cpu += pi.requests.milli_cpu
            mem += pi.requests.memory
            eph += pi.requests.ephemeral_storage
            scalar.update(pi.requests.scalar)
            count += 1
    return cpu, mem, eph, count, dict(scalar)


def _check_counts(snap: Snapshot) -> None:
    for key, fn in (("web", _web), ("high", _high)):
        got = snap.pod_counts(key, fn)
        assert got.dtype == np.int64
        assert got.tolist() == [fn(ni) for ni in snap.nodes], key


def _check_keys(snap: Snapshot) -> None:
    got = snap.key_counts("label-keys", _label_keys)
    per_node = [Counter(_label_keys(ni)) for ni in snap.nodes]
    expected_keys = set().union(*per_node) if per_node else set()
    # Keys no pod carries any more are gone; every array left has some occurrence.
    assert set(got) == expected_keys
    for key, arr in got.items():
        assert len(arr) == len(snap.nodes)
        assert arr.tolist() == [c[key] for c in per_node], key


def _check_sums(snap: Snapshot, priority: int) -> None:
    got = snap.pod_sums(("lower", priority), _sums_below(priority))
    expected = [_expected_sums(ni, priority) for ni in snap.nodes]
    assert got.cpu.tolist() == [e[0] for e in expected]
    assert got.mem.tolist() == [e[1] for e in expected]
    assert got.eph.tolist() == [e[2] for e in expected]
    assert got.pods.tolist() == [e[3] for e in expected]
    names = set(got.scalar) | {name for e in expected for name in e[4]}
    n = len(snap.nodes)
    for name in names:
        arr = got.scalar.get(name, np.zeros(n, np.int64))
        assert arr.tolist() == [e[4].get(name, 0) for e in expected], name


def _check_rows(snap: Snapshot) -> None:
    got = snap.row_values("rows", _row)
    assert list(got) == [_row(ni) for ni in snap.nodes]


def _score(ni: NodeInfo) -> int:
    return 1000 * len(ni.pods) + ni.requested.milli_cpu - ni.allocatable.milli_cpu


def _check_scores(snap: Snapshot, one_by_one: int, every: int) -> None:
    """row_scores at every `every`-th node; up to `one_by_one` changed rows recomputed one at a time."""
    nodes = snap.nodes
    idx = np.arange(0, len(nodes), every, dtype=np.int64)
    many = lambda rows: np.array([_score(nodes[i]) for i in rows.tolist()], np.int64)  # noqa: E731
    saved = RowScores.ONE_BY_ONE
    RowScores.ONE_BY_ONE = one_by_one
    try:
        got = snap.row_scores(("scores", one_by_one, every), lambda: (_score, many), idx)
    finally:
        RowScores.ONE_BY_ONE = saved
    assert got.tolist() == [_score(nodes[i]) for i in idx.tolist()]


def _odd_pods(ni: NodeInfo) -> int:
    """0 on many rows: a row score whose non-zero rows the index counts (a filter's failure keys)."""
    return len(ni.pods) % 2 * (1 + ni.requested.milli_cpu)


def _check_nonzero(snap: Snapshot, one_by_one: int) -> None:
    """row_scores_all's `nonzero` after its own syncs and after row_scores' partial ones on the same index."""
    nodes = snap.nodes
    many = lambda rows: np.array([_odd_pods(nodes[i]) for i in rows.tolist()], np.int64)  # noqa: E731
    saved = RowScores.ONE_BY_ONE
    RowScores.ONE_BY_ONE = one_by_one
    try:
        key = ("odd", one_by_one)
        snap.row_scores(key, lambda: (_odd_pods, many), np.arange(0, len(nodes), 2, dtype=np.int64))
        index = snap.row_scores_all(key, lambda: (_odd_pods, many))
    finally:
        RowScores.ONE_BY_ONE = saved
    expected = [_odd_pods(ni) for ni in nodes]
    assert index.values.tolist() == expected
    assert index.nonzero == sum(1 for v in expected if v)


CHECKS: dict[str, Callable[[Snapshot], None]] = {
    **{f"nonzero/{k}": (lambda s, k=k: _check_nonzero(s, k)) for k in (0, 1, 16)},
    "counts": _check_counts,
    "keys": _check_keys,
    "rows": _check_rows,
    **{f"scores/{k}/{e}": (lambda s, k=k, e=e: _check_scores(s, k, e)) for k in (0, 1, 16) for e in (1, 2)},
    **{f"sums<{p}": (lambda s, p=p: _check_sums(s, p)) for p in LOWER_THAN},
}


# ---------------------------------------------------------------- a cluster model driven through the real cache


class Model:
    """The cache, its snapshot, and what the test believes is in them."""

    def __init__(self) -> None:
        self.cache = Cache()
        self.snap = Snapshot()
        self.nodes: dict[str, Any] = {}  # name -> Node in the cache
        self.pods: dict[str, PodInfo] = {}  # name -> PodInfo added to the cache
        self.assumed: dict[str, PodInfo] = {}

    def node(self, name: str, zone: str, tier: str, gpu: str | None) -> None:
        node = make_node(name, labels={ZONE: zone, "tier": tier}, extra={GPU: gpu} if gpu else None)
        old = self.nodes.get(name)
        if old is None:
            self.cache.add_node(node)
        else:
            self.cache.update_node(old, node)
        self.nodes[name] = node

    def remove_node(self, name: str) -> None:
        node = self.nodes.pop(name, None)
        if node is not None:
            self.cache.remove_node(node)

    def pod(self, name: str, spec: dict[str, Any]) -> None:
        if name in self.assumed:
            return
        pi = PodInfo(make_pod(name, **spec))
        old = self.pods.get(name)
        if old is None:
            self.cache.add_pod(pi)
        else:
            self.cache.update_pod(old, pi)
        self.pods[name] = pi

    def remove_pod(self, name: str) -> None:
        pi = self.pods.pop(name, None) or self.assumed.pop(name, None)
        if pi is not None:
            self.cache.remove_pod(pi)

    def assume(self, name: str, spec: dict[str, Any]) -> None:
        if name in self.pods or name in self.assumed:
            return
        spec = dict(spec)
        node = spec.pop("node")
        pi = PodInfo(make_pod(name, **spec))
        self.cache.assume_pod(pi, node)
        self.assumed[name] = pi

    def forget(self) -> None:
        if self.assumed:
            name = sorted(self.assumed)[0]
            self.cache.forget_pod(self.assumed.pop(name))

    def apply(self, op: tuple[Any, ...]) -> None:
        kind, *args = op
        getattr(self, kind)(*args)
        self.cache.update_snapshot(self.snap)

    def check_snapshot_matches_model(self) -> None:
        snap = self.snap
        assert sorted(ni.name for ni in snap.nodes) == sorted(self.nodes)
        on_node: dict[str, list[str]] = {}
        for name, pi in self.pods.items():
            on_node.setdefault(pi.node_name, []).append(name)
        for name, pi in self.assumed.items():
            on_node.setdefault(self.cache.pod_states[pi.uid].node, []).append(name)
        for i, ni in enumerate(snap.nodes):
            assert ni.index == i
            assert sorted(pi.name for pi in ni.pods) == sorted(on_node.get(ni.name, []))


pod_spec_st = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from([None, "100m", "250m", "1"]),
        "mem": st.sampled_from([None, "64Mi", "1Gi"]),
        "node": st.sampled_from(NODE_NAMES),
        "labels": st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["web", "db"]), max_size=2),
        "priority": st.sampled_from(PRIORITIES),
        "extra": st.sampled_from(
            [None, {GPU: "1"}, {GPU: "2"}, {"ephemeral-storage": "1Gi"}, {GPU: "1", "example.com/fpga": "3"}]
        ),
    }
)

op_st = st.one_of(
    st.tuples(
        st.just("node"),
        st.sampled_from(NODE_NAMES),
        st.sampled_from(["a", "b"]),
        st.sampled_from(["x", "y"]),
        st.sampled_from([None, "4"]),
    ),
    st.tuples(st.just("remove_node"), st.sampled_from(NODE_NAMES)),
    st.tuples(st.just("pod"), st.sampled_from(POD_NAMES), pod_spec_st),
    st.tuples(st.just("pod"), st.sampled_from(POD_NAMES), pod_spec_st),
    st.tuples(st.just("remove_pod"), st.sampled_from(POD_NAMES)),
    st.tuples(st.just("assume"), st.sampled_from(POD_NAMES), pod_spec_st),
    st.tuples(st.just("forget")),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(NODE_NAMES), min_size=1, max_size=5, unique=True),
    st.lists(st.tuples(op_st, st.sets(st.sampled_from(sorted(CHECKS)))), max_size=25),
)
def test_indexes_equal_a_recomputation_after_every_change(initial: list[str], steps: list[Any]) -> None:
    _run_steps(initial, steps)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(NODE_NAMES), min_size=1, max_size=5, unique=True),
    st.lists(st.tuples(op_st, st.sets(st.sampled_from(sorted(CHECKS)))), max_size=25),
)
def test_indexes_catch_up_on_changes_the_snapshot_no_longer_lists(initial: list[str], steps: list[Any]) -> None:
    """With two refreshes remembered, an index asked rarely compares every row (RowChanges.since is None)."""
    saved = RowChanges.KEPT
    RowChanges.KEPT = 2
    try:
        _run_steps(initial, steps)
    finally:
        RowChanges.KEPT = saved


def _run_steps(initial: list[str], steps: list[Any]) -> None:
    m = Model()
    for k, name in enumerate(initial):
        m.node(name, "ab"[k % 2], "x", None)
    m.cache.update_snapshot(m.snap)
    for check in CHECKS.values():
        check(m.snap)
    for op, asked in steps:
        m.apply(op)
        m.check_snapshot_matches_model()
        # Only some indexes are asked each step: the others must catch up on several changed rows later.
        for name in sorted(asked):
            CHECKS[name](m.snap)
    for check in CHECKS.values():
        check(m.snap)


# ---------------------------------------------------------------- incremental behaviour


def _counting(fn: Callable[[NodeInfo], Any], seen: list[str]) -> Callable[[NodeInfo], Any]:
    def wrapped(ni: NodeInfo) -> Any:
        seen.append(ni.name)
        return fn(ni)

    return wrapped


def _cluster(n: int = 4) -> Model:
    m = Model()
    for k in range(n):
        m.node(f"n{k}", "a", "x", None)
    m.cache.update_snapshot(m.snap)
    return m


def test_only_changed_rows_are_recomputed() -> None:
    m = _cluster()
    seen: list[str] = []
    fn = _counting(_web, seen)
    assert m.snap.pod_counts("web", fn).tolist() == [0, 0, 0, 0]
    assert sorted(seen) == ["n0", "n1", "n2", "n3"]
    seen.clear()
    m.apply(("pod", "p0", {"cpu": "1", "node": "n2", "labels": {"app": "web"}}))
    assert m.snap.pod_counts("web", fn).tolist() == [0, 0, 1, 0]
    assert seen == ["n2"]
    seen.clear()
    # Nothing changed: nothing recomputed.
    assert m.snap.pod_counts("web", fn).tolist() == [0, 0, 1, 0]
    assert seen == []
    # A node update (labels) touches its row only.
    m.apply(("node", "n1", "a", "y", None))
    assert m.snap.row_values("rows", _row)[1] == ("n1", "y", ())
    assert m.snap.pod_counts("web", fn).tolist() == [0, 0, 1, 0]
    assert seen == ["n1"]


def test_the_key_names_the_index_and_the_first_function_stays() -> None:
    m = _cluster(2)
    m.apply(("pod", "p0", {"node": "n0", "labels": {"app": "web"}}))
    assert m.snap.pod_counts("q", _web).tolist() == [1, 0]
    # Same key, other function: the index answers the question it was built for.
    assert m.snap.pod_counts("q", lambda ni: 7).tolist() == [1, 0]
    assert m.snap.pod_counts("other", lambda ni: 7).tolist() == [7, 7]


def test_key_counts_drop_keys_whose_last_occurrence_leaves() -> None:
    m = _cluster(3)
    m.apply(("pod", "p0", {"node": "n0", "labels": {"app": "web"}}))
    m.apply(("pod", "p1", {"node": "n2", "labels": {"app": "web"}}))
    m.apply(("pod", "p2", {"node": "n2", "labels": {"app": "db"}}))
    got = m.snap.key_counts("k", _label_keys)
    assert got[("app", "web")].tolist() == [1, 0, 1]
    assert got[("app", "db")].tolist() == [0, 0, 1]
    assert got[("priority", 0)].tolist() == [1, 0, 2]
    m.apply(("remove_pod", "p2"))
    got = m.snap.key_counts("k", _label_keys)
    assert ("app", "db") not in got
    assert got[("priority", 0)].tolist() == [1, 0, 1]
    # Moving the last db-less web pod away from n2 keeps the key (n0 still has one).
    m.apply(("pod", "p1", {"node": "n1", "labels": {"app": "web"}}))
    got = m.snap.key_counts("k", _label_keys)
    assert got[("app", "web")].tolist() == [1, 1, 0]
    m.apply(("remove_pod", "p0"))
    m.apply(("remove_pod", "p1"))
    assert m.snap.key_counts("k", _label_keys) == {}


def test_sums_index_counts_scalar_resources_and_clears_them() -> None:
    m = _cluster(2)
    m.apply(("pod", "p0", {"cpu": "1", "node": "n0", "priority": 0, "extra": {GPU: "2"}}))
    m.apply(("pod", "p1", {"cpu": "250m", "node": "n0", "priority": 100, "extra": {GPU: "1"}}))
    m.apply(("pod", "p2", {"mem": "1Gi", "node": "n1", "priority": 5}))
    sums = m.snap.pod_sums(("lower", 10), _sums_below(10))
    assert sums.cpu.tolist() == [1000, 0]
    assert sums.mem.tolist() == [0, 2**30]
    assert sums.pods.tolist() == [1, 1]
    assert sums.scalar[GPU].tolist() == [2, 0]
    m.apply(("remove_pod", "p0"))
    sums = m.snap.pod_sums(("lower", 10), _sums_below(10))
    assert sums.cpu.tolist() == [0, 0]
    assert sums.pods.tolist() == [0, 1]
    assert sums.scalar.get(GPU, np.zeros(2, np.int64)).tolist() == [0, 0]


def test_node_list_change_rebuilds_indexes_with_the_new_length() -> None:
    m = _cluster(3)
    m.apply(("pod", "p0", {"node": "n1", "labels": {"app": "web"}}))
    seen: list[str] = []
    fn = _counting(_web, seen)
    assert m.snap.pod_counts("web", fn).tolist() == [0, 1, 0]
    old_rows = m.snap.row_values("rows", _row)
    seen.clear()
    m.apply(("node", "n9", "a", "x", None))
    assert m.snap.pod_counts("web", fn).tolist() == [_web(ni) for ni in m.snap.nodes]
    # Rebuilt from scratch: every node, the new one included, was counted again.
    assert sorted(seen) == ["n0", "n1", "n2", "n9"]
    rows = m.snap.row_values("rows", _row)
    assert rows is not old_rows
    assert len(rows) == 4
    seen.clear()
    m.apply(("remove_node", "n1"))
    got = m.snap.pod_counts("web", fn)
    assert len(got) == 3
    assert got.tolist() == [0, 0, 0]
    assert sorted(seen) == ["n0", "n2", "n9"]
    # The pod stays in the cache on its removed node; re-adding the node brings it back.
    m.apply(("node", "n1", "b", "x", None))
    got = m.snap.pod_counts("web", fn)
    assert got.tolist() == [_web(ni) for ni in m.snap.nodes]
    assert int(got.sum()) == 1


def test_at_most_max_pod_indexes_are_kept_least_recently_used_first_out(monkeypatch: Any) -> None:
    monkeypatch.setattr(snapshot_mod, "MAX_POD_INDEXES", 5)
    m = _cluster(3)
    m.apply(("pod", "p0", {"node": "n2", "labels": {"app": "web"}}))
    calls: dict[int, int] = {}

    def counter(k: int) -> Callable[[NodeInfo], int]:
        def fn(ni: NodeInfo) -> int:
            calls[k] = calls.get(k, 0) + 1
            return _web(ni) + k

        return fn

    def ask(k: int) -> None:
        assert m.snap.pod_counts(("k", k), counter(k)).tolist() == [k, k, k + 1]

    for k in range(5):
        ask(k)
    assert all(calls[k] == 3 for k in range(5))
    ask(0)  # used again: now the most recent
    assert calls[0] == 3
    ask(5)  # a sixth index: the least recently used one (1) goes
    ask(0)
    assert calls[0] == 3
    for k in (2, 3, 4, 5):
        ask(k)
        assert calls[k] == 3
    ask(1)  # dropped: built again from scratch
    assert calls[1] == 6


def test_the_default_bound_drops_the_oldest_index() -> None:
    m = _cluster(2)
    calls: list[int] = []
    for k in range(MAX_POD_INDEXES + 1):
        m.snap.pod_counts(("k", k), lambda ni, k=k: calls.append(k) or k)
    assert calls.count(0) == 2
    calls.clear()
    assert m.snap.pod_counts(("k", MAX_POD_INDEXES), lambda ni: -1).tolist() == [MAX_POD_INDEXES] * 2
    assert m.snap.pod_counts(("k", 1), lambda ni: -1).tolist() == [1, 1]
    assert calls == []
    # Index 0 was dropped: asking again rebuilds it with the function given now.
    assert m.snap.pod_counts(("k", 0), lambda ni: -1).tolist() == [-1, -1]


def test_row_changes_since() -> None:
    c = RowChanges()
    assert c.since(c.serial) == []
    assert c.since(-1) is None
    c.record([3])
    c.record([1, 3])
    assert c.since(c.serial - 1) == [1, 3]
    assert sorted(c.since(c.serial - 2) or []) == [1, 3, 3]
    assert c.since(c.serial) == []
    for _ in range(RowChanges.KEPT):
        c.record([0])
    assert c.since(1) is None  # the refresh after serial 1 is no longer remembered
    assert c.since(2) == [0] * RowChanges.KEPT
    c.forget()
    assert c.since(c.serial - 1) is None
    assert c.since(c.serial) == []
