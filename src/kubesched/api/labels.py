"""Label selectors and node selectors, compiled once and matched many times.

Mirrors k8s.io/apimachinery/pkg/labels (LabelSelectorAsSelector) and
k8s.io/component-helpers/scheduling/corev1/nodeaffinity (node selector terms,
matchFields on metadata.name, Gt/Lt).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

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
            n = int(v)
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
        return all(r.matches(labels) for r in self.requirements)

    def __repr__(self) -> str:
        if self._nothing:
            return "Selector(nothing)"
        return f"Selector({list(self.requirements)})"


def _label_requirement(key: str, op: str, values: list[str]) -> Requirement:
    if op in ("In", "NotIn"):
        if not values:
            raise SelectorError("for 'in', 'notin' operators, values set can't be empty")
        return Requirement(key, op, frozenset(values))
    if op in ("Exists", "DoesNotExist"):
        if values:
            raise SelectorError("values set must be empty for exists and does not exist")
        return Requirement(key, op)
    raise SelectorError(f"{op!r} is not a valid label selector operator")


def label_selector(sel: LabelSelector | None) -> Selector:
    """metav1.LabelSelectorAsSelector: nil selects nothing, empty selects everything."""
    if sel is None:
        return Selector.nothing()
    if not sel.match_labels and not sel.match_expressions:
        return Selector.everything()
    reqs = [Requirement(k, "In", frozenset((v,))) for k, v in sel.match_labels.items()]
    for e in sel.match_expressions:
        reqs.append(_label_requirement(e.key, e.operator, list(e.values)))
    return Selector(tuple(sorted(reqs, key=lambda r: r.key)))


# ---------------------------------------------------------------- node selectors

NODE_NAME_FIELD = "metadata.name"


@dataclass(frozen=True, slots=True)
class CompiledTerm:
    """A node selector term: label requirements and metadata.name field requirements."""

    labels: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]

    def matches(self, node_labels: Mapping[str, str], node_name: str) -> bool:
        for r in self.labels:
            if not r.matches(node_labels):
                return False
        if self.fields:
            fields = {NODE_NAME_FIELD: node_name}
            for r in self.fields:
                if not r.matches(fields):
                    return False
        return True


def _node_requirement(key: str, op: str, values: list[str]) -> Requirement:
    if op in ("In", "NotIn"):
        if not values:
            raise SelectorError("values set can't be empty")
        return Requirement(key, op, frozenset(values))
    if op in ("Exists", "DoesNotExist"):
        if values:
            raise SelectorError("values set must be empty for exists and does not exist")
        return Requirement(key, op)
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise SelectorError("for 'Gt', 'Lt' operators, exactly one value is required")
        try:
            n = int(values[0])
        except ValueError as err:
            raise SelectorError(f"for 'Gt', 'Lt' operators, the value must be an integer: {err}") from err
        return Requirement(key, op, number=n)
    raise SelectorError(f"{op!r} is not a valid node selector operator")


def compile_term(term: NodeSelectorTerm) -> CompiledTerm | None:
    """Compile one term; None when the term can match no node (empty or invalid)."""
    if not term.match_expressions and not term.match_fields:
        return None
    try:
        labels = tuple(_node_requirement(r.key, r.operator, list(r.values)) for r in term.match_expressions)
        fields = []
        for r in term.match_fields:
            if r.key != NODE_NAME_FIELD:
                raise SelectorError(f"not a valid field selector key: {r.key}")
            if r.operator not in ("In", "NotIn"):
                raise SelectorError(f"{r.operator!r} is not a valid field selector operator")
            if len(r.values) != 1:
                raise SelectorError("must have one element")
            fields.append(_node_requirement(r.key, r.operator, list(r.values)))
    except SelectorError:
        return None
    return CompiledTerm(labels, tuple(fields))


class NodeSelectorMatcher:
    """A NodeSelector: its terms are ORed; no valid term means no node matches."""

    __slots__ = ("terms",)

    def __init__(self, selector: NodeSelector) -> None:
        compiled = (compile_term(t) for t in selector.node_selector_terms)
        self.terms = tuple(t for t in compiled if t is not None)

    def matches(self, node_labels: Mapping[str, str], node_name: str) -> bool:
        return any(t.matches(node_labels, node_name) for t in self.terms)
