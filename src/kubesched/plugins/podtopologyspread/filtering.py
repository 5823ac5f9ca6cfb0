"""PodTopologySpread PreFilter / Filter (podtopologyspread/filtering.go, v1.34).

PreFilter counts the matching pods of every eligible domain of each
DoNotSchedule constraint (a node is eligible when it has all the constraints'
topology keys and passes the constraint's node inclusion policies) and keeps
the two smallest domains ("critical paths"). Filter admits a node when, for
every constraint,
    count(node's domain) + (1 if the pod matches the selector) - global minimum <= maxSkew,
the global minimum being 0 while fewer than minDomains domains exist.

AddPod/RemovePod adjust one domain and update the critical paths the way
upstream does, which only tracks two domains: after several updates the
minimum can lag behind the true one exactly as it does upstream.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from kubesched.framework.status import Code, Status
from kubesched.plugins.nodeaffinity import RequiredNodeAffinity
from kubesched.plugins.podtopologyspread.constraints import (
    InclusionMasks,
    TopologySpreadConstraint,
    count_pods_match_selector,
    node_labels_match_spread_constraints,
    spread_counts,
)
from kubesched.plugins.topology import domains

if TYPE_CHECKING:
    from kubesched.api.core import Node, Pod
    from kubesched.framework.snapshot import Snapshot
    from kubesched.framework.types import NodeInfo, PodInfo

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

MAX_INT32 = (1 << 31) - 1

# Filter verdicts (`verdicts` reads a comparison's True as SKEW).
OK, SKEW, MISSING_LABEL = 0, 1, 2


class CriticalPaths:
    """The two domains with the fewest matching pods, as upstream's criticalPaths [2]struct."""

    __slots__ = ("num0", "num1", "value0", "value1")

    def __init__(self) -> None:
        self.value0, self.num0 = "", MAX_INT32
        self.value1, self.num1 = "", MAX_INT32

    def clone(self) -> CriticalPaths:
        c = CriticalPaths.__new__(CriticalPaths)
        c.value0, c.num0, c.value1, c.num1 = self.value0, self.num0, self.value1, self.num1
        return c

    def update(self, value: str, num: int) -> None:
        if value == self.value0:
            i = 0
        elif value == self.value1:
            i = 1
        else:
            i = -1
        if i >= 0:
            if i == 0:
                self.num0 = num
            else:
                self.num1 = num
            if self.num0 > self.num1:
                self.value0, self.num0, self.value1, self.num1 = self.value1, self.num1, self.value0, self.num0
        elif num < self.num0:
            self.value1, self.num1 = self.value0, self.num0
            self.value0, self.num0 = value, num
        elif num < self.num1:
            self.value1, self.num1 = value, num

    def __repr__(self) -> str:
        return f"CriticalPaths([{self.value0!r}: {self.num0}, {self.value1!r}: {self.num1}])"


class PreFilterState:
    """Per DoNotSchedule constraint: matching pods per eligible domain, and the critical paths."""

    __slots__ = ("constraints", "critical_paths", "tp_value_to_match_num")

    def __init__(
        self,
        constraints: list[TopologySpreadConstraint],
        critical_paths: list[CriticalPaths],
        tp_value_to_match_num: list[dict[str, int]],
    ) -> None:
        self.constraints = constraints
        self.critical_paths = critical_paths
        self.tp_value_to_match_num = tp_value_to_match_num

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.constraints,
            [p.clone() for p in self.critical_paths],
            [dict(m) for m in self.tp_value_to_match_num],
        )

    def min_match_num(self, i: int) -> int:
        """The global minimum of constraint i; 0 while fewer than minDomains domains are eligible."""
        if len(self.tp_value_to_match_num[i]) < self.constraints[i].min_domains:
            return 0
        return self.critical_paths[i].num0

    def update_with_pod(self, updated: Pod, preemptor: Pod, node: Node | None, delta: int) -> None:
        """AddPod / RemovePod: one more (or less) pod on `node`."""
        if node is None or updated.metadata.namespace != preemptor.metadata.namespace:
            return
        labels = node.metadata.labels
        if not node_labels_match_spread_constraints(labels, self.constraints):
            return
        required = RequiredNodeAffinity(preemptor)
        pod_labels = updated.metadata.labels
        for i, c in enumerate(self.constraints):
            if not c.selector.matches(pod_labels):
                continue
            if not c.match_node_inclusion_policies(preemptor, node, required):
                continue
            v = labels[c.topology_key]
            m = self.tp_value_to_match_num[i]
            m[v] = m.get(v, 0) + delta
            self.critical_paths[i].update(v, m[v])


def compute_pre_filter_state(
    pod: PodInfo, constraints: list[TopologySpreadConstraint], nodes: Sequence[NodeInfo]
) -> PreFilterState:
    """calPreFilterState over `nodes` (every node of the snapshot)."""
    p = pod.pod
    required = RequiredNodeAffinity(p)
    counts: list[dict[str, int]] = [{} for _ in constraints]
    ns = pod.namespace
    for ni in nodes:
        node = ni.node
        if node is None:
            continue
        labels = node.metadata.labels
        if not node_labels_match_spread_constraints(labels, constraints):
            continue
        matched: dict[int, int] = {}
        for i, c in enumerate(constraints):
            if not c.match_node_inclusion_policies(p, node, required):
                continue
            # Constraints often share one selector: count the node's pods once per selector.
            key = id(c.selector)
            n = matched.get(key)
            if n is None:
                n = matched[key] = count_pods_match_selector(ni.pods, c.selector, ns)
            v = labels[c.topology_key]
            counts[i][v] = counts[i].get(v, 0) + n
    return PreFilterState(constraints, [_critical_paths(m) for m in counts], counts)


def compute_pre_filter_state_all(
    pod: PodInfo, constraints: list[TopologySpreadConstraint], snapshot: Snapshot
) -> PreFilterState:
    """`compute_pre_filter_state` over every node of the snapshot, from its per-selector pod counts."""
    has_keys = _with_all_keys(constraints, snapshot)
    policies = InclusionMasks(pod.pod, snapshot)
    counts: list[dict[str, int]] = []
    for c in constraints:
        admitted = policies.of(c)
        members = has_keys if admitted is None else admitted if has_keys is None else has_keys & admitted
        per_node = spread_counts(snapshot, c.selector, pod.namespace)
        counts.append(domains(snapshot, c.topology_key).sums(members, per_node))
    return PreFilterState(constraints, [_critical_paths(m) for m in counts], counts)


def _with_all_keys(constraints: list[TopologySpreadConstraint], snapshot: Snapshot) -> np.ndarray | None:
    """Per node: it has every constraint's topology key; None when every node has them all."""
    has_keys: np.ndarray | None = None
    for c in constraints:
        d = domains(snapshot, c.topology_key)
        if d.num_present < len(d.ids):
            has_keys = d.present if has_keys is None else has_keys & d.present
    return has_keys


def _critical_paths(counts: dict[str, int]) -> CriticalPaths:
    cp = CriticalPaths()
    for v, n in counts.items():
        cp.update(v, n)
    return cp


# ---------------------------------------------------------------- per node (the reference)


def verdict(state: PreFilterState, pod_labels: Mapping[str, str], node_labels: Mapping[str, str]) -> int:
    for i, c in enumerate(state.constraints):
        tv = node_labels.get(c.topology_key)
        if tv is None:
            return MISSING_LABEL
        self_match = 1 if c.selector.matches(pod_labels) else 0
        skew = state.tp_value_to_match_num[i].get(tv, 0) + self_match - state.min_match_num(i)
        if skew > c.max_skew:
            return SKEW
    return OK


def verdict_status(v: int) -> Status | None:
    if v == MISSING_LABEL:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_NODE_LABEL_NOT_MATCH)
    if v == SKEW:
        return Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)
    return None


# ---------------------------------------------------------------- all nodes at once


def verdicts(state: PreFilterState, pod_labels: Mapping[str, str], snapshot: Snapshot) -> np.ndarray | None:
    """`verdict` for every node of the snapshot (int8); None when every node passes.

    A constraint's verdict depends on the node's domain only: it is worked out
    per domain and gathered once, and not at all when every domain passes and
    every node has the key. The first constraint a node fails decides its verdict.
    """
    out: np.ndarray | None = None
    for i, c in enumerate(state.constraints):
        d = domains(snapshot, c.topology_key)
        self_match = 1 if c.selector.matches(pod_labels) else 0
        limit = c.max_skew - self_match + state.min_match_num(i)
        # Per domain, SKEW (1) or OK (0): the comparison's booleans read as int8 (np.where costs twice this).
        codes = (d.table(state.tp_value_to_match_num[i]) > limit).view(np.int8)
        if d.num_present < len(d.ids):
            codes[-1] = MISSING_LABEL  # the last slot: the nodes without the key
        elif not np.count_nonzero(codes):
            continue
        per_node = codes[d.ids]
        out = per_node if out is None else np.where(out != OK, out, per_node)
    return out
