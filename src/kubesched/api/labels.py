"""Label selectors and node selectors, compiled once and matched many times.

Mirrors k8s.io/apimachinery/pkg/labels (LabelSelectorAsSelector) and
k8s.io/component-helpers/scheduling/corev1/nodeaffinity (node selector terms,
matchFields on metadata.name, Gt/Lt).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubesched.gocompat.field import (
    FieldError,
    GoJSON,
    aggregate_message,
    child,
    index,
    invalid,
    key,
    not_supported,
    to_aggregate,
)
from kubesched.gocompat.names import is_qualified_name, is_valid_label_value
from kubesched.gocompat.strconv import go_quote, parse_int64

if TYPE_CHECKING:
    from kubesched.api.core import NodeSelector, NodeSelectorTerm
    from kubesched.api.meta import LabelSelector


class SelectorError(ValueError):
    """An invalid selector (bad operator or values)."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One requirement: key, operator and values (a frozenset for In/NotIn)."""

    key: str
    op: str
    values: frozenset[str] = frozenset()
    number: int = 0  # for Gt / Lt

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == "In":
            v = labels.get(self.key)
            return v is not None and v in self.values
        if op == "NotIn":
            v = labels.get(self.key)
            return v is None or v not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        v = labels.get(self.key)
        if v is None:
            return False
        try:
            n = parse_int64(v)
        except ValueError:
            return False
        return n > self.number if op == "Gt" else n < self.number


class Selector:
    """A conjunction of requirements. `Selector.nothing()` matches no object."""

    __slots__ = ("_hash", "_nothing", "requirements")

    def __init__(self, requirements: tuple[Requirement, ...] = (), nothing: bool = False) -> None:
        self.requirements = requirements
        self._nothing = nothing
        self._hash: int | None = None

    # Equal selectors (by value) share the snapshot's per-selector pod counts.
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Selector):
            return NotImplemented
        return self._nothing == other._nothing and self.requirements == other.requirements

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash((self.requirements, self._nothing))
        return h

    @classmethod
    def nothing(cls) -> Selector:
        return cls((), True)

    @classmethod
    def everything(cls) -> Selector:
        return cls(())

    @classmethod
    def from_map(cls, labels: Mapping[str, str]) -> Selector:
        """labels.SelectorFromSet: every key must equal its value."""
        return cls(tuple(Requirement(k, "In", frozenset((v,))) for k, v in sorted(labels.items())))

    def is_nothing(self) -> bool:
        return self._nothing

    def is_empty(self) -> bool:
        return not self._nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self._nothing:
            return False
        # A loop, not all() over a generator: this runs per pod and node on hot paths.
        for r in self.requirements:  # noqa: SIM110
            if not r.matches(labels):
                return False
        return True

    def __repr__(self) -> str:
        if self._nothing:
            return "Selector(nothing)"
        return f"Selector({list(self.requirements)})"


def _values_value(values: Sequence[str]) -> GoJSON:
    # A []string value prints through encoding/json; an empty one is nil there.
    return GoJSON(list(values) if values else None)


def requirement_errors(key_: str, op: str, values: Sequence[str], path: str = "") -> list[str]:
    """labels.NewRequirement's checks for a known operator, as its aggregated error messages.

    Besides the operator's own rules, the key must be a qualified name and every
    value a valid label value (so a Gt/Lt value such as "-5" is refused too).
    """
    errs: list[FieldError] = []
    msgs = is_qualified_name(key_)
    if msgs:
        errs.append(invalid(child(path, "key"), key_, "; ".join(msgs)))
    vp = child(path, "values")
    if op in ("In", "NotIn"):
        if not values:
            errs.append(invalid(vp, _values_value(values), "for 'in', 'notin' operators, values set can't be empty"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(invalid(vp, _values_value(values), "values set must be empty for exists and does not exist"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(invalid(vp, _values_value(values), "for 'Gt', 'Lt' operators, exactly one value is required"))
        for i, v in enumerate(values):
            try:
                parse_int64(v)
            except ValueError:
                errs.append(invalid(index(vp, i), v, "for 'Gt', 'Lt' operators, the value must be an integer"))
    for i, v in enumerate(values):
        vmsgs = is_valid_label_value(v)
        if vmsgs:
            errs.append(invalid(key(index(vp, i), key_), v, "; ".join(vmsgs)))
    return to_aggregate(errs)


def _requirement(key_: str, op: str, values: Sequence[str]) -> Requirement:
    """A Requirement from values that passed requirement_errors."""
    if op in ("Gt", "Lt"):
        return Requirement(key_, op, number=parse_int64(values[0]))
    if op in ("Exists", "DoesNotExist"):
        return Requirement(key_, op)
    return Requirement(key_, op, frozenset(values))


def _new_requirement(key_: str, op: str, values: Sequence[str]) -> Requirement:
    errs = requirement_errors(key_, op, values)
    if errs:
        raise SelectorError(aggregate_message(errs))
    return _requirement(key_, op, values)


_LABEL_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")


def label_selector(sel: LabelSelector | None) -> Selector:
    """metav1.LabelSelectorAsSelector: nil selects nothing, empty selects everything.

    The first invalid requirement (matchLabels first, then matchExpressions)
    raises SelectorError with upstream's text.
    """
    if sel is None:
        return Selector.nothing()
    if not sel.match_labels and not sel.match_expressions:
        return Selector.everything()
    # A matchLabels entry is an Equals requirement: one value, so the same checks and matching as In.
    reqs = [_new_requirement(k, "In", (v,)) for k, v in sel.match_labels.items()]
    for e in sel.match_expressions:
        if e.operator not in _LABEL_SELECTOR_OPS:
            raise SelectorError(f"{go_quote(e.operator)} is not a valid label selector operator")
        reqs.append(_new_requirement(e.key, e.operator, e.values))
    return Selector(tuple(sorted(reqs, key=lambda r: r.key)))


# ---------------------------------------------------------------- node selectors

NODE_NAME_FIELD = "metadata.name"


@dataclass(frozen=True, slots=True)
class CompiledTerm:
    """A node selector term: label requirements and field requirements (In/NotIn, one value)."""

    labels: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]

    def matches(self, node_labels: Mapping[str, str], node_name: str) -> bool:
        for r in self.labels:
            if not r.matches(node_labels):
                return False
        # A node's only field is metadata.name (absent when the name is empty, and
        # then the fields are not checked); any other field reads as "".
        if self.fields and node_name:
            for r in self.fields:
                if not field_matches(r, node_name if r.key == NODE_NAME_FIELD else ""):
                    return False
        return True


def field_matches(r: Requirement, value: str) -> bool:
    """fields.OneTermEqualSelector (In) / OneTermNotEqualSelector (NotIn) on one field value."""
    return (value in r.values) == (r.op == "In")


NODE_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_SELECTOR_OPS = ("In", "NotIn")


def parse_term(term: NodeSelectorTerm, path: str = "") -> tuple[CompiledTerm | None, list[str]]:
    """newNodeSelectorTerm: the compiled term, or None with its parse errors.

    An empty term selects nothing but is no error. `path` prefixes the error
    fields as upstream's field.Path does (e.g. "[0]" for a preferred term).
    """
    if not term.match_expressions and not term.match_fields:
        return None, []
    errs: list[str] = []
    labels: list[Requirement] = []
    p = child(path, "matchExpressions")
    for i, r in enumerate(term.match_expressions):
        ip = index(p, i)
        if r.operator not in NODE_SELECTOR_OPS:
            errs.append(str(not_supported(child(ip, "operator"), GoJSON(r.operator), list(NODE_SELECTOR_OPS))))
            continue
        rerrs = requirement_errors(r.key, r.operator, r.values, ip)
        if rerrs:
            errs += rerrs
        else:
            labels.append(_requirement(r.key, r.operator, r.values))
    fields: list[Requirement] = []
    p = child(path, "matchFields")
    for i, r in enumerate(term.match_fields):
        ip = index(p, i)
        if r.operator not in FIELD_SELECTOR_OPS:
            errs.append(str(not_supported(child(ip, "operator"), GoJSON(r.operator), list(FIELD_SELECTOR_OPS))))
        elif len(r.values) != 1:
            errs.append(str(invalid(child(ip, "values"), _values_value(r.values), "must have one element")))
        else:
            fields.append(Requirement(r.key, r.operator, frozenset(r.values)))
    if errs:
        return None, errs
    return CompiledTerm(tuple(labels), tuple(fields)), []


def compile_term(term: NodeSelectorTerm) -> CompiledTerm | None:
    """Compile one term; None when the term can match no node (empty or invalid)."""
    return parse_term(term)[0]


class NodeSelectorMatcher:
    """A NodeSelector: its terms are ORed; no valid term means no node matches."""

    __slots__ = ("terms",)

    def __init__(self, selector: NodeSelector) -> None:
        compiled = (compile_term(t) for t in selector.node_selector_terms)
        self.terms = tuple(t for t in compiled if t is not None)

    def matches(self, node_labels: Mapping[str, str], node_name: str) -> bool:
        return any(t.matches(node_labels, node_name) for t in self.terms)
