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
from kubesched.plugins.interpodaffinity.terms import AffinityTerm, pod_affinity_terms, pod_matches_all_terms
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


class PreFilterState:
    """What Filter needs: the incoming pod's merged required terms and the three count maps."""

    __slots__ = (
        "affinity_counts",
        "anti_affinity_counts",
        "existing_anti_affinity_counts",
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
        existing_anti_affinity_counts: TopologyCounts,
        affinity_counts: TopologyCounts,
        anti_affinity_counts: TopologyCounts,
    ) -> None:
        self.pod = pod
        self.required_affinity = required_affinity
        self.required_anti_affinity = required_anti_affinity
        self.namespace_labels = namespace_labels
        self.existing_anti_affinity_counts = existing_anti_affinity_counts
        self.affinity_counts = affinity_counts
        self.anti_affinity_counts = anti_affinity_counts

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.pod,
            self.required_affinity,
            self.required_anti_affinity,
            self.namespace_labels,
            dict(self.existing_anti_affinity_counts),
            dict(self.affinity_counts),
            dict(self.anti_affinity_counts),
        )

    def update_with_pod(self, pi: PodInfo, node: Node | None, multiplier: int) -> None:
        """AddPod / RemovePod: account for one more (or one less) pod on `node`."""
        if node is None:
            return
        other = pod_affinity_terms(pi)
        update_with_anti_affinity_terms(
            self.existing_anti_affinity_counts,
            other.required_anti_affinity,
            self.pod,
            self.namespace_labels,
            node,
            multiplier,
        )
        update_with_affinity_terms(self.affinity_counts, self.required_affinity, pi.pod, node, multiplier)
        update_with_anti_affinity_terms(
            self.anti_affinity_counts, self.required_anti_affinity, pi.pod, None, node, multiplier
        )


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


def verdicts(state: PreFilterState, snapshot: Snapshot) -> np.ndarray:
    """`verdict` for every node of the snapshot (int8 array), judged per domain."""
    n = snapshot.num_nodes
    out = np.zeros(n, np.int8)
    if state.required_affinity:
        has_keys = np.ones(n, bool)
        pods_exist = np.ones(n, bool)
        for t in state.required_affinity:
            has_keys &= domains(snapshot, t.topology_key).present
            pods_exist &= _domain_counts(snapshot, state.affinity_counts, t.topology_key) > 0
        if not state.affinity_counts and pod_matches_all_terms(state.required_affinity, state.pod):
            ok = has_keys
        else:
            ok = has_keys & pods_exist
        out[~ok] = AFFINITY
    if state.anti_affinity_counts and state.required_anti_affinity:
        bad = np.zeros(n, bool)
        for t in state.required_anti_affinity:
            bad |= _domain_counts(snapshot, state.anti_affinity_counts, t.topology_key) > 0
        out[(out == OK) & bad] = ANTI_AFFINITY
    if state.existing_anti_affinity_counts:
        # Any label of the node may name a repelling domain: one gather per label key.
        closed: dict[str, dict[str, int]] = {}
        for (k, v), c in state.existing_anti_affinity_counts.items():
            if c > 0:
                closed.setdefault(k, {})[v] = 1
        bad = np.zeros(n, bool)
        for k, values in closed.items():
            bad |= domains(snapshot, k).spread(values) > 0
        out[(out == OK) & bad] = EXISTING_ANTI_AFFINITY
    return out
