"""Label selectors and node selectors (apimachinery labels, component-helpers nodeaffinity)."""

from __future__ import annotations

import pytest

from kubesched.api.core import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from kubesched.api.labels import (
    NodeSelectorMatcher,
    Selector,
    SelectorError,
    compile_term,
    label_selector,
)
from kubesched.api.meta import LabelSelector, LabelSelectorRequirement


def _ls(match_labels: dict[str, str] | None = None, *exprs: tuple[str, str, list[str]]) -> LabelSelector:
    return LabelSelector(
        match_labels=match_labels or {},
        match_expressions=[LabelSelectorRequirement(key=k, operator=op, values=v) for k, op, v in exprs],
    )


def _req(key: str, op: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key=key, operator=op, values=list(values))


def _term(exprs: list[NodeSelectorRequirement] | None = None, fields: list[NodeSelectorRequirement] | None = None):
    return NodeSelectorTerm(match_expressions=exprs or [], match_fields=fields or [])


def _matches(terms: list[NodeSelectorTerm], labels: dict[str, str], name: str = "n1") -> bool:
    return NodeSelectorMatcher(NodeSelector(node_selector_terms=terms)).matches(labels, name)


# ---------------------------------------------------------------- label selectors


def test_nil_selector_selects_nothing_and_empty_selects_everything() -> None:
    nothing = label_selector(None)
    assert nothing.is_nothing()
    assert not nothing.matches({})
    assert not nothing.matches({"a": "b"})
    everything = label_selector(LabelSelector())
    assert everything.is_empty()
    assert everything.matches({})
    assert everything.matches({"a": "b"})


@pytest.mark.parametrize(
    ("selector", "labels", "want"),
    [
        (_ls({"app": "web"}), {"app": "web", "x": "y"}, True),
        (_ls({"app": "web"}), {"app": "db"}, False),
        (_ls({"app": "web"}), {}, False),
        (_ls(None, ("tier", "In", ["a", "b"])), {"tier": "b"}, True),
        (_ls(None, ("tier", "In", ["a", "b"])), {"tier": "c"}, False),
        (_ls(None, ("tier", "In", ["a", "b"])), {}, False),
        (_ls(None, ("tier", "NotIn", ["a"])), {"tier": "b"}, True),
        (_ls(None, ("tier", "NotIn", ["a"])), {}, True),  # a missing key is "not in"
        (_ls(None, ("tier", "NotIn", ["a"])), {"tier": "a"}, False),
        (_ls(None, ("tier", "Exists", [])), {"tier": ""}, True),
        (_ls(None, ("tier", "Exists", [])), {}, False),
        (_ls(None, ("tier", "DoesNotExist", [])), {}, True),
        (_ls(None, ("tier", "DoesNotExist", [])), {"tier": "x"}, False),
        # match labels and expressions are ANDed
        (_ls({"app": "web"}, ("tier", "In", ["a"])), {"app": "web", "tier": "a"}, True),
        (_ls({"app": "web"}, ("tier", "In", ["a"])), {"app": "web", "tier": "b"}, False),
    ],
)
def test_label_selector_operators(selector: LabelSelector, labels: dict[str, str], want: bool) -> None:
    assert label_selector(selector).matches(labels) is want


@pytest.mark.parametrize(
    "expr",
    [("k", "In", []), ("k", "NotIn", []), ("k", "Exists", ["v"]), ("k", "DoesNotExist", ["v"]), ("k", "Gt", ["1"])],
)
def test_invalid_label_selector_raises(expr: tuple[str, str, list[str]]) -> None:
    with pytest.raises(SelectorError):
        label_selector(_ls(None, expr))


def test_invalid_operator_message() -> None:
    with pytest.raises(SelectorError) as err:
        label_selector(_ls(None, ("k", "Gt", ["1"])))
    assert str(err.value) == '"Gt" is not a valid label selector operator'


@pytest.mark.parametrize(
    ("selector", "prefix"),
    [
        # labels.NewRequirement checks the key and every value, for matchLabels too.
        (_ls({"app": "not valid!"}), 'values[0][app]: Invalid value: "not valid!": a valid label must be'),
        (_ls(None, ("tier", "In", ["ok", "-bad"])), 'values[1][tier]: Invalid value: "-bad": a valid label must be'),
        (_ls(None, ("bad key", "Exists", [])), 'key: Invalid value: "bad key": name part must consist of'),
    ],
)
def test_label_selector_validates_keys_and_values(selector: LabelSelector, prefix: str) -> None:
    with pytest.raises(SelectorError) as err:
        label_selector(selector)
    assert str(err.value).startswith(prefix)


def test_requirement_errors_are_aggregated() -> None:
    with pytest.raises(SelectorError) as err:
        label_selector(_ls(None, ("k", "In", [])))
    assert str(err.value) == "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"


def test_selector_from_map() -> None:
    sel = Selector.from_map({"a": "1", "b": "2"})
    assert sel.matches({"a": "1", "b": "2", "c": "3"})
    assert not sel.matches({"a": "1"})
    assert Selector.from_map({}).matches({"anything": "x"})
    assert Selector.nothing().is_nothing()
    assert Selector.everything().matches({})


# ---------------------------------------------------------------- node selector terms


@pytest.mark.parametrize(
    ("req", "labels", "want"),
    [
        (_req("zone", "In", "a", "b"), {"zone": "a"}, True),
        (_req("zone", "In", "a", "b"), {"zone": "c"}, False),
        (_req("zone", "NotIn", "a"), {}, True),
        (_req("zone", "NotIn", "a"), {"zone": "a"}, False),
        (_req("gpu", "Exists"), {"gpu": ""}, True),
        (_req("gpu", "DoesNotExist"), {"gpu": ""}, False),
        (_req("cores", "Gt", "4"), {"cores": "8"}, True),
        (_req("cores", "Gt", "4"), {"cores": "4"}, False),
        (_req("cores", "Gt", "4"), {"cores": "-8"}, False),
        # NewRequirement also checks a Gt/Lt value as a label value, which cannot start with '-':
        # a negative bound makes the term invalid, so it matches no node.
        (_req("cores", "Gt", "-5"), {"cores": "-4"}, False),
        (_req("cores", "Gt", "5"), {"cores": "-4"}, False),
        (_req("cores", "Lt", "5"), {"cores": "-4"}, True),  # a negative node label is fine
        (_req("cores", "Lt", "4"), {"cores": "3"}, True),
        (_req("cores", "Lt", "4"), {"cores": "4"}, False),
        (_req("cores", "Lt", "4"), {}, False),  # Gt/Lt need the label
        (_req("cores", "Gt", "4"), {"cores": "many"}, False),  # a non-integer label never matches
        (_req("cores", "Gt", "4"), {"cores": "+8"}, True),  # strconv.ParseInt accepts a sign
    ],
)
def test_node_selector_requirement(req: NodeSelectorRequirement, labels: dict[str, str], want: bool) -> None:
    assert _matches([_term([req])], labels) is want


def test_requirements_of_a_term_are_anded_and_terms_are_ored() -> None:
    both = _term([_req("a", "In", "1"), _req("b", "In", "2")])
    assert _matches([both], {"a": "1", "b": "2"})
    assert not _matches([both], {"a": "1"})
    terms = [_term([_req("a", "In", "1")]), _term([_req("b", "In", "2")])]
    assert _matches(terms, {"b": "2"})
    assert _matches(terms, {"a": "1"})
    assert not _matches(terms, {"a": "2", "b": "1"})


@pytest.mark.parametrize(
    ("field", "name", "want"),
    [
        (_req("metadata.name", "In", "n1"), "n1", True),
        (_req("metadata.name", "In", "n1"), "n2", False),
        (_req("metadata.name", "NotIn", "n1"), "n2", True),
        (_req("metadata.name", "NotIn", "n1"), "n1", False),
    ],
)
def test_match_fields_metadata_name(field: NodeSelectorRequirement, name: str, want: bool) -> None:
    assert _matches([_term(fields=[field])], {}, name) is want


def test_match_fields_and_expressions_in_one_term_are_anded() -> None:
    term = _term([_req("zone", "In", "a")], [_req("metadata.name", "In", "n1")])
    assert _matches([term], {"zone": "a"}, "n1")
    assert not _matches([term], {"zone": "a"}, "n2")
    assert not _matches([term], {"zone": "b"}, "n1")


@pytest.mark.parametrize(
    "bad",
    [
        _term(),  # empty term selects nothing
        _term([_req("a", "In")]),  # In needs values
        _term([_req("a", "Exists", "x")]),  # Exists takes none
        _term([_req("a", "Gt", "1", "2")]),  # exactly one value
        _term([_req("a", "Gt", "x")]),  # an integer
        _term([_req("a", "Lt")]),
        _term([_req("a", "Like", "x")]),  # unknown operator
        _term(fields=[_req("metadata.name", "In", "n1", "n2")]),  # matchFields take exactly one value
        _term(fields=[_req("metadata.name", "Exists")]),  # only In / NotIn on fields
        _term(fields=[_req("metadata.name", "In")]),
    ],
)
def test_invalid_terms_match_nothing(bad: NodeSelectorTerm) -> None:
    assert compile_term(bad) is None
    assert not _matches([bad], {"a": "5"}, "n1")
    assert not _matches([bad], {}, "n1")


def test_an_invalid_term_does_not_hide_a_valid_one() -> None:
    terms = [_term([_req("a", "Gt", "x")]), _term([_req("b", "Exists")])]
    assert _matches(terms, {"b": "1"})
    assert not _matches(terms, {"a": "9"})


def test_no_terms_matches_no_node() -> None:
    assert not _matches([], {"a": "1"})


# Upstream parses Gt/Lt values and label values with strconv.ParseInt(s, 10, 64) and validates label
# values of In/NotIn requirements (labels.NewRequirement); a term with a parse error matches no node.


def test_gt_value_with_underscore_is_invalid() -> None:
    assert not _matches([_term([_req("cores", "Gt", "1_0")])], {"cores": "20"})


def test_gt_node_label_with_underscore_does_not_match() -> None:
    assert not _matches([_term([_req("cores", "Gt", "10")])], {"cores": "2_0"})


def test_lt_value_beyond_int64_is_invalid() -> None:
    assert not _matches([_term([_req("cores", "Lt", "99999999999999999999")])], {"cores": "5"})


def test_notin_with_invalid_label_value_makes_the_term_invalid() -> None:
    assert not _matches([_term([_req("zone", "NotIn", "not valid!")])], {"zone": "a"})
