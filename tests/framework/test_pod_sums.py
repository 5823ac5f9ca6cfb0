"""Nominated pods' requests summed per node (framework/pod_sums.py, Nominator.sums_at_least): after any
sequence of nominations, re-nominations, deletions and updates, the sums a pod must yield to equal those of
the nominated pods `ge_priority_nominations` lists for it, node by node; and ExtraSums' array helpers."""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.cache.cache import Cache
from kubesched.framework.pod_sums import ExtraSums, NominationColumns, ge_priority_nominations, with_extra
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.types import NodeInfo, PodInfo, Resource
from kubesched.queue.nominator import CLEAR_NOMINATED_NODE, MODE_OVERRIDE, NominatingInfo, Nominator
from kubesched.testing import make_node, make_pod

GPU = "example.com/gpu"
SNAPSHOT_NODES = ["n0", "n1", "n2", "n3"]
# "gone" is never a node of the snapshot: nominations to it count nowhere.
TARGETS = [*SNAPSHOT_NODES, "gone"]
POD_NAMES = [f"p{i}" for i in range(8)]
PRIORITIES = [-10, 0, 5, 100]


def _pod(name: str, spec: dict[str, Any], status_node: str = "") -> PodInfo:
    pod = make_pod(name, spec["cpu"], spec["mem"], priority=spec["priority"], extra=spec["extra"])
    if status_node:
        pod = msgspec.structs.replace(pod, status=msgspec.structs.replace(pod.status, nominated_node_name=status_node))
    return PodInfo(pod)


def _expected(nodes: list[NodeInfo], nominator: Nominator, pod: PodInfo) -> list[tuple[int, int, int, int, dict]]:
    """Per node, the summed requests and number of the nominated pods `pod` must yield to there."""
    ge = ge_priority_nominations(nominator, pod)
    out = []
    for ni in nodes:
        cpu = mem = eph = 0
        scalar: Counter[str] = Counter()
        pods = ge.get(ni.name, [])
        for p in pods:
            cpu += p.requests.milli_cpu
            mem += p.requests.memory
            eph += p.requests.ephemeral_storage
            scalar.update(p.requests.scalar)
        out.append((cpu, mem, eph, len(pods), {k: v for k, v in scalar.items() if v}))
    return out


def _as_rows(sums: ExtraSums, n: int) -> list[tuple[int, int, int, int, dict]]:
    assert sums.n == n
    for arr in (sums.cpu, sums.mem, sums.eph, sums.pods, *sums.scalar.values()):
        assert len(arr) == n
    rows = []
    for i in range(n):
        r, count = sums.resource(i)
        assert r.milli_cpu == int(sums.cpu[i]) and count == int(sums.pods[i])
        rows.append((r.milli_cpu, r.memory, r.ephemeral_storage, count, dict(r.scalar)))
    return rows


def _check(nodes: list[NodeInfo], nominator: Nominator, pod: PodInfo) -> None:
    expected = _expected(nodes, nominator, pod)
    got = nominator.sums_at_least(nodes, pod)
    if got is None:
        # None: nothing to yield to on any node of the list.
        assert all(e[3] == 0 for e in expected)
    else:
        assert _as_rows(got, len(nodes)) == expected
    if not nominator.has_nominations():
        assert got is None
    if any(e[3] for e in expected):
        assert got is not None


spec_st = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from([None, "100m", "1"]),
        "mem": st.sampled_from([None, "128Mi", "1Gi"]),
        "priority": st.sampled_from(PRIORITIES),
        "extra": st.sampled_from([None, {GPU: "1"}, {GPU: "2"}, {"ephemeral-storage": "1Gi", GPU: "1"}]),
    }
)

op_st = st.one_of(
    # nominate (or re-nominate elsewhere) in memory, as preemption does
    st.tuples(st.just("nominate"), st.sampled_from(POD_NAMES), spec_st, st.sampled_from(TARGETS)),
    # nominate through the pod's status.nominatedNodeName
    st.tuples(st.just("status"), st.sampled_from(POD_NAMES), spec_st, st.sampled_from(TARGETS)),
    st.tuples(st.just("delete"), st.sampled_from(POD_NAMES)),
    st.tuples(st.just("clear"), st.sampled_from(POD_NAMES)),
    # an update carrying no nomination: one made in memory stays (with the new priority and requests)
    st.tuples(st.just("update"), st.sampled_from(POD_NAMES), spec_st),
    st.tuples(st.just("add_node"), st.sampled_from(["m0", "m1"])),
    st.tuples(st.just("remove_node"), st.sampled_from(["n1", "m0", "m1"])),
)

query_st = st.tuples(st.sampled_from(["incoming", *POD_NAMES]), st.sampled_from(PRIORITIES))


class World:
    def __init__(self) -> None:
        self.cache = Cache()
        self.snap = Snapshot()
        self.nodes: dict[str, Any] = {}
        for name in SNAPSHOT_NODES:
            self.add_node(name)
        self.cache.update_snapshot(self.snap)
        self.nominator = Nominator()
        self.latest: dict[str, PodInfo] = {}

    def add_node(self, name: str) -> None:
        if name not in self.nodes:
            self.nodes[name] = make_node(name)
            self.cache.add_node(self.nodes[name])

    def remove_node(self, name: str) -> None:
        node = self.nodes.pop(name, None)
        if node is not None:
            self.cache.remove_node(node)

    def apply(self, op: tuple[Any, ...]) -> None:
        kind, name, *rest = op
        nom = self.nominator
        if kind == "nominate":
            spec, node = rest
            pi = self.latest[name] = _pod(name, spec)
            nom.add(pi, NominatingInfo(node, MODE_OVERRIDE))
            assert nom.nominated_node(pi.uid) == node
        elif kind == "status":
            spec, node = rest
            pi = self.latest[name] = _pod(name, spec, status_node=node)
            nom.add(pi, None)
            assert nom.nominated_node(pi.uid) == node
        elif kind == "delete":
            if name in self.latest:
                nom.delete(self.latest[name])
                assert nom.nominated_node(self.latest[name].uid) == ""
        elif kind == "clear":
            if name in self.latest:
                nom.add(self.latest[name], CLEAR_NOMINATED_NODE)
                assert nom.nominated_node(self.latest[name].uid) == ""
        elif kind == "update":
            old = self.latest.get(name)
            if old is not None:
                before = nom.nominated_node(old.uid)
                new = self.latest[name] = _pod(name, rest[0])
                nom.update(old, new)
                # Kept unless the old pod's status carried it (then the update took it away).
                kept = before if not old.pod.status.nominated_node_name else ""
                assert nom.nominated_node(new.uid) == kept
        elif kind == "add_node":
            self.add_node(name)
        else:
            self.remove_node(name)
        self.cache.update_snapshot(self.snap)

    def query(self, name: str, priority: int) -> PodInfo:
        spec = {"cpu": "1", "mem": None, "priority": priority, "extra": None}
        return _pod(name, spec)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(op_st, st.lists(query_st, max_size=3)), max_size=25))
def test_sums_at_least_equal_the_nominated_pods_summed_per_node(steps: list[Any]) -> None:
    w = World()
    for op, queries in steps:
        w.apply(op)
        nodes = w.snap.nodes
        for name, priority in queries:
            _check(nodes, w.nominator, w.query(name, priority))
        # The nominated pods themselves, with their own priority: their own nomination is left out.
        for pi in list(w.nominator.pods.values())[:2]:
            _check(nodes, w.nominator, pi)
    for name, priority in [("incoming", p) for p in PRIORITIES]:
        _check(w.snap.nodes, w.nominator, w.query(name, priority))


# ---------------------------------------------------------------- deterministic cases


def _world_with(*nominations: tuple[str, str, str | None, int, dict | None]) -> World:
    w = World()
    for name, node, cpu, priority, extra in nominations:
        w.apply(("nominate", name, {"cpu": cpu, "mem": None, "priority": priority, "extra": extra}, node))
    return w


def test_no_nominations_give_none() -> None:
    w = World()
    assert w.nominator.sums_at_least(w.snap.nodes, w.query("incoming", -100)) is None


def test_only_lower_priority_nominations_give_none() -> None:
    w = _world_with(("a", "n1", "1", 0, None), ("b", "n2", "1", 5, None))
    assert w.nominator.sums_at_least(w.snap.nodes, w.query("incoming", 6)) is None
    got = w.nominator.sums_at_least(w.snap.nodes, w.query("incoming", 5))
    assert got is not None
    assert got.cpu.tolist() == [0, 0, 1000, 0]
    assert got.pods.tolist() == [0, 0, 1, 0]


def test_after_the_last_qualifying_pod_leaves_the_sums_carry_nothing() -> None:
    w = _world_with(("a", "n0", "1", 100, None), ("b", "n1", "1", 0, None))
    q = w.query("incoming", 50)
    got = w.nominator.sums_at_least(w.snap.nodes, q)
    assert got is not None and got.pods.tolist() == [1, 0, 0, 0]
    w.apply(("delete", "a"))
    # The columns still know priority 100 as a level: zeros or None, both mean "nothing to yield to".
    got = w.nominator.sums_at_least(w.snap.nodes, q)
    assert got is None or (not got.pods.any() and not got.cpu.any())
    # Columns built afresh for a new node list know only the nominations left: None.
    w.apply(("add_node", "m0"))
    assert w.nominator.sums_at_least(w.snap.nodes, q) is None
    got = w.nominator.sums_at_least(w.snap.nodes, w.query("incoming", 0))
    assert got is not None and got.pods.tolist() == [1 if ni.name == "n1" else 0 for ni in w.snap.nodes]


def test_nominations_to_nodes_outside_the_list_count_nowhere() -> None:
    w = _world_with(("a", "gone", "1", 100, {GPU: "1"}))
    assert ge_priority_nominations(w.nominator, w.query("incoming", 0)) == {"gone": [w.latest["a"]]}
    assert w.nominator.sums_at_least(w.snap.nodes, w.query("incoming", 0)) is None


def test_own_nomination_is_left_out_even_under_another_priority() -> None:
    w = _world_with(("a", "n0", "1", 100, {GPU: "2"}), ("b", "n0", "100m", 100, None))
    # "a" itself (as stored): only "b" is counted on n0.
    got = w.nominator.sums_at_least(w.snap.nodes, w.latest["a"])
    assert got is not None
    assert got.resource(0)[0].milli_cpu == 100 and got.resource(0)[1] == 1
    assert got.resource(0)[0].scalar == {}
    # A fresh PodInfo of "a" with a lower priority: still not yielding to itself.
    got = w.nominator.sums_at_least(w.snap.nodes, w.query("a", 0))
    assert got is not None
    assert got.pods.tolist() == [1, 0, 0, 0]


def test_renomination_moves_the_sums() -> None:
    w = _world_with(("a", "n0", "1", 0, {GPU: "1"}))
    q = w.query("incoming", 0)
    got = w.nominator.sums_at_least(w.snap.nodes, q)
    assert got is not None and got.scalar[GPU].tolist() == [1, 0, 0, 0]
    w.apply(("nominate", "a", {"cpu": "1", "mem": None, "priority": 0, "extra": {GPU: "1"}}, "n3"))
    got = w.nominator.sums_at_least(w.snap.nodes, q)
    assert got is not None
    assert got.scalar[GPU].tolist() == [0, 0, 0, 1]
    assert got.cpu.tolist() == [0, 0, 0, 1000]


def test_a_new_node_list_gives_fresh_columns() -> None:
    w = _world_with(("a", "n1", "1", 0, None), ("b", "m0", "500m", 0, {GPU: "1"}))
    q = w.query("incoming", 0)
    old_nodes = w.snap.nodes
    got = w.nominator.sums_at_least(old_nodes, q)
    assert got is not None and got.n == 4 and int(got.pods.sum()) == 1
    w.apply(("add_node", "m0"))
    w.apply(("remove_node", "n1"))
    assert w.snap.nodes is not old_nodes
    got = w.nominator.sums_at_least(w.snap.nodes, q)
    assert got is not None
    assert _as_rows(got, len(w.snap.nodes)) == _expected(w.snap.nodes, w.nominator, q)
    assert int(got.pods.sum()) == 1
    assert int(got.scalar[GPU].sum()) == 1
    # Changes after the rebuild keep the new columns in step.
    w.apply(("delete", "b"))
    got = w.nominator.sums_at_least(w.snap.nodes, q)
    assert got is None or _as_rows(got, len(w.snap.nodes)) == _expected(w.snap.nodes, w.nominator, q)


def test_columns_read_directly() -> None:
    nodes = [NodeInfo(make_node(n)) for n in ("x", "y")]
    cols = NominationColumns(nodes)
    a = _pod("a", {"cpu": "1", "mem": "1Gi", "priority": 3, "extra": {GPU: "2"}})
    b = _pod("b", {"cpu": "200m", "mem": None, "priority": 7, "extra": None})
    cols.add("y", a, 1)
    cols.add("y", b, 1)
    cols.add("elsewhere", b, 1)
    assert cols.at_least(8, None) is None
    s = cols.at_least(4, None)
    assert s is not None and s.cpu.tolist() == [0, 200] and s.pods.tolist() == [0, 1] and s.scalar == {}
    s = cols.at_least(3, ("y", a))
    assert s is not None and s.cpu.tolist() == [0, 200] and s.scalar[GPU].tolist() == [0, 0]
    s = cols.at_least(-1, ("x", a))  # own nomination on another node: subtracted there, as given
    assert s is not None and s.cpu.tolist() == [-1000, 1200]
    cols.add("y", a, -1)
    s = cols.at_least(0, None)
    assert s is not None and s.cpu.tolist() == [0, 200] and s.scalar[GPU].tolist() == [0, 0]


# ---------------------------------------------------------------- ExtraSums


sums_rows_st = st.lists(
    st.tuples(
        st.integers(-(2**40), 2**40),
        st.integers(-(2**40), 2**40),
        st.integers(0, 2**40),
        st.integers(-5, 5),
        st.dictionaries(st.sampled_from([GPU, "example.com/fpga"]), st.integers(-3, 3), max_size=2),
    ),
    min_size=1,
    max_size=8,
)


def _of_rows(rows: list[tuple[int, int, int, int, dict[str, int]]]) -> ExtraSums:
    names = {k for r in rows for k in r[4]}
    return ExtraSums.of_arrays(
        np.array([r[0] for r in rows], np.int64),
        np.array([r[1] for r in rows], np.int64),
        np.array([r[2] for r in rows], np.int64),
        np.array([r[3] for r in rows], np.int64),
        {k: np.array([r[4].get(k, 0) for r in rows], np.int64) for k in names},
    )


def _resource_row(e: ExtraSums, k: int) -> tuple[int, int, int, int, dict[str, int]]:
    r, count = e.resource(k)
    assert r.allowed_pod_number == 0
    return (r.milli_cpu, r.memory, r.ephemeral_storage, count, r.scalar)


def _nonzero(row: tuple[int, int, int, int, dict[str, int]]) -> tuple[int, int, int, int, dict[str, int]]:
    return (*row[:4], {k: v for k, v in row[4].items() if v})  # type: ignore[return-value]


@given(sums_rows_st, st.data())
def test_extra_sums_of_arrays_take_and_resource(rows: list[Any], data: st.DataObject) -> None:
    e = _of_rows(rows)
    assert e.n == len(rows)
    assert [_resource_row(e, k) for k in range(len(rows))] == [_nonzero(r) for r in rows]
    idx = np.array(data.draw(st.lists(st.integers(0, len(rows) - 1), max_size=10)), np.int64)
    t = e.take(idx)
    assert t.n == len(idx)
    assert [_resource_row(t, k) for k in range(len(idx))] == [_nonzero(rows[i]) for i in idx.tolist()]
    # take copies: the original is unchanged when the taken arrays are written.
    if len(idx):
        t.cpu[0] += 1
        assert int(e.cpu[idx[0]]) == rows[idx[0]][0]


@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(POD_NAMES), spec_st, st.sampled_from([1, -1]))))
def test_extra_sums_add_then_freeze_match_a_plain_sum(adds: list[Any]) -> None:
    e = ExtraSums(4)
    expected = [[0, 0, 0, 0, Counter()] for _ in range(4)]
    for k, name, spec, sign in adds:
        pi = _pod(name, spec)
        e.add(k, pi, sign)
        row = expected[k]
        row[0] += sign * pi.requests.milli_cpu
        row[1] += sign * pi.requests.memory
        row[2] += sign * pi.requests.ephemeral_storage
        row[3] += sign
        for n, v in pi.requests.scalar.items():
            row[4][n] += sign * v
    want = [(r[0], r[1], r[2], r[3], {n: v for n, v in r[4].items() if v}) for r in expected]
    assert [_resource_row(e, k) for k in range(4)] == want  # the list form, before freezing
    e.freeze()
    assert e.cpu.tolist() == [w[0] for w in want]
    assert e.pods.tolist() == [w[3] for w in want]
    assert [_resource_row(e, k) for k in range(4)] == want
    assert [_resource_row(e.take(np.arange(4)), k) for k in range(4)] == want


def test_with_extra_adds_a_position_to_a_nodes_sums() -> None:
    e = ExtraSums(2)
    e.add_sums(1, Resource(500, 2**20, 0, 0, {GPU: 2}), 3)
    base = Resource(1000, 0, 7, 0, {GPU: 1})
    used, count = with_extra(base, 4, e, 1)
    assert (used.milli_cpu, used.memory, used.ephemeral_storage, used.scalar, count) == (1500, 2**20, 7, {GPU: 3}, 7)
    # The base is not touched.
    assert (base.milli_cpu, base.scalar) == (1000, {GPU: 1})
    used, count = with_extra(base, 4, e.freeze(), 0)
    assert (used.milli_cpu, used.scalar, count) == (1000, {GPU: 1}, 4)
