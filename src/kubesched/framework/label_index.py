"""Node label masks: selectors evaluated over every node of the snapshot at once.

For each label key the snapshot keeps an inverted index (value -> node indices),
rebuilt only when a Node object changes; a requirement then costs a few array
writes instead of one dictionary lookup per node.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kubesched.api.labels import (
    NODE_NAME_FIELD,
    CompiledTerm,
    NodeSelectorMatcher,
    Requirement,
    Selector,
    field_matches,
)
from kubesched.framework.snapshot import Snapshot
from kubesched.gocompat.strconv import parse_int64


class LabelIndex:
    __slots__ = ("by_value", "present")

    def __init__(self, present: np.ndarray, by_value: dict[str, np.ndarray]) -> None:
        self.present = present
        self.by_value = by_value


def label_index(snapshot: Snapshot, key: str) -> LabelIndex:
    def build() -> LabelIndex:
        n = snapshot.num_nodes
        present = np.zeros(n, bool)
        groups: dict[str, list[int]] = {}
        for i, ni in enumerate(snapshot.nodes):
            labels = ni.node.metadata.labels if ni.node is not None else {}
            v = labels.get(key)
            if v is not None:
                present[i] = True
                groups.setdefault(v, []).append(i)
        return LabelIndex(present, {v: np.array(ix, np.int64) for v, ix in groups.items()})

    return snapshot.node_cache(("label-index", key), build)


def _name_index(snapshot: Snapshot) -> LabelIndex:
    def build() -> LabelIndex:
        n = snapshot.num_nodes
        return LabelIndex(np.ones(n, bool), {ni.name: np.array([i], np.int64) for i, ni in enumerate(snapshot.nodes)})

    return snapshot.node_cache("name-index", build)


def _requirement_mask(index: LabelIndex, r: Requirement) -> np.ndarray:
    n = len(index.present)
    op = r.op
    if op in ("In", "NotIn"):
        m = np.zeros(n, bool)
        for v in r.values:
            ix = index.by_value.get(v)
            if ix is not None:
                m[ix] = True
        return m if op == "In" else ~m
    if op == "Exists":
        return index.present.copy()
    if op == "DoesNotExist":
        return ~index.present
    m = np.zeros(n, bool)
    for v, ix in index.by_value.items():
        try:
            num = parse_int64(v)
        except ValueError:
            continue
        if (num > r.number) if op == "Gt" else (num < r.number):
            m[ix] = True
    return m


def requirement_mask(snapshot: Snapshot, r: Requirement) -> np.ndarray:
    return _requirement_mask(label_index(snapshot, r.key), r)


def term_mask(snapshot: Snapshot, term: CompiledTerm) -> np.ndarray:
    m = np.ones(snapshot.num_nodes, bool)
    for r in term.labels:
        m &= requirement_mask(snapshot, r)
    for r in term.fields:
        if r.key == NODE_NAME_FIELD:
            m &= _requirement_mask(_name_index(snapshot), r)
        elif not field_matches(r, ""):
            # Nodes have no other field: it reads as "" on every node.
            m[:] = False
    return m


def node_selector_mask(snapshot: Snapshot, matcher: NodeSelectorMatcher) -> np.ndarray:
    m = np.zeros(snapshot.num_nodes, bool)
    for t in matcher.terms:
        m |= term_mask(snapshot, t)
    return m


def selector_mask(snapshot: Snapshot, sel: Selector) -> np.ndarray:
    if sel.is_nothing():
        return np.zeros(snapshot.num_nodes, bool)
    m = np.ones(snapshot.num_nodes, bool)
    for r in sel.requirements:
        m &= requirement_mask(snapshot, r)
    return m


def label_map_mask(snapshot: Snapshot, labels: Mapping[str, str]) -> np.ndarray:
    return selector_mask(snapshot, Selector.from_map(labels))
