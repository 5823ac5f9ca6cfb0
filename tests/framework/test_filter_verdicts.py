"""Grouped Filter failures: FilterVerdicts.grouped (interface.py) against grouping status(i) node by node, and
FilterOutcome.groups (runtime/filter_outcome.py) of a real Framework run against its per-node statuses() — the
groups are what the scheduler hands to NodeToStatus, so they decide the FitError message and preemption's candidates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis, FitError, NodeToStatus
from kubesched.framework.interface import FilterVerdicts, PreFilterPlugin
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.nodeaffinity import NodeAffinity
from kubesched.plugins.nodename import NodeName
from kubesched.plugins.nodeports import NodePorts
from kubesched.plugins.noderesources.fit import Fit
from kubesched.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.plugins.tainttoleration import TaintToleration
from kubesched.queue.nominator import MODE_OVERRIDE, NominatingInfo, Nominator
from kubesched.testing import Env, make_node, make_pod

U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
GPU = "example.com/gpu"


def _by_identity(rows: np.ndarray, status: Callable[[int], Status]) -> dict[int, tuple[set[int], Status]]:
    """The obvious definition: positions of `rows` grouped by the identity of status(row)."""
    out: dict[int, tuple[set[int], Status]] = {}
    for j, r in enumerate(rows.tolist()):
        s = status(r)
        out.setdefault(id(s), (set(), s))[0].add(j)
    return out


def _merged(groups: list[tuple[np.ndarray, Status]], n_rows: int) -> dict[int, tuple[set[int], Status]]:
    """grouped()'s answer as the same mapping; every position must be in exactly one group."""
    out: dict[int, tuple[set[int], Status]] = {}
    seen: list[int] = []
    for js, s in groups:
        assert np.issubdtype(np.asarray(js).dtype, np.integer)
        seen.extend(np.asarray(js).tolist())
        out.setdefault(id(s), (set(), s))[0].update(np.asarray(js).tolist())
    assert sorted(seen) == list(range(n_rows))
    return out


@st.composite
def keyed_st(draw: st.DrawFn) -> tuple[np.ndarray, list[int], dict[int, Status]]:
    n = draw(st.integers(0, 12))
    key_values = draw(st.lists(st.integers(-3, 40), min_size=1, max_size=5, unique=True))
    keys = np.array([draw(st.sampled_from(key_values)) for _ in range(n)], np.int64)
    pool = [Status(U, f"r{i}") for i in range(draw(st.integers(1, 4)))]
    # Several keys may share one Status object: the groups are then merged by identity.
    table = {k: draw(st.sampled_from(pool)) for k in key_values}
    rows = draw(st.lists(st.integers(0, n - 1), max_size=n + 3)) if n else []
    return keys, rows, table


@settings(max_examples=150, deadline=None)
@given(keyed_st(), st.booleans())
def test_keyed_grouped_equals_grouping_status_by_identity(case: Any, lazy: bool) -> None:
    keys, rows_list, table = case
    rows = np.array(rows_list, np.int64)
    calls: list[int] = []

    def compute() -> np.ndarray:
        calls.append(1)
        return keys

    failed = np.ones(len(keys), bool)
    v = FilterVerdicts(failed, keys=compute if lazy else keys, status_of_key=table.__getitem__)
    assert calls == []  # a lazy keys function runs only when a status is asked for
    got = v.grouped(rows)
    if lazy and len(rows):
        assert calls == [1]
    expected = _by_identity(rows, v.status)
    assert _merged(got, len(rows)) == expected
    for i in range(len(keys)):
        assert v.status(i) is table[int(keys[i])]
    if lazy:
        assert len(calls) == 1  # computed once, kept
        assert v.keys is keys


@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, 10).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 3), min_size=n, max_size=n), st.lists(st.integers(0, max(n - 1, 0)), max_size=n)
        )
    )
)
def test_status_of_grouped_equals_grouping_status_by_identity(case: Any) -> None:
    which, rows_list = case
    rows = np.array(rows_list if which else [], np.int64)
    pool = [Status(U, "a"), Status(UU, "b"), Status(U, "a"), Status(U, "c")]  # two equal-text, distinct objects
    v = FilterVerdicts(np.ones(len(which), bool), status_of=lambda i: pool[which[i]])
    assert v.keys is None
    assert _merged(v.grouped(rows), len(rows)) == _by_identity(rows, v.status)


@given(st.lists(st.booleans(), max_size=10), st.data())
def test_uniform_verdicts_put_every_row_in_one_group(failed_list: list[bool], data: st.DataObject) -> None:
    failed = np.array(failed_list, bool)
    s = Status(UU, "node(s) were unschedulable")
    v = FilterVerdicts.uniform(failed, s)
    rows = np.array(data.draw(st.lists(st.integers(0, len(failed) - 1), max_size=10)) if len(failed) else [], np.int64)
    got = v.grouped(rows)
    if len(rows):
        assert len(got) == 1
        assert got[0][1] is s
        assert np.asarray(got[0][0]).tolist() == list(range(len(rows)))
    else:
        assert got == []
    assert all(v.status(i) is s for i in range(len(failed)))


def test_verdicts_need_a_way_to_a_status() -> None:
    with pytest.raises(ValueError, match="needs status_of"):
        FilterVerdicts(np.zeros(2, bool))
    with pytest.raises(ValueError, match="needs status_of"):
        FilterVerdicts(np.zeros(2, bool), keys=np.zeros(2, np.int64))


# ---------------------------------------------------------------- FilterOutcome.groups on a real Framework run


TAINTS = [
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "infra", "effect": "NoSchedule"},
    {"key": "spot", "value": "", "effect": "NoExecute"},
    {"key": "soft", "value": "x", "effect": "PreferNoSchedule"},
]
TOLERATIONS = [
    {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
    {"key": "spot", "operator": "Exists"},
]


@st.composite
def node_st(draw: st.DrawFn, name: str) -> Any:
    gpu = draw(st.sampled_from([None, "1", "4"]))
    return make_node(
        name,
        cpu=draw(st.sampled_from(["500m", "1", "4"])),
        mem=draw(st.sampled_from(["256Mi", "1Gi", "8Gi"])),
        pods=draw(st.sampled_from(["1", "2", "110"])),
        labels={"zone": draw(st.sampled_from(["a", "b", "c"]))},
        taints=draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique_by=lambda t: (t["key"], t["effect"]))),
        unschedulable=draw(st.integers(0, 4)) == 0,
        extra={GPU: gpu} if gpu else None,
    )


@st.composite
def run_st(draw: st.DrawFn) -> tuple[Env, PodInfo, list[tuple[PodInfo, str]], int, int, bool]:
    n = draw(st.integers(1, 10))
    names = [f"n{i}" for i in range(n)]
    nodes = [draw(node_st(name)) for name in names]
    existing = [
        make_pod(
            f"e{i}",
            draw(st.sampled_from(["100m", "500m", "1"])),
            draw(st.sampled_from(["128Mi", "512Mi"])),
            node=draw(st.sampled_from(names)),
            extra={GPU: "1"} if draw(st.booleans()) else None,
            ports=[{"containerPort": 80, "hostPort": 80}] if draw(st.integers(0, 3)) == 0 else None,
        )
        for i in range(draw(st.integers(0, 8)))
    ]
    with_ports = draw(st.booleans())
    spec: dict[str, Any] = {"tolerations": draw(st.lists(st.sampled_from(TOLERATIONS), max_size=2))}
    if draw(st.booleans()):
        spec["nodeSelector"] = {"zone": draw(st.sampled_from(["a", "b"]))}
    gpu = draw(st.sampled_from([None, "1", "2"]))
    priority = draw(st.sampled_from([0, 10]))
    pod = PodInfo(
        make_pod(
            "incoming",
            draw(st.sampled_from(["100m", "1", "2"])),
            draw(st.sampled_from([None, "512Mi", "2Gi"])),
            extra={GPU: gpu} if gpu else None,
            priority=priority,
            spec=spec,
            # a host port makes NodePorts run (it depends on the node's pods, beyond their sums)
            ports=[{"containerPort": 80, "hostPort": 80}] if with_ports else None,
        )
    )
    nominated = [
        (
            PodInfo(make_pod(f"nom{i}", draw(st.sampled_from(["500m", "1"])), priority=draw(st.sampled_from([0, 10])))),
            draw(st.sampled_from(names)),
        )
        for i in range(draw(st.integers(0, 3)))
    ]
    num_to_find = draw(st.integers(1, n))
    start = draw(st.integers(0, n - 1))
    return Env(nodes, existing), pod, nominated, num_to_find, start, with_ports


def _framework(env: Env, with_ports: bool) -> Framework:
    fit = Fit(None)
    plugins: list[Any] = [NodeUnschedulable(), NodeName(), TaintToleration(), NodeAffinity(None)]
    if with_ports:
        plugins.append(NodePorts())
    plugins.append(fit)
    points: dict[str, list[Any]] = {
        "preFilter": [p for p in plugins if isinstance(p, PreFilterPlugin)],
        "filter": plugins,
    }
    fw = Framework("default-scheduler", points, {}, None, env.handle)
    env.handle.framework = fw
    return fw


def _text(s: Status) -> tuple[Code, tuple[str, ...], str]:
    return (s.code, s.reasons, s.plugin)


def _run(env: Env, pod: PodInfo, fw: Framework, order: np.ndarray, num_to_find: int) -> Any:
    state = CycleState()
    _, s, _ = fw.run_pre_filter_plugins(state, pod, env.snapshot.nodes)
    if s is not None and s.code != Code.SUCCESS:
        return None
    return fw.find_feasible(state, pod, env.snapshot, order, num_to_find)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run_st())
def test_outcome_groups_equal_its_statuses_grouped(case: Any) -> None:
    env, pod, nominated, num_to_find, start, with_ports = case
    nominator = Nominator()
    for pi, node in nominated:
        nominator.add(pi, NominatingInfo(node, MODE_OVERRIDE))
    env.handle._nominator = lambda: nominator
    snap = env.snapshot
    n = snap.num_nodes
    order = np.array([(start + k) % n for k in range(n)], np.int64)

    fw = _framework(env, with_ports)
    assert fw.use_vector_paths
    out = _run(env, pod, fw, order, num_to_find)
    if out is None:
        return
    assert out.error is None
    groups = out.groups()
    statuses = out.statuses()
    # Every failed node in exactly one group, and no other node.
    in_groups = [int(i) for idx, _ in groups for i in np.asarray(idx).tolist()]
    assert sorted(in_groups) == sorted(statuses)
    assert not set(in_groups) & set(out.feasible.tolist())
    # Each node's group status reads as its own status (code, reasons, plugin).
    by_text: dict[tuple[Any, ...], set[int]] = {}
    for idx, s in groups:
        assert len(idx)
        for i in np.asarray(idx).tolist():
            assert _text(s) == _text(statuses[int(i)]), snap.nodes[int(i)].name
        by_text.setdefault(_text(s), set()).update(np.asarray(idx).tolist())
    expected: dict[tuple[Any, ...], set[int]] = {}
    for i, s in statuses.items():
        expected.setdefault(_text(s), set()).add(i)
    assert by_text == expected
    assert all(s.plugin for s in statuses.values())

    # The per-node reference run fails the same nodes for the same reasons.
    ref = _framework(env, with_ports)
    ref.use_vector_paths = False
    ref_out = _run(env, pod, ref, order, num_to_find)
    assert ref_out is not None
    assert {i: _text(s) for i, s in ref_out.statuses().items()} == {i: _text(s) for i, s in statuses.items()}

    # Handed to NodeToStatus, the groups give the message the per-node statuses give.
    if len(out.feasible) == 0:
        bulk, single = Diagnosis(), Diagnosis()
        bulk.node_to_status.add_groups(snap, groups)
        single.node_to_status = NodeToStatus({snap.nodes[i].name: s for i, s in ref_out.statuses().items()})
        assert FitError("default/incoming", n, bulk).message() == FitError("default/incoming", n, single).message()


def test_outcome_groups_with_several_failing_plugins() -> None:
    a = {"zone": "a"}
    nodes = [
        make_node("cpu-short", cpu="500m", labels=a),
        make_node("mem-short", mem="128Mi", labels=a),
        make_node("both-short", cpu="500m", mem="128Mi", labels=a),
        make_node("cordoned", unschedulable=True, labels=a),
        make_node("tainted-gpu", taints=[TAINTS[0]], labels=a),
        make_node("tainted-infra", taints=[TAINTS[1]], labels=a),
        make_node("tainted-infra-2", taints=[TAINTS[1], TAINTS[3]], labels=a),
        make_node("zone-b", labels={"zone": "b"}),
        make_node("cpu-short-2", cpu="600m", labels=a),
        make_node("gpu-short", labels=a, extra={GPU: "1"}),
    ]
    env = Env(nodes)
    pod = PodInfo(make_pod("p", "1", "256Mi", extra={GPU: "2"}, spec={"nodeSelector": {"zone": "a"}}))
    fw = _framework(env, False)
    n = env.snapshot.num_nodes
    out = _run(env, pod, fw, np.arange(n, dtype=np.int64), n)
    assert out is not None and out.error is None
    assert len(out.feasible) == 0
    names = env.snapshot.nodes
    got: dict[tuple[str, str], set[str]] = {}
    for idx, s in out.groups():
        got.setdefault((s.plugin, s.message()), set()).update(names[int(i)].name for i in idx)
    expected: dict[tuple[str, str], set[str]] = {}
    for i, s in out.statuses().items():
        expected.setdefault((s.plugin, s.message()), set()).add(names[i].name)
    assert got == expected
    assert got == {
        ("NodeUnschedulable", "node(s) were unschedulable"): {"cordoned"},
        ("TaintToleration", "node(s) had untolerated taint {dedicated: gpu}"): {"tainted-gpu"},
        ("TaintToleration", "node(s) had untolerated taint {dedicated: infra}"): {"tainted-infra", "tainted-infra-2"},
        ("NodeAffinity", "node(s) didn't match Pod's node affinity/selector"): {"zone-b"},
        ("NodeResourcesFit", "Insufficient cpu, Insufficient example.com/gpu"): {"cpu-short", "cpu-short-2"},
        ("NodeResourcesFit", "Insufficient memory, Insufficient example.com/gpu"): {"mem-short"},
        ("NodeResourcesFit", "Insufficient cpu, Insufficient memory, Insufficient example.com/gpu"): {"both-short"},
        ("NodeResourcesFit", "Insufficient example.com/gpu"): {"gpu-short"},
    }
    d = Diagnosis()
    d.node_to_status.add_groups(env.snapshot, out.groups())
    assert FitError("default/p", n, d).message() == (
        "0/10 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) were unschedulable, 2 Insufficient memory, "
        "2 node(s) had untolerated taint {dedicated: infra}, 3 Insufficient cpu, 5 Insufficient example.com/gpu."
    )
