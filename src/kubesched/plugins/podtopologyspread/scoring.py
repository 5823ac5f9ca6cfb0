"""PodTopologySpread PreScore / Score / NormalizeScore (podtopologyspread/scoring.go, v1.34).

For each ScheduleAnyway constraint a node scores
    count(node's domain) * log(#domains + 2) + (maxSkew - 1)
summed over constraints in float64 and rounded half away from zero; fewer
matching pods is better, so NormalizeScore reverses: 100 * (max + min - s) / max.
Domains are those of the feasible nodes; counts include the pods of every
node of the cluster in such a domain (subject to the inclusion policies).
Hostname domains are counted on the node itself at Score time. Nodes missing a
topology key are ignored (score 0), except under the system defaults, where a
node without a zone label still spreads by hostname.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from kubesched.framework.interface import MAX_NODE_SCORE
from kubesched.gocompat.gomath import go_log, go_round, go_round_array
from kubesched.plugins.nodeaffinity import RequiredNodeAffinity
from kubesched.plugins.podtopologyspread.constraints import (
    LABEL_HOSTNAME,
    InclusionMasks,
    TopologySpreadConstraint,
    count_pods_match_selector,
    node_labels_match_spread_constraints,
    spread_counts,
)
from kubesched.plugins.topology import domains, has_node_mask

if TYPE_CHECKING:
    from kubesched.framework.snapshot import Snapshot
    from kubesched.framework.types import NodeInfo, PodInfo

INVALID_SCORE = -1


def topology_normalizing_weight(size: int) -> float:
    return go_log(float(size + 2))


def score_for_count(cnt: int, max_skew: int, weight: float) -> float:
    return float(cnt) * weight + float(max_skew - 1)


class PreScoreState:
    """Constraints, ignored nodes, matching pods per domain (non-hostname keys) and each key's weight."""

    __slots__ = ("constraints", "ignored_nodes", "namespace", "topology_value_to_pod_counts", "weights")

    def __init__(
        self,
        constraints: list[TopologySpreadConstraint],
        ignored_nodes: set[str],
        topology_value_to_pod_counts: list[dict[str, int]],
        weights: list[float],
        namespace: str,
    ) -> None:
        self.constraints = constraints
        self.ignored_nodes = ignored_nodes
        self.topology_value_to_pod_counts = topology_value_to_pod_counts
        self.weights = weights
        self.namespace = namespace

    def clone(self) -> PreScoreState:
        return self


def compute_pre_score_state(
    pod: PodInfo,
    constraints: list[TopologySpreadConstraint],
    filtered_nodes: Sequence[NodeInfo],
    all_nodes: Sequence[NodeInfo],
    require_all_topologies: bool,
) -> PreScoreState:
    """initPreScoreState over the feasible nodes, then the pod counts over all nodes."""
    ignored: set[str] = set()
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for ni in filtered_nodes:
        node = ni.node
        labels = node.metadata.labels if node is not None else {}
        if require_all_topologies and not node_labels_match_spread_constraints(labels, constraints):
            ignored.add(ni.name)
            continue
        for i, c in enumerate(constraints):
            if c.topology_key == LABEL_HOSTNAME:
                continue
            counts[i].setdefault(labels.get(c.topology_key, ""), 0)
    weights = []
    for i, c in enumerate(constraints):
        size = len(counts[i])
        if c.topology_key == LABEL_HOSTNAME:
            size = len(filtered_nodes) - len(ignored)
        weights.append(topology_normalizing_weight(size))

    p = pod.pod
    required = RequiredNodeAffinity(p)
    ns = pod.namespace
    for ni in all_nodes:
        node = ni.node
        if node is None:
            continue
        labels = node.metadata.labels
        if require_all_topologies and not node_labels_match_spread_constraints(labels, constraints):
            continue
        matched: dict[int, int] = {}
        for i, c in enumerate(constraints):
            if not c.match_node_inclusion_policies(p, node, required):
                continue
            m = counts[i]
            v = labels.get(c.topology_key, "")
            # Only domains of feasible nodes are tracked (hostname ones are counted at Score).
            if v not in m:
                continue
            key = id(c.selector)
            n = matched.get(key)
            if n is None:
                n = matched[key] = count_pods_match_selector(ni.pods, c.selector, ns)
            m[v] += n
    return PreScoreState(constraints, ignored, counts, weights, ns)


def compute_pre_score_state_all(
    pod: PodInfo,
    constraints: list[TopologySpreadConstraint],
    filtered: np.ndarray,
    snapshot: Snapshot,
    require_all_topologies: bool,
) -> PreScoreState:
    """`compute_pre_score_state` with `filtered` as snapshot indices, counting from the snapshot's pod indexes."""
    nodes = snapshot.nodes
    has_keys = np.ones(snapshot.num_nodes, bool)
    for c in constraints:
        has_keys &= domains(snapshot, c.topology_key).present
    if require_all_topologies:
        kept_mask = has_keys[filtered]
        ignored = {nodes[i].name for i in filtered[~kept_mask].tolist()}
        kept = filtered[kept_mask]
        base = has_keys
    else:
        ignored = set()
        kept = filtered
        base = has_node_mask(snapshot)
    policies = InclusionMasks(pod.pod, snapshot)
    counts: list[dict[str, int]] = []
    weights: list[float] = []
    for c in constraints:
        if c.topology_key == LABEL_HOSTNAME:
            counts.append({})
            weights.append(topology_normalizing_weight(len(filtered) - len(ignored)))
            continue
        d = domains(snapshot, c.topology_key)
        # A node without the key is in the domain "" (Go reads a missing label as "").
        blank = d.index.get("", len(d.values))
        ids = np.where(d.present, d.ids, blank)
        values = [*d.values, ""]
        uniq, first = np.unique(ids[kept], return_index=True)
        tracked = uniq[np.argsort(first, kind="stable")]
        weights.append(topology_normalizing_weight(len(tracked)))
        admitted = policies.of(c)
        members = base if admitted is None else base & admitted
        members = members & np.isin(ids, tracked)
        per_node = spread_counts(snapshot, c.selector, pod.namespace)
        totals = np.bincount(ids[members], weights=per_node[members], minlength=len(values)).astype(np.int64)
        counts.append({values[k]: int(totals[k]) for k in tracked.tolist()})
    return PreScoreState(constraints, ignored, counts, weights, pod.namespace)


# ---------------------------------------------------------------- per node (the reference)


def score_node(state: PreScoreState, ni: NodeInfo) -> int:
    if ni.name in state.ignored_nodes:
        return 0
    node = ni.node
    labels: Mapping[str, str] = node.metadata.labels if node is not None else {}
    score = 0.0
    for i, c in enumerate(state.constraints):
        tv = labels.get(c.topology_key)
        if tv is None:
            continue
        if c.topology_key == LABEL_HOSTNAME:
            cnt = count_pods_match_selector(ni.pods, c.selector, state.namespace)
        else:
            cnt = state.topology_value_to_pod_counts[i].get(tv, 0)
        score += score_for_count(cnt, c.max_skew, state.weights[i])
    return int(go_round(score))


# ---------------------------------------------------------------- the given nodes at once


def score_all(state: PreScoreState, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
    """`score_node` for the snapshot indices `idx`: one gather per constraint, same float64 operations."""
    nodes = snapshot.nodes
    score = np.zeros(len(idx), np.float64)
    for i, c in enumerate(state.constraints):
        d = domains(snapshot, c.topology_key)
        has = d.present[idx]
        if c.topology_key == LABEL_HOSTNAME:
            cnt = np.where(has, spread_counts(snapshot, c.selector, state.namespace)[idx], 0)
        else:
            cnt = d.spread(state.topology_value_to_pod_counts[i])[idx]
        contrib = cnt.astype(np.float64) * state.weights[i] + float(c.max_skew - 1)
        score = np.where(has, score + contrib, score)
    out = go_round_array(score).astype(np.int64)
    if state.ignored_nodes:
        ignored = np.fromiter((nodes[int(j)].name in state.ignored_nodes for j in idx), bool, len(idx))
        out[ignored] = 0
    return out


def normalize(state: PreScoreState, names: Sequence[str], scores: np.ndarray) -> np.ndarray:
    """Reverse min-max scaling with integer arithmetic; ignored nodes get 0."""
    if len(scores) == 0:
        return scores
    if state.ignored_nodes:
        ignored = np.fromiter((n in state.ignored_nodes for n in names), bool, len(names))
    else:
        ignored = np.zeros(len(scores), bool)
    scores = np.where(ignored, INVALID_SCORE, scores)
    valid = ~ignored
    if not valid.any():
        return np.zeros(len(scores), np.int64)
    lo = int(scores[valid].min())
    hi = max(0, int(scores[valid].max()))
    invalid = scores == INVALID_SCORE
    if hi == 0:
        out = np.full(len(scores), MAX_NODE_SCORE, np.int64)
    else:
        out = MAX_NODE_SCORE * (hi + lo - scores) // hi
    out[invalid] = 0
    return out.astype(np.int64)
