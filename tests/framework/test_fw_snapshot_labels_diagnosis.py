"""Snapshot label masks (label_index.py) against per-node matching, and FitError messages (diagnosis.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.core import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from kubesched.api.labels import NodeSelectorMatcher, Requirement, Selector, compile_term
from kubesched.framework.diagnosis import Diagnosis, FitError, NodeToStatus, reasons_histogram
from kubesched.framework.label_index import label_map_mask, node_selector_mask, selector_mask, term_mask
from kubesched.framework.status import Code, Status
from kubesched.testing import Env, make_node

KEYS = ["zone", "tier", "cores"]
VALUES = ["a", "b", "1", "5", "10", "-3"]

labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
op_st = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])


@st.composite
def requirement_st(draw: st.DrawFn) -> NodeSelectorRequirement:
    key = draw(st.sampled_from(KEYS))
    op = draw(op_st)
    if op in ("In", "NotIn"):
        values = draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=3))
    elif op in ("Gt", "Lt"):
        values = [draw(st.sampled_from(["0", "2", "5", "-1", "x"]))]  # "x" makes the term invalid
    else:
        values = []
    return NodeSelectorRequirement(key=key, operator=op, values=values)


@st.composite
def term_st(draw: st.DrawFn) -> NodeSelectorTerm:
    exprs = draw(st.lists(requirement_st(), max_size=3))
    fields = []
    if draw(st.booleans()):
        op = draw(st.sampled_from(["In", "NotIn"]))
        fields = [NodeSelectorRequirement(key="metadata.name", operator=op, values=[draw(st.sampled_from(NAMES))])]
    return NodeSelectorTerm(match_expressions=exprs, match_fields=fields)


NAMES = [f"n{i}" for i in range(6)]


def _env(node_labels: list[dict[str, str]]) -> Env:
    return Env([make_node(NAMES[i], labels=lbl) for i, lbl in enumerate(node_labels)])


def _expected(env: Env, pred) -> list[bool]:
    return [bool(pred(ni.node.metadata.labels, ni.name)) for ni in env.snapshot.nodes]


@settings(max_examples=60, deadline=None)
@given(st.lists(labels_st, min_size=1, max_size=6), st.lists(term_st(), max_size=3))
def test_node_selector_mask_equals_per_node_matching(node_labels, terms) -> None:
    env = _env(node_labels)
    matcher = NodeSelectorMatcher(NodeSelector(node_selector_terms=terms))
    got = node_selector_mask(env.snapshot, matcher)
    assert got.dtype == bool
    assert got.tolist() == _expected(env, matcher.matches)
    for t in terms:
        compiled = compile_term(t)
        if compiled is not None:
            assert term_mask(env.snapshot, compiled).tolist() == _expected(env, compiled.matches)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(labels_st, min_size=1, max_size=6),
    st.lists(
        st.tuples(
            st.sampled_from(KEYS),
            st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
            st.frozensets(st.sampled_from(VALUES), min_size=1, max_size=2),
        ),
        max_size=3,
    ),
    labels_st,
)
def test_selector_and_label_map_masks_equal_per_node_matching(node_labels, reqs, label_map) -> None:
    env = _env(node_labels)
    sel = Selector(tuple(Requirement(k, op, vals if op in ("In", "NotIn") else frozenset()) for k, op, vals in reqs))
    assert selector_mask(env.snapshot, sel).tolist() == _expected(env, lambda lbl, _n: sel.matches(lbl))
    from_map = Selector.from_map(label_map)
    assert label_map_mask(env.snapshot, label_map).tolist() == _expected(env, lambda lbl, _n: from_map.matches(lbl))
    assert not selector_mask(env.snapshot, Selector.nothing()).any()


def test_masks_follow_node_label_updates() -> None:
    env = _env([{"zone": "a"}, {"zone": "b"}])
    matcher = NodeSelectorMatcher(
        NodeSelector(
            node_selector_terms=[
                NodeSelectorTerm(match_expressions=[NodeSelectorRequirement(key="zone", operator="In", values=["a"])])
            ]
        )
    )
    assert node_selector_mask(env.snapshot, matcher).tolist() == [True, False]
    ni = env.cache.nodes["n1"]
    env.cache.update_node(ni.node, make_node("n1", labels={"zone": "a"}))
    env.cache.update_snapshot(env.snapshot)
    assert node_selector_mask(env.snapshot, matcher).tolist() == [True, True]
    assert isinstance(node_selector_mask(env.snapshot, matcher), np.ndarray)


# ---------------------------------------------------------------- FitError (types_test.go TestFitError_Error)


def _diag(statuses: dict[str, Status], absent: Status | None = None, pre: str = "", post: str = "") -> Diagnosis:
    d = Diagnosis()
    d.node_to_status = NodeToStatus(statuses, absent)
    d.pre_filter_msg = pre
    d.post_filter_msg = post
    return d


U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


@pytest.mark.parametrize(
    ("n", "diagnosis", "message"),
    [
        (
            3,
            _diag(
                {f"node{i}": Status(U, "Node(s) failed PreFilter plugin FalsePreFilter") for i in (1, 2, 3)},
                pre="Node(s) failed PreFilter plugin FalsePreFilter",
            ),
            "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter.",
        ),
        (
            3,
            _diag(
                {f"node{i}": Status(U, "Node(s) failed PreFilter plugin FalsePreFilter") for i in (1, 2, 3)},
                pre="Node(s) failed PreFilter plugin FalsePreFilter",
                post="Error running PostFilter plugin FailedPostFilter",
            ),
            "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter. "
            "Error running PostFilter plugin FailedPostFilter",
        ),
        (
            3,
            _diag({f"node{i}": Status(U, "Node(s) failed Filter plugin FalseFilter-1") for i in (1, 2, 3)}),
            "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1.",
        ),
        (
            3,
            _diag(
                {f"node{i}": Status(U, "Node(s) failed Filter plugin FalseFilter-1") for i in (1, 2, 3)},
                post="Error running PostFilter plugin FailedPostFilter",
            ),
            "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1. "
            "Error running PostFilter plugin FailedPostFilter",
        ),
        (
            3,
            _diag(
                {
                    "node1": Status(U, "Node(s) failed Filter plugin FalseFilter-1"),
                    "node2": Status(U, "Node(s) failed Filter plugin FalseFilter-1"),
                    "node3": Status(U, "Node(s) failed Filter plugin FalseFilter-2"),
                }
            ),
            "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, "
            "2 Node(s) failed Filter plugin FalseFilter-1.",
        ),
        (
            1,
            _diag({"node1": Status(U, "Node failed Permit plugin Permit-1")}),
            "0/1 nodes are available: 1 Node failed Permit plugin Permit-1.",
        ),
        # absent nodes are counted with the absent status's reasons
        (
            3,
            _diag(
                {"node1": Status(U, "Node(s) failed Filter plugin FalseFilter-1")},
                Status(UU, "Node(s) failed PreFilter plugin FalsePreFilter"),
            ),
            "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-1, "
            "2 Node(s) failed PreFilter plugin FalsePreFilter.",
        ),
        # several reasons of one node each count; histogram entries sort as strings ("10 ..." < "2 ...")
        (
            12,
            _diag(
                {
                    **{f"a{i}": Status(U, "Insufficient memory") for i in range(10)},
                    "b0": Status(U, "Insufficient cpu", "Insufficient memory"),
                    "b1": Status(U, "Insufficient cpu"),
                }
            ),
            "0/12 nodes are available: 11 Insufficient memory, 2 Insufficient cpu.",
        ),
        # an absent status without reasons adds nothing
        (5, _diag({"n": Status(UU, "x")}), "0/5 nodes are available: 1 x."),
        (0, _diag({}), "0/0 nodes are available:"),
        (
            0,
            _diag({}, post="preemption: not eligible due to preemptionPolicy=Never."),
            "0/0 nodes are available: preemption: not eligible due to preemptionPolicy=Never.",
        ),
    ],
)
def test_fit_error_message(n: int, diagnosis: Diagnosis, message: str) -> None:
    err = FitError("default/p", n, diagnosis)
    assert err.message() == message
    assert str(err) == message


def test_reasons_histogram_and_node_to_status() -> None:
    nts = NodeToStatus({"a": Status(U, "r1"), "b": Status(UU, "r2")}, Status(UU, "absent"))
    assert reasons_histogram(nts, 4) == ["1 r1", "1 r2", "2 absent"]
    assert nts.get("zzz").message() == "absent"
    assert len(nts) == 2


def test_nodes_for_status_code_in_snapshot_order() -> None:
    env = Env([make_node(f"n{i}") for i in range(4)])
    nts = NodeToStatus({"n1": Status(U, "u"), "n2": Status(UU, "uu")})
    assert [ni.name for ni in nts.nodes_for_status_code(env.snapshot, U)] == ["n1"]
    # the default absent status is UnschedulableAndUnresolvable: absent nodes have that code
    assert [ni.name for ni in nts.nodes_for_status_code(env.snapshot, UU)] == ["n0", "n2", "n3"]


def test_diagnosis_records_rejecting_and_pending_plugins() -> None:
    d = Diagnosis()
    d.add_plugin_status(Status(U, "x", plugin="A"))
    d.add_plugin_status(Status(Code.PENDING, "x", plugin="B"))
    d.add_plugin_status(Status(Code.ERROR, "x", plugin="C"))
    d.add_plugin_status(Status(U, "x"))
    assert d.unschedulable_plugins == {"A", "B"}
    assert d.pending_plugins == {"B"}
