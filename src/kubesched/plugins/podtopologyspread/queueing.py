"""PodTopologySpread queueing hints (podtopologyspread/plugin.go, v1.34).

Only DoNotSchedule constraints can reject a pod, so only they are consulted:
  - an assigned pod of the same namespace added or deleted whose labels match a constraint;
  - an assigned pod whose label update flips whether it matches a constraint;
  - the rejected pod itself gaining tolerations while a constraint honours taints;
  - a node added or deleted that has every topology key, or updated so that it
    gains/loses a key, changes a key's value, or changes its taints.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubesched.api.core import Node, Pod
from kubesched.framework.events import QueueingHint
from kubesched.plugins.podtopologyspread.constraints import (
    HONOR,
    TopologySpreadConstraint,
    node_labels_match_spread_constraints,
    pod_labels_match_spread_constraints,
)

ConstraintsOf = Callable[[Pod], list[TopologySpreadConstraint]]


def _involved(incoming: Pod, pod: Pod) -> bool:
    """involvedInTopologySpreading: the pod itself, or an assigned pod of its namespace."""
    return incoming.metadata.uid == pod.metadata.uid or (
        bool(incoming.spec.node_name) and incoming.metadata.namespace == pod.metadata.namespace
    )


def after_pod_change(constraints_of: ConstraintsOf, pod: Pod, old: Any, new: Any) -> QueueingHint:
    original: Pod | None = old
    modified: Pod | None = new
    if (modified is not None and not _involved(modified, pod)) or (
        original is not None and not _involved(original, pod)
    ):
        return QueueingHint.QUEUE_SKIP
    try:
        constraints = constraints_of(pod)
    except ValueError:
        return QueueingHint.QUEUE
    if modified is not None and original is not None:
        if (
            pod.metadata.uid == modified.metadata.uid
            and modified.spec.tolerations != original.spec.tolerations
            and any(c.node_taints_policy == HONOR for c in constraints)
        ):
            return QueueingHint.QUEUE
        if modified.metadata.labels == original.metadata.labels:
            return QueueingHint.QUEUE_SKIP
        for c in constraints:
            if c.selector.matches(original.metadata.labels) != c.selector.matches(modified.metadata.labels):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
    changed = modified if modified is not None else original
    if changed is not None and pod_labels_match_spread_constraints(constraints, changed.metadata.labels):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _topology_labels_changed(
    old: Mapping[str, str], new: Mapping[str, str], constraints: Sequence[TopologySpreadConstraint]
) -> bool:
    return any(old.get(c.topology_key, "") != new.get(c.topology_key, "") for c in constraints)


def after_node_change(constraints_of: ConstraintsOf, pod: Pod, old: Any, new: Any) -> QueueingHint:
    original: Node | None = old
    modified: Node | None = new
    try:
        constraints = constraints_of(pod)
    except ValueError:
        return QueueingHint.QUEUE
    original_matching = original is not None and node_labels_match_spread_constraints(
        original.metadata.labels, constraints
    )
    modified_matching = modified is not None and node_labels_match_spread_constraints(
        modified.metadata.labels, constraints
    )
    if original is not None and modified is not None:
        if original_matching != modified_matching:
            return QueueingHint.QUEUE
        if modified_matching and (
            _topology_labels_changed(original.metadata.labels, modified.metadata.labels, constraints)
            or original.spec.taints != modified.spec.taints
        ):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
    if modified is not None:
        return QueueingHint.QUEUE if modified_matching else QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE if original_matching else QueueingHint.QUEUE_SKIP
