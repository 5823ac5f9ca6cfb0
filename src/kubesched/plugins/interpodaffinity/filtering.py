"""InterPodAffinity PreFilter / Filter (interpodaffinity/filtering.go).

PreFilter counts, per topology pair (label key, value):
  - existing pods whose required anti-affinity matches the incoming pod
    (symmetry: those pods repel it from their whole domain);
  - existing pods matching ALL of the incoming pod's required affinity terms;
  - existing pods matching each of its required anti-affinity terms.
Filter then only looks the node's labels up in those counts, so a node's
verdict depends on its labels alone: the whole-snapshot path judges each
domain once and gathers the verdicts onto the nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from kubesched.framework.status import Code, Status
from kubesched.plugins.interpodaffinity.terms import (
    AffinityTerm,
    matching_pod_counts,
    pod_affinity_terms,
    pod_matches_all_terms,
    required_anti_affinity_terms_index,
)
from kubesched.plugins.topology import domains

if TYPE_CHECKING:
    from kubesched.api.core import Node, Pod
    from kubesched.framework.snapshot import Snapshot
    from kubesched.framework.types import NodeInfo, PodInfo

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

# Filter verdicts, in the order Filter checks them.
OK, AFFINITY, ANTI_AFFINITY, EXISTING_ANTI_AFFINITY = 0, 1, 2, 3

# (topology key, topology value) -> count; entries that drop to zero are deleted.
TopologyCounts = dict[tuple[str, str], int]


def _update(counts: TopologyCounts, node: Node, key: str, value: int) -> None:
    tv = node.metadata.labels.get(key)
    if tv is None:
        return
    pair = (key, tv)
    n = counts.get(pair, 0) + value
    if n == 0:
        counts.pop(pair, None)
    else:
        counts[pair] = n


def update_with_affinity_terms(
    counts: TopologyCounts, terms: Sequence[AffinityTerm], pod: Pod, node: Node, value: int
) -> None:
    """Count `pod` in each term's domain if it matches ALL the terms (one pod must satisfy them all)."""
    if pod_matches_all_terms(terms, pod):
        for t in terms:
            _update(counts, node, t.topology_key, value)


def update_with_anti_affinity_terms(
    counts: TopologyCounts,
    terms: Sequence[AffinityTerm],
    pod: Pod,
    ns_labels: Mapping[str, str] | None,
    node: Node,
    value: int,
) -> None:
    """Count `pod` in the domain of each term it matches."""
    for t in terms:
        if t.matches(pod, ns_labels):
            _update(counts, node, t.topology_key, value)


class DomainCounts:
    """Topology counts as per-node arrays, one per topology key, until a `TopologyCounts` dict is needed.

    Built from the snapshot's pod indexes, they let Filter judge every node with
    a few array operations; the dict (for the per-node reference path, AddPod
    and RemovePod) is materialized only when asked for.
    """

    __slots__ = ("_nonzero", "_per_key", "_snapshot", "_totals")

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._per_key: dict[str, np.ndarray] = {}
        self._totals: dict[str, np.ndarray] = {}
        # nonzero_keys(), kept until the next add (PreFilter and Filter ask several times).
        self._nonzero: list[str] | None = None

    def add(self, key: str, per_node: np.ndarray) -> None:
        acc = self._per_key.get(key)
        # A copy: `per_node` may be a snapshot index's own array, which later cycles update in place.
        self._per_key[key] = per_node.copy() if acc is None else acc + per_node
        self._totals.pop(key, None)
        self._nonzero = None

    def node_totals(self, key: str) -> np.ndarray:
        """Per node: the count of its domain of `key` (0 where the node lacks the label)."""
        out = self._totals.get(key)
        if out is None:
            d = domains(self._snapshot, key)
            acc = self._per_key.get(key)
            if acc is None:
                out = np.zeros(len(d.ids), np.int64)
            elif d.singletons:
                # One node per domain (hostname): the node's own count (`acc` itself when every node
                # has the label: it is this object's own array, never written after).
                out = acc if d.num_present == len(d.ids) else np.where(d.present, acc, 0)
            else:
                totals = np.bincount(d.ids[d.present], weights=acc[d.present], minlength=len(d.values) + 1)
                totals[-1] = 0  # the slot read by nodes without the label
                out = totals.astype(np.int64)[d.ids]
            self._totals[key] = out
        return out

    def nonzero_keys(self) -> list[str]:
        """The keys with some node in a domain of non-zero count (read it, do not change it)."""
        keys = self._nonzero
        if keys is None:
            keys = self._nonzero = [k for k in self._per_key if np.count_nonzero(self.node_totals(k))]
        return keys

    def to_dict(self) -> TopologyCounts:
        counts: TopologyCounts = {}
        for key, acc in self._per_key.items():
            d = domains(self._snapshot, key)
            for v, n in d.sums(acc != 0, acc).items():
                if n:
                    counts[(key, v)] = n
        return counts


class PreFilterState:
    """What Filter needs: the incoming pod's merged required terms and the three count maps.

    Each map is a TopologyCounts dict or, from the whole-snapshot PreFilter, a
    DomainCounts turned into a dict on first access to the attribute.
    """

    __slots__ = (
        "_counts",
        "_lazy",
        "namespace_labels",
        "pod",
        "required_affinity",
        "required_anti_affinity",
    )

    def __init__(
        self,
        pod: Pod,
        required_affinity: tuple[AffinityTerm, ...],
        required_anti_affinity: tuple[AffinityTerm, ...],
        namespace_labels: Mapping[str, str],
        existing_anti_affinity_counts: TopologyCounts | DomainCounts,
        affinity_counts: TopologyCounts | DomainCounts,
        anti_affinity_counts: TopologyCounts | DomainCounts,
    ) -> None:
        self.pod = pod
        self.required_affinity = required_affinity
        self.required_anti_affinity = required_anti_affinity
        self.namespace_labels = namespace_labels
        given = (existing_anti_affinity_counts, affinity_counts, anti_affinity_counts)
        self._counts: list[TopologyCounts | None] = [c if isinstance(c, dict) else None for c in given]
        self._lazy: list[DomainCounts | None] = [c if isinstance(c, DomainCounts) else None for c in given]

    def _get(self, i: int) -> TopologyCounts:
        c = self._counts[i]
        if c is None:
            lazy = self._lazy[i]
            c = self._counts[i] = lazy.to_dict() if lazy is not None else {}
        return c

    @property
    def existing_anti_affinity_counts(self) -> TopologyCounts:
        return self._get(0)

    @property
    def affinity_counts(self) -> TopologyCounts:
        return self._get(1)

    @property
    def anti_affinity_counts(self) -> TopologyCounts:
        return self._get(2)

    def domain_counts(self, i: int) -> DomainCounts | None:
        """The arrays behind map i (0 existing anti-affinity, 1 affinity, 2 anti-affinity), while unchanged."""
        return self._lazy[i]

    def clone(self) -> PreFilterState:
        c = PreFilterState.__new__(PreFilterState)
        c.pod = self.pod
        c.required_affinity = self.required_affinity
        c.required_anti_affinity = self.required_anti_affinity
        c.namespace_labels = self.namespace_labels
        c._counts = [dict(m) if m is not None else None for m in self._counts]
        c._lazy = list(self._lazy)
        return c

    def update_with_pod(self, pi: PodInfo, node: Node | None, multiplier: int) -> None:
        """AddPod / RemovePod: account for one more (or one less) pod on `node`."""
        if node is None:
            return
        existing, affinity, anti = (self._get(i) for i in range(3))
        self._lazy = [None, None, None]
        other = pod_affinity_terms(pi)
        update_with_anti_affinity_terms(
            existing, other.required_anti_affinity, self.pod, self.namespace_labels, node, multiplier
        )
        update_with_affinity_terms(affinity, self.required_affinity, pi.pod, node, multiplier)
        update_with_anti_affinity_terms(anti, self.required_anti_affinity, pi.pod, None, node, multiplier)

    def is_empty(self, i: int) -> bool:
        lazy = self._lazy[i]
        if lazy is not None and self._counts[i] is None:
            return not lazy.nonzero_keys()
        return not self._get(i)


def existing_anti_affinity_counts(pod: Pod, ns_labels: Mapping[str, str], nodes: Iterable[NodeInfo]) -> TopologyCounts:
    """Domains of existing pods whose required anti-affinity matches `pod` (nodes with such pods only)."""
    counts: TopologyCounts = {}
    for ni in nodes:
        node = ni.node
        if node is None:
            continue
        for existing in ni.pods_with_required_anti_affinity:
            terms = pod_affinity_terms(existing).required_anti_affinity
            update_with_anti_affinity_terms(counts, terms, pod, ns_labels, node, 1)
    return counts


def incoming_affinity_counts(
    required_affinity: Sequence[AffinityTerm],
    required_anti_affinity: Sequence[AffinityTerm],
    nodes: Iterable[NodeInfo],
) -> tuple[TopologyCounts, TopologyCounts]:
    """Domains of existing pods matching the incoming pod's required affinity / anti-affinity terms."""
    affinity: TopologyCounts = {}
    anti: TopologyCounts = {}
    if not required_affinity and not required_anti_affinity:
        return affinity, anti
    for ni in nodes:
        node = ni.node
        if node is None:
            continue
        for existing in ni.pods:
            p = existing.pod
            if required_affinity:
                update_with_affinity_terms(affinity, required_affinity, p, node, 1)
            if required_anti_affinity:
                update_with_anti_affinity_terms(anti, required_anti_affinity, p, None, node, 1)
    return affinity, anti


# ---------------------------------------------------------------- from the snapshot's pod indexes


def existing_anti_affinity_counts_all(pod: Pod, ns_labels: Mapping[str, str], snapshot: Snapshot) -> DomainCounts:
    """`existing_anti_affinity_counts` over the snapshot: each distinct term of existing pods is matched once."""
    counts = DomainCounts(snapshot)
    for term, per_node in required_anti_affinity_terms_index(snapshot).items():
        if term.matches(pod, ns_labels):
            counts.add(term.topology_key, per_node)
    return counts


def incoming_affinity_counts_all(
    required_affinity: Sequence[AffinityTerm], required_anti_affinity: Sequence[AffinityTerm], snapshot: Snapshot
) -> tuple[DomainCounts, DomainCounts]:
    """`incoming_affinity_counts` over the snapshot, from per-node counts of matching pods."""
    affinity = DomainCounts(snapshot)
    anti = DomainCounts(snapshot)
    if required_affinity:
        per_node = matching_pod_counts(snapshot, tuple(required_affinity))
        for t in required_affinity:
            affinity.add(t.topology_key, per_node)
    for t in required_anti_affinity:
        anti.add(t.topology_key, matching_pod_counts(snapshot, (t,)))
    return affinity, anti


# ---------------------------------------------------------------- per node (the reference)


def satisfy_pod_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    pods_exist = True
    for t in state.required_affinity:
        tv = labels.get(t.topology_key)
        if tv is None:
            # Every topology key of the terms must be on the node.
            return False
        if state.affinity_counts.get((t.topology_key, tv), 0) <= 0:
            pods_exist = False
    if not pods_exist:
        # The first pod of a group with affinity to itself may go anywhere with the keys,
        # provided no pod in the cluster matches its terms yet.
        return not state.affinity_counts and pod_matches_all_terms(state.required_affinity, state.pod)
    return True


def satisfy_pod_anti_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    if state.anti_affinity_counts:
        for t in state.required_anti_affinity:
            tv = labels.get(t.topology_key)
            if tv is not None and state.anti_affinity_counts.get((t.topology_key, tv), 0) > 0:
                return False
    return True


def satisfy_existing_pods_anti_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    counts = state.existing_anti_affinity_counts
    if counts:
        for k, v in labels.items():
            if counts.get((k, v), 0) > 0:
                return False
    return True


def verdict(state: PreFilterState, labels: Mapping[str, str]) -> int:
    if not satisfy_pod_affinity(state, labels):
        return AFFINITY
    if not satisfy_pod_anti_affinity(state, labels):
        return ANTI_AFFINITY
    if not satisfy_existing_pods_anti_affinity(state, labels):
        return EXISTING_ANTI_AFFINITY
    return OK


def verdict_status(v: int) -> Status | None:
    if v == AFFINITY:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_AFFINITY_RULES_NOT_MATCH)
    if v == ANTI_AFFINITY:
        return Status(Code.UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
    if v == EXISTING_ANTI_AFFINITY:
        return Status(Code.UNSCHEDULABLE, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
    return None


# ---------------------------------------------------------------- all nodes at once


def _domain_counts(snapshot: Snapshot, counts: TopologyCounts, key: str) -> np.ndarray:
    """Per node: counts[(key, node's value)], 0 where missing."""
    per_value = {v: n for (k, v), n in counts.items() if k == key}
    return domains(snapshot, key).spread(per_value)


def _node_totals(state: PreFilterState, i: int, snapshot: Snapshot, key: str) -> np.ndarray:
    lazy = state.domain_counts(i)
    if lazy is not None:
        return lazy.node_totals(key)
    return _domain_counts(snapshot, state._get(i), key)


def _positive(totals: Iterable[np.ndarray]) -> np.ndarray | None:
    """Per node: some of `totals` is positive; None for no totals."""
    out: np.ndarray | None = None
    for t in totals:
        if out is None:
            out = t > 0
        else:
            out |= t > 0
    return out


def verdicts(state: PreFilterState, snapshot: Snapshot) -> np.ndarray:
    """`verdict` for every node of the snapshot (int8 array), judged per domain.

    A later check only judges the nodes the earlier ones passed; while none has failed, that is every node.
    """
    n = snapshot.num_nodes
    out = np.zeros(n, np.int8)
    judged = False
    if state.required_affinity:
        has_keys = np.ones(n, bool)
        pods_exist = np.ones(n, bool)
        for t in state.required_affinity:
            has_keys &= domains(snapshot, t.topology_key).present
            pods_exist &= _node_totals(state, 1, snapshot, t.topology_key) > 0
        if state.is_empty(1) and pod_matches_all_terms(state.required_affinity, state.pod):
            ok = has_keys
        else:
            ok = has_keys & pods_exist
        out[~ok] = AFFINITY
        judged = True
    if state.required_anti_affinity and not state.is_empty(2):
        bad = _positive(_node_totals(state, 2, snapshot, t.topology_key) for t in state.required_anti_affinity)
        out[((out == OK) & bad) if judged else bad] = ANTI_AFFINITY
        judged = True
    if not state.is_empty(0):
        # Any label of the node may name a repelling domain: one gather per label key.
        lazy = state.domain_counts(0)
        if lazy is not None:
            bad = _positive(lazy.node_totals(k) for k in lazy.nonzero_keys())
        else:
            closed: dict[str, dict[str, int]] = {}
            for (k, v), c in state.existing_anti_affinity_counts.items():
                if c > 0:
                    closed.setdefault(k, {})[v] = 1
            bad = _positive(domains(snapshot, k).spread(values) for k, values in closed.items())
        if bad is not None:
            out[((out == OK) & bad) if judged else bad] = EXISTING_ANTI_AFFINITY
    return out
