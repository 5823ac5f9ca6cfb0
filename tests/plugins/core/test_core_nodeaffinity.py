"""NodeAffinity (framework/plugins/nodeaffinity): cases from node_affinity_test.go."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.api.decode import decode
from kubesched.config.types import NodeAffinityArgs
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import QueueingHint
from kubesched.framework.interface import NodeScoreList
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.nodeaffinity import NodeAffinity
from kubesched.testing import Env, make_node, make_pod

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
POD_REASON = "node(s) didn't match Pod's node affinity/selector"
ENFORCED_REASON = "node(s) didn't match scheduler-enforced node affinity"


def _expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def _name(op: str, *values: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": op, "values": list(values)}


def _term(exprs: list[dict[str, Any]] | None = None, fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {}
    if exprs is not None:
        t["matchExpressions"] = exprs
    if fields is not None:
        t["matchFields"] = fields
    return t


def _required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def _pod(node_selector: dict[str, str] | None = None, affinity: dict[str, Any] | None = None) -> PodInfo:
    spec: dict[str, Any] = {}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if affinity is not None:
        spec["affinity"] = affinity
    return PodInfo(make_pod("p", spec=spec))


def _check(pod: PodInfo, node_name: str, labels: dict[str, str], want: Status | None, pl: NodeAffinity | None = None):
    pl = pl or NodeAffinity()
    env = Env([make_node(node_name, labels=labels), make_node("zz-other", labels={"unrelated": "x"})])
    state = CycleState()
    res, status = pl.pre_filter(state, pod, env.snapshot.nodes)
    got = pl.filter(state, pod, env.node(node_name))
    assert got == want
    assert pl.filter(CycleState(), pod, env.node(node_name)) == want  # without PreFilter state
    v = pl.filter_all(state, pod, env.snapshot)
    i = env.node(node_name).index
    if want is None:
        assert v is None or not v.failed[i]
    else:
        assert bool(v.failed[i])
        assert v.status(i) == want
    return res, status


CASES = [
    ("no selector", _pod(), {}, None),
    ("missing labels", _pod({"foo": "bar"}), {}, Status(UU, POD_REASON)),
    ("same labels", _pod({"foo": "bar"}), {"foo": "bar"}, None),
    ("node labels are superset", _pod({"foo": "bar"}), {"foo": "bar", "baz": "blah"}, None),
    ("node labels are subset", _pod({"foo": "bar", "baz": "blah"}), {"foo": "bar"}, Status(UU, POD_REASON)),
    ("In matches", _pod(affinity=_required(_term([_expr("foo", "In", "bar", "value2")]))), {"foo": "bar"}, None),
    (
        "Gt matches",
        _pod(affinity=_required(_term([_expr("kernel-version", "Gt", "0204")]))),
        {"kernel-version": "0206"},
        None,
    ),
    (
        "NotIn matches",
        _pod(affinity=_required(_term([_expr("mem-type", "NotIn", "DDR", "DDR2")]))),
        {"mem-type": "DDR3"},
        None,
    ),
    ("Exists matches", _pod(affinity=_required(_term([_expr("GPU", "Exists")]))), {"GPU": "NVIDIA-GRID-K1"}, None),
    (
        "affinity does not match",
        _pod(affinity=_required(_term([_expr("foo", "In", "value1", "value2")]))),
        {"foo": "bar"},
        Status(UU, POD_REASON),
    ),
    ("empty terms match nothing", _pod(affinity=_required()), {"foo": "bar"}, Status(UU, POD_REASON)),
    (
        "empty matchExpressions match nothing",
        _pod(affinity=_required(_term([]))),
        {"foo": "bar"},
        Status(UU, POD_REASON),
    ),
    ("no node affinity", _pod(affinity={"nodeAffinity": None}), {"foo": "bar"}, None),
    (
        "ANDed expressions match",
        _pod(affinity=_required(_term([_expr("GPU", "Exists"), _expr("GPU", "NotIn", "AMD", "INTER")]))),
        {"GPU": "NVIDIA-GRID-K1"},
        None,
    ),
    (
        "ANDed expressions do not match",
        _pod(affinity=_required(_term([_expr("GPU", "Exists"), _expr("GPU", "In", "AMD", "INTER")]))),
        {"GPU": "NVIDIA-GRID-K1"},
        Status(UU, POD_REASON),
    ),
    (
        "ORed terms match",
        _pod(
            affinity=_required(
                _term([_expr("foo", "In", "bar", "value2")]), _term([_expr("diffkey", "In", "wrong", "value2")])
            )
        ),
        {"foo": "bar"},
        None,
    ),
    (
        "nodeSelector and affinity both satisfied",
        _pod({"foo": "bar"}, _required(_term([_expr("foo", "Exists")]))),
        {"foo": "bar"},
        None,
    ),
    (
        "affinity satisfied, nodeSelector not",
        _pod({"foo": "bar"}, _required(_term([_expr("foo", "Exists")]))),
        {"foo": "barrrrrr"},
        Status(UU, POD_REASON),
    ),
]


@pytest.mark.parametrize(("name", "pod", "labels", "want"), CASES, ids=[c[0] for c in CASES])
def test_filter(name: str, pod: PodInfo, labels: dict[str, str], want: Status | None) -> None:
    _check(pod, "node1", labels, want)


def test_invalid_value_in_affinity_term_does_not_schedule() -> None:
    pod = _pod(affinity=_required(_term([_expr("foo", "NotIn", "invalid value: ___@#$%^")])))
    _check(pod, "node1", {"foo": "bar"}, Status(UU, POD_REASON))


@pytest.mark.parametrize(
    ("field", "want"),
    [
        # A node's only field is metadata.name; any other field reads as "" (fields.Set.Get).
        (_term(fields=[{"key": "spec.other", "operator": "In", "values": [""]}]), None),
        (_term(fields=[{"key": "spec.other", "operator": "In", "values": ["x"]}]), Status(UU, POD_REASON)),
        (_term(fields=[{"key": "spec.other", "operator": "NotIn", "values": ["x"]}]), None),
    ],
)
def test_match_fields_on_other_keys(field: dict[str, Any], want: Status | None) -> None:
    _check(_pod(affinity=_required(field)), "node1", {}, want)


@pytest.mark.parametrize(
    ("terms", "node", "want", "pre_nodes"),
    [
        ([_term(fields=[_name("In", "node1")])], "node1", None, {"node1"}),
        ([_term(fields=[_name("In", "node1")])], "node2", Status(UU, POD_REASON), {"node1"}),
        ([_term(fields=[_name("In", "node1")]), _term([_expr("foo", "In", "bar")])], "node2", None, None),
        ([_term([_expr("foo", "In", "bar")], [_name("In", "node1")])], "node2", Status(UU, POD_REASON), {"node1"}),
        ([_term([_expr("foo", "In", "bar")], [_name("In", "node1")])], "node1", None, {"node1"}),
        (
            [_term(fields=[_name("In", "node1")]), _term([_expr("foo", "In", "not-match-to-bar")])],
            "node2",
            Status(UU, POD_REASON),
            None,
        ),
        (
            [_term(fields=[_name("In", "node1")]), _term(fields=[_name("In", "node2")])],
            "node2",
            None,
            {"node1", "node2"},
        ),
        ([_term(fields=[_name("NotIn", "node1")])], "node2", None, None),  # only In names nodes
    ],
)
def test_match_fields_filter_and_pre_filter_result(
    terms: list[dict[str, Any]], node: str, want: Status | None, pre_nodes: set[str] | None
) -> None:
    res, status = _check(_pod(affinity=_required(*terms)), node, {"foo": "bar"}, want)
    assert status is None
    assert (res.node_names if res is not None else None) == pre_nodes


def test_pre_filter_conflicting_match_fields() -> None:
    pod = _pod(affinity=_required(_term(fields=[_name("In", "node1"), _name("In", "node2")])))
    res, status = NodeAffinity().pre_filter(CycleState(), pod, [])
    assert res is None
    assert (status.code, status.message()) == (UU, "pod affinity terms conflict")


def test_pre_filter_skips_pods_without_node_constraints() -> None:
    res, status = NodeAffinity().pre_filter(CycleState(), _pod(), [])
    assert res is None and status.code == Code.SKIP
    res, status = NodeAffinity().pre_filter(CycleState(), _pod({"a": "b"}), [])
    assert res is None and status is None


def _added(required: list[dict[str, Any]] | None = None, preferred: list[dict[str, Any]] | None = None) -> NodeAffinity:
    raw: dict[str, Any] = {}
    if required is not None:
        raw["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": required}
    if preferred is not None:
        raw["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    aff = decode("Pod", {"spec": {"affinity": {"nodeAffinity": raw}}}).spec.affinity.node_affinity
    return NodeAffinity(NodeAffinityArgs(added_affinity=aff))


@pytest.mark.parametrize(
    ("pod", "labels", "want"),
    [
        (_pod(), {"zone": "foo"}, None),
        (_pod(), {"zone": "bar"}, Status(UU, ENFORCED_REASON)),
        (_pod(affinity=_required(_term([_expr("zone", "In", "bar")]))), {"zone": "foo"}, Status(UU, POD_REASON)),
        (_pod(affinity=_required(_term([_expr("zone", "In", "foo")]))), {"zone": "foo"}, None),
        (_pod({"zone": "bar"}), {"zone": "bar"}, Status(UU, ENFORCED_REASON)),  # enforced is checked first
    ],
)
def test_added_affinity(pod: PodInfo, labels: dict[str, str], want: Status | None) -> None:
    pl = _added([_term([_expr("zone", "In", "foo")])])
    if not pod.pod.spec.node_selector and pod.pod.spec.affinity is None:
        _, status = pl.pre_filter(CycleState(), pod, [])
        assert status is None  # added affinity: never skipped
    _check(pod, "node1", labels, want, pl)


# ---------------------------------------------------------------- Score (TestNodeAffinityPriority)


def _preferred(*terms: tuple[int, list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "preference": {"matchExpressions": exprs}} for w, exprs in terms
            ]
        }
    }


AFFINITY1 = _preferred((2, [_expr("foo", "In", "bar")]))
AFFINITY2 = _preferred(
    (2, [_expr("foo", "In", "bar")]),
    (4, [_expr("key", "In", "value")]),
    (5, [_expr("foo", "In", "bar"), _expr("key", "In", "value"), _expr("az", "In", "az1")]),
)
LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}


def _scores(pl: NodeAffinity, pod: PodInfo, nodes: list[dict[str, str]]) -> tuple[Status | None, list[int], list[int]]:
    env = Env([make_node(f"m{i}", labels=lbl) for i, lbl in enumerate(nodes)])
    state = CycleState()
    s = pl.pre_score(state, pod, env.snapshot.nodes)
    if s is not None and s.code == Code.SKIP:
        return s, [], []
    raw = [pl.score(state, pod, env.node(f"m{i}"))[0] for i in range(len(nodes))]
    idx = np.array([env.node(f"m{i}").index for i in range(len(nodes))], np.int64)
    assert pl.score_all(state, pod, env.snapshot, idx).tolist() == raw
    lst = NodeScoreList([f"m{i}" for i in range(len(nodes))], np.array(raw, np.int64))
    pl.normalize_score(state, pod, lst)
    return s, raw, lst.scores.tolist()


@pytest.mark.parametrize(
    ("affinity", "nodes", "raw", "final"),
    [
        (AFFINITY1, [LABEL4, LABEL2, LABEL3], [0, 0, 0], [0, 0, 0]),
        (AFFINITY1, [LABEL1, LABEL2, LABEL3], [2, 0, 0], [100, 0, 0]),
        (AFFINITY2, [LABEL1, LABEL5, LABEL2], [2, 11, 4], [18, 100, 36]),
    ],
)
def test_score(affinity: dict[str, Any], nodes: list[dict[str, str]], raw: list[int], final: list[int]) -> None:
    s, got_raw, got_final = _scores(NodeAffinity(), _pod(affinity=affinity), nodes)
    assert s is None
    assert (got_raw, got_final) == (raw, final)


def test_invalid_preferred_term_is_a_pre_score_error() -> None:
    # NewPreferredSchedulingTerms roots the fields at the term's index; NewRequirement checks the key.
    pod = _pod(affinity=_preferred((1, [_expr("foo", "In", "bar")]), (3, [_expr("invalid key", "In", "x")])))
    env = Env([make_node("m0")])
    status = NodeAffinity().pre_score(CycleState(), pod, env.snapshot.nodes)
    assert status is not None and status.code == Code.ERROR
    assert status.message() == (
        '[1].matchExpressions[0].key: Invalid value: "invalid key": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
        "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    )


def test_score_skipped_without_preferred_terms() -> None:
    s, _, _ = _scores(NodeAffinity(), _pod(), [LABEL1, LABEL2])
    assert s is not None and s.code == Code.SKIP


def test_added_preferred_terms_score_every_pod() -> None:
    pl = _added(preferred=[{"weight": 3, "preference": {"matchExpressions": [_expr("key", "In", "value")]}}])
    s, raw, final = _scores(pl, _pod(affinity=AFFINITY1), [LABEL1, LABEL2, LABEL5])
    assert s is None
    assert (raw, final) == ([2, 3, 5], [40, 60, 100])
    s, raw, final = _scores(pl, _pod(), [LABEL1, LABEL2])
    assert (raw, final) == ([0, 3], [0, 100])


def test_zero_weight_and_empty_preferred_terms_are_dropped() -> None:
    aff = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 0, "preference": {"matchExpressions": [_expr("foo", "In", "bar")]}},
                {"weight": 7, "preference": {}},
                {"weight": 1, "preference": {"matchExpressions": [_expr("key", "Exists")]}},
            ]
        }
    }
    _, raw, _ = _scores(NodeAffinity(), _pod(affinity=aff), [LABEL1, LABEL5])
    assert raw == [0, 1]


def test_node_change_hint() -> None:
    (ev,) = NodeAffinity().events_to_register()
    pod = make_pod("p", spec={"nodeSelector": {"foo": "bar"}})
    good, bad = make_node("n", labels={"foo": "bar"}), make_node("n", labels={"foo": "baz"})
    assert ev.hint(pod, None, good) == QueueingHint.QUEUE
    assert ev.hint(pod, None, bad) == QueueingHint.QUEUE_SKIP
    assert ev.hint(pod, bad, good) == QueueingHint.QUEUE
    assert ev.hint(pod, good, good) == QueueingHint.QUEUE_SKIP
