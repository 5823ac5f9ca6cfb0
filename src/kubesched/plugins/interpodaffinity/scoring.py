"""InterPodAffinity PreScore / Score / NormalizeScore (interpodaffinity/scoring.go).

PreScore sums, per topology key and value, the weights of every term that
pairs the incoming pod with an existing pod:
  + its preferred affinity / - its preferred anti-affinity terms matched by existing pods;
  + hardPodAffinityWeight for existing pods' required affinity terms it matches;
  + / - existing pods' preferred affinity / anti-affinity terms it matches.
A node's raw score is the sum over keys of its value's entry; NormalizeScore
scales min..max to 0..100 in float64 and truncates, as upstream.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from kubesched.framework.interface import MAX_NODE_SCORE
from kubesched.plugins.interpodaffinity.terms import (
    PREFERRED_ANTI_AFFINITY,
    REQUIRED_AFFINITY,
    AffinityTerm,
    WeightedAffinityTerm,
    matching_pod_counts,
    pod_affinity_terms,
    scoring_terms_index,
)
from kubesched.plugins.topology import domains

if TYPE_CHECKING:
    from kubesched.api.core import Node, Pod
    from kubesched.framework.snapshot import Snapshot
    from kubesched.framework.types import NodeInfo, PodInfo

# topology key -> topology value -> summed weight
ScoreMap = dict[str, dict[str, int]]


def _int32(x: int) -> int:
    """Go int32 arithmetic wraps around."""
    return (x + (1 << 31)) % (1 << 32) - (1 << 31)


def process_term(
    m: ScoreMap,
    term: AffinityTerm,
    weight: int,
    pod: Pod,
    ns_labels: Mapping[str, str] | None,
    node: Node,
    multiplier: int,
) -> None:
    if term.matches(pod, ns_labels):
        tv = node.metadata.labels.get(term.topology_key)
        if tv is not None:
            values = m.setdefault(term.topology_key, {})
            values[tv] = values.get(tv, 0) + _int32(weight * multiplier)


def process_terms(
    m: ScoreMap,
    terms: Sequence[WeightedAffinityTerm],
    pod: Pod,
    ns_labels: Mapping[str, str] | None,
    node: Node,
    multiplier: int,
) -> None:
    for t in terms:
        process_term(m, t.term, t.weight, pod, ns_labels, node, multiplier)


class PreScoreState:
    """The summed weights per topology pair; never changed after PreScore."""

    __slots__ = ("topology_score",)

    def __init__(self, topology_score: ScoreMap) -> None:
        self.topology_score = topology_score

    def clone(self) -> PreScoreState:
        return self


def build_topology_score(
    pod: Pod,
    preferred_affinity: Sequence[WeightedAffinityTerm],
    preferred_anti_affinity: Sequence[WeightedAffinityTerm],
    namespace_labels: Mapping[str, str],
    nodes: Sequence[NodeInfo],
    all_pods: bool,
    hard_pod_affinity_weight: int,
) -> ScoreMap | None:
    """The summed weights, or None when no pair contributed (upstream then skips the plugin).

    `all_pods`: the incoming pod has preferred terms, so every pod counts;
    otherwise only pods with (anti-)affinity can contribute.
    """
    total: ScoreMap = {}
    contributed = False
    for ni in nodes:
        node = ni.node
        if node is None:
            continue
        existing_pods: list[PodInfo] = ni.pods if all_pods else ni.pods_with_affinity
        m: ScoreMap = {}
        for existing in existing_pods:
            _process_existing_pod(
                m,
                existing,
                node,
                pod,
                preferred_affinity,
                preferred_anti_affinity,
                namespace_labels,
                hard_pod_affinity_weight,
            )
        if m:
            contributed = True
            for key, values in m.items():
                acc = total.setdefault(key, {})
                for v, w in values.items():
                    acc[v] = acc.get(v, 0) + w
    return total if contributed else None


def build_topology_score_all(
    pod: Pod,
    preferred_affinity: Sequence[WeightedAffinityTerm],
    preferred_anti_affinity: Sequence[WeightedAffinityTerm],
    namespace_labels: Mapping[str, str],
    snapshot: Snapshot,
    hard_pod_affinity_weight: int,
) -> ScoreMap | None:
    """`build_topology_score` over the snapshot: each distinct term is matched once, weights summed per domain."""
    n = snapshot.num_nodes
    per_key: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def add(term: AffinityTerm, weight: int, per_node: np.ndarray) -> None:
        key = term.topology_key
        hit = (per_node > 0) & domains(snapshot, key).present
        if not hit.any():
            return
        acc = per_key.get(key)
        if acc is None:
            acc = per_key[key] = (np.zeros(n, np.int64), np.zeros(n, bool))
        acc[0][hit] += per_node[hit] * _int32(weight)
        acc[1][hit] = True

    for wt in preferred_affinity:
        add(wt.term, wt.weight, matching_pod_counts(snapshot, (wt.term,)))
    for wt in preferred_anti_affinity:
        add(wt.term, -wt.weight, matching_pod_counts(snapshot, (wt.term,)))
    for (kind, term, weight), per_node in scoring_terms_index(snapshot).items():
        if kind == REQUIRED_AFFINITY:
            if hard_pod_affinity_weight <= 0:
                continue
            weight = hard_pod_affinity_weight
        elif kind == PREFERRED_ANTI_AFFINITY:
            weight = -weight
        if term.matches(pod, namespace_labels):
            add(term, weight, per_node)
    if not per_key:
        return None
    return {key: domains(snapshot, key).sums(hit, acc) for key, (acc, hit) in per_key.items()}


def _process_existing_pod(
    m: ScoreMap,
    existing: PodInfo,
    node: Node,
    pod: Pod,
    preferred_affinity: Sequence[WeightedAffinityTerm],
    preferred_anti_affinity: Sequence[WeightedAffinityTerm],
    namespace_labels: Mapping[str, str],
    hard_pod_affinity_weight: int,
) -> None:
    if not node.metadata.labels:
        return
    ep = existing.pod
    # The incoming pod's terms have their namespace selectors merged into namespaces: no labels needed.
    process_terms(m, preferred_affinity, ep, None, node, 1)
    process_terms(m, preferred_anti_affinity, ep, None, node, -1)
    terms = pod_affinity_terms(existing)
    if hard_pod_affinity_weight > 0:
        for t in terms.required_affinity:
            process_term(m, t, hard_pod_affinity_weight, pod, namespace_labels, node, 1)
    process_terms(m, terms.preferred_affinity, pod, namespace_labels, node, 1)
    process_terms(m, terms.preferred_anti_affinity, pod, namespace_labels, node, -1)


def score_node(state: PreScoreState, labels: Mapping[str, str]) -> int:
    score = 0
    for key, values in state.topology_score.items():
        v = labels.get(key)
        if v is not None:
            score += values.get(v, 0)
    return score


def score_all(state: PreScoreState, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
    total = np.zeros(snapshot.num_nodes, np.int64)
    for key, values in state.topology_score.items():
        total += domains(snapshot, key).spread(values)
    return total[idx]


def normalize(scores: np.ndarray) -> np.ndarray:
    """Min-max scaling to [0, 100] in float64, truncated to int64."""
    if len(scores) == 0:
        return scores
    lo = int(scores.min())
    diff = int(scores.max()) - lo
    if diff <= 0:
        return np.zeros(len(scores), np.int64)
    f = float(MAX_NODE_SCORE) * ((scores - lo).astype(np.float64) / float(diff))
    return np.trunc(f).astype(np.int64)
