"""NodeToStatus with bulk statuses (diagnosis.py): failures handed over as snapshot index groups sharing one
Status (`add_groups`), mixed with single `set`s, read back exactly as a plain name -> Status dict would be:
lookups, counts, reason histograms, the nodes preemption considers, and the FitError message."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework.diagnosis import Diagnosis, FitError, NodeToStatus, reasons_histogram
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import Code, Status
from kubesched.testing import Env, make_node

U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
CODES = (U, UU, Code.ERROR, Code.PENDING)
REASONS = ["Insufficient cpu", "Insufficient memory", "node(s) had untolerated taint {k: v}", "x", "10 y"]
GHOSTS = ["ghost-a", "ghost-b"]  # names that are not nodes of the snapshot

status_st = st.builds(
    lambda code, reasons: Status(code, *reasons),
    st.sampled_from([U, UU, Code.ERROR]),
    st.lists(st.sampled_from(REASONS), max_size=3),
)
absent_st = st.one_of(st.none(), status_st)


def _env(n: int) -> Env:
    return Env([make_node(f"n{i}", labels={"topology.kubernetes.io/zone": "ab"[i % 2]}) for i in range(n)])


@st.composite
def ops_st(draw: st.DrawFn, n: int) -> list[tuple[Any, ...]]:
    statuses = draw(st.lists(status_st, min_size=1, max_size=4))  # shared between operations: identity matters
    names = [f"n{i}" for i in range(n)] + GHOSTS
    pick = st.sampled_from(statuses)
    group = st.tuples(st.lists(st.integers(0, n - 1), max_size=n, unique=True), pick)
    op = st.one_of(
        st.tuples(st.just("groups"), st.lists(group, max_size=3)),
        st.tuples(st.just("set"), st.sampled_from(names), pick),
    )
    return draw(st.lists(op, max_size=8))


def _apply(nts: NodeToStatus, model: dict[str, Status], snap: Snapshot, op: tuple[Any, ...]) -> None:
    if op[0] == "groups":
        groups = [(np.array(idx, np.int64), s) for idx, s in op[1]]
        nts.add_groups(snap, groups)
        for idx, s in op[1]:
            for i in idx:
                model[snap.nodes[i].name] = s
    else:
        _, name, s = op
        nts.set(name, s)
        model[name] = s


def _reason_counts(model: dict[str, Status], absent: Status, num_all_nodes: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in model.values():
        for r in s.reasons:
            counts[r] = counts.get(r, 0) + 1
    for r in absent.reasons:
        if num_all_nodes > len(model):
            counts[r] = counts.get(r, 0) + num_all_nodes - len(model)
    return counts


def _check(nts: NodeToStatus, model: dict[str, Status], snap: Snapshot, absent: Status) -> None:
    for name in [ni.name for ni in snap.nodes] + GHOSTS + ["never-seen"]:
        assert nts.get(name) is model.get(name, absent), name
    assert len(nts) == len(model)
    items = list(nts.items())
    assert len(items) == len(model)  # no node listed twice
    assert {k: id(v) for k, v in items} == {k: id(v) for k, v in model.items()}
    assert {k: id(v) for k, v in nts.statuses.items()} == {k: id(v) for k, v in model.items()}
    for num_all in {snap.num_nodes, snap.num_nodes + 3, len(model)}:
        expected = _reason_counts(model, absent, num_all)
        assert nts.reason_counts(num_all) == expected
        assert reasons_histogram(nts, num_all) == sorted(f"{v} {k}" for k, v in expected.items())
    for code in CODES:
        got = [ni.name for ni in nts.nodes_for_status_code(snap, code)]
        assert got == [ni.name for ni in snap.nodes if model.get(ni.name, absent).code == code], code


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 7).flatmap(lambda n: st.tuples(st.just(n), ops_st(n), absent_st)))
def test_bulk_and_single_statuses_read_like_a_dict(case: tuple[int, list[Any], Status | None]) -> None:
    n, ops, absent = case
    env = _env(n)
    snap = env.snapshot
    nts = NodeToStatus(absent=absent)
    absent = nts.absent
    assert absent.code == UU if case[2] is None else absent is case[2]
    model: dict[str, Status] = {}
    _check(nts, model, snap, absent)
    for op in ops:
        _apply(nts, model, snap, op)
        _check(nts, model, snap, absent)


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 7).flatmap(lambda n: st.tuples(st.just(n), ops_st(n), absent_st)),
    st.sampled_from(["", "preemption: 0/3 nodes are available: 3 No preemption victims found."]),
)
def test_fit_error_message_from_bulk_equals_one_by_one(case: tuple[int, list[Any], Status | None], post: str) -> None:
    n, ops, absent = case
    env = _env(n)
    bulk, single = Diagnosis(), Diagnosis()
    bulk.node_to_status = NodeToStatus(absent=absent)
    single.node_to_status = NodeToStatus(absent=absent)
    model: dict[str, Status] = {}
    for op in ops:
        _apply(bulk.node_to_status, model, env.snapshot, op)
    for name, s in model.items():
        single.node_to_status.set(name, s)
    for d in (bulk, single):
        d.post_filter_msg = post
    for num_all in (n, n + 2):
        msg = FitError("default/p", num_all, bulk).message()
        assert msg == FitError("default/p", num_all, single).message()
        assert msg.startswith(f"0/{num_all} nodes are available:")


# ---------------------------------------------------------------- deterministic cases


def test_later_groups_override_earlier_ones() -> None:
    env = _env(4)
    a, b, c = Status(U, "a"), Status(UU, "b"), Status(U, "c")
    nts = NodeToStatus()
    nts.add_groups(env.snapshot, [(np.array([0, 1, 2]), a), (np.array([1]), b)])
    nts.add_groups(env.snapshot, [(np.array([2, 3]), c)])
    names = [ni.name for ni in env.snapshot.nodes]
    assert [nts.get(x) for x in names] == [a, b, c, c]
    assert nts.reason_counts(4) == {"a": 1, "b": 1, "c": 2}
    assert len(nts) == 4


def test_set_overrides_bulk_and_bulk_overrides_set() -> None:
    env = _env(3)
    names = [ni.name for ni in env.snapshot.nodes]
    a, b, c = Status(U, "a"), Status(UU, "b"), Status(U, "c")
    nts = NodeToStatus()
    nts.add_groups(env.snapshot, [(np.array([0, 1, 2]), a)])
    nts.set(names[1], b)
    assert [nts.get(x) for x in names] == [a, b, a]
    assert len(nts) == 3
    assert reasons_histogram(nts, 3) == ["1 b", "2 a"]
    assert [ni.name for ni in nts.nodes_for_status_code(env.snapshot, UU)] == [names[1]]
    nts.add_groups(env.snapshot, [(np.array([1]), c)])
    assert [nts.get(x) for x in names] == [a, c, a]
    assert len(nts) == 3
    assert dict(nts.items()) == {names[0]: a, names[1]: c, names[2]: a}


def test_absent_status_counts_unlisted_nodes_and_selects_them() -> None:
    env = _env(5)
    names = [ni.name for ni in env.snapshot.nodes]
    absent = Status(U, "not checked")
    nts = NodeToStatus(absent=absent)
    nts.add_groups(env.snapshot, [(np.array([1, 3]), Status(UU, "gone"))])
    assert reasons_histogram(nts, 5) == ["2 gone", "3 not checked"]
    assert [ni.name for ni in nts.nodes_for_status_code(env.snapshot, U)] == [names[0], names[2], names[4]]
    assert [ni.name for ni in nts.nodes_for_status_code(env.snapshot, UU)] == [names[1], names[3]]
    # a default (UnschedulableAndUnresolvable, no reasons) absent status: no reason, but the code selects
    nts = NodeToStatus()
    nts.add_groups(env.snapshot, [(np.array([0]), Status(U, "u"))])
    assert reasons_histogram(nts, 5) == ["1 u"]
    assert [ni.name for ni in nts.nodes_for_status_code(env.snapshot, UU)] == names[1:]


def test_empty_groups_list_nothing() -> None:
    env = _env(3)
    nts = NodeToStatus()
    nts.add_groups(env.snapshot, [])
    nts.add_groups(env.snapshot, [(np.zeros(0, np.int64), Status(U, "x"))])
    assert len(nts) == 0
    assert list(nts.items()) == []
    assert nts.reason_counts(3) == {}
    d = Diagnosis()
    d.node_to_status = nts
    assert FitError("p", 3, d).message() == "0/3 nodes are available:"


# ---------------------------------------------------------------- a node list change under bulk statuses


def _rebuilt_env() -> tuple[Env, NodeToStatus, dict[str, Status]]:
    """Bulk statuses for n0 and n2 of [n0, n1, n2], then n0 removed: the snapshot becomes [n1, n2]."""
    nodes = [make_node(f"n{i}") for i in range(3)]
    env = Env(nodes)
    a, b = Status(U, "a"), Status(UU, "b")
    nts = NodeToStatus(absent=Status(U, "absent"))
    nts.add_groups(env.snapshot, [(np.array([0]), a), (np.array([2]), b)])
    env.cache.remove_node(nodes[0])
    env.cache.update_snapshot(env.snapshot)
    assert [ni.name for ni in env.snapshot.nodes] == ["n1", "n2"]
    return env, nts, {"n0": a, "n2": b}


def test_bulk_statuses_move_by_name_when_the_next_groups_come_for_a_new_node_list() -> None:
    env, nts, model = _rebuilt_env()
    c = Status(U, "c")
    nts.add_groups(env.snapshot, [(np.array([0]), c)])  # n1 in the new list
    model["n1"] = c
    assert {k: v for k, v in nts.items()} == model
    assert len(nts) == 3
    for name in ("n0", "n1", "n2"):
        assert nts.get(name) is model[name]
    assert [ni.name for ni in nts.nodes_for_status_code(env.snapshot, UU)] == ["n2"]
    assert reasons_histogram(nts, 3) == ["1 a", "1 b", "1 c"]


def test_bulk_statuses_read_by_name_right_after_a_node_list_change() -> None:
    env, nts, model = _rebuilt_env()
    absent = nts.absent
    # items() still names them right...
    assert {k: v for k, v in nts.items()} == model
    # ...and so must every other reader.
    assert [nts.get(n) for n in ("n0", "n1", "n2")] == [model["n0"], absent, model["n2"]]
    assert [ni.name for ni in nts.nodes_for_status_code(env.snapshot, UU)] == ["n2"]
    nts.set("n1", Status(U, "c"))
    assert set(dict(nts.items())) == {"n0", "n1", "n2"}
