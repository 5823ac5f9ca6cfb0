"""InterPodAffinity queueing hints (interpodaffinity/plugin.go, v1.34).

Which cluster changes may let a pod this plugin rejected fit now:
  - an assigned pod added that matches all its required affinity terms;
  - an assigned pod whose label update makes it match the affinity terms, or
    stop matching all the anti-affinity terms;
  - an assigned pod deleted that matched all its anti-affinity terms;
  - a node added or relabelled that carries a topology key of its required terms.
As in v1.34.1, deleting an existing pod whose own anti-affinity repelled the
pod is not recognised (kubernetes#134393, fixed later); the pod then waits for
the periodic flush of unschedulable pods.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.core import Node, Pod
from kubesched.framework.events import QueueingHint
from kubesched.plugins.interpodaffinity.terms import (
    get_affinity_terms,
    pod_matches_all_terms,
    required_affinity_terms,
    required_anti_affinity_terms,
)


def after_pod_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    original: Pod | None = old
    modified: Pod | None = new
    if (modified is not None and not modified.spec.node_name) or (original is not None and not original.spec.node_name):
        return QueueingHint.QUEUE_SKIP
    try:
        terms = get_affinity_terms(pod, required_affinity_terms(pod.spec.affinity))
        anti_terms = get_affinity_terms(pod, required_anti_affinity_terms(pod.spec.affinity))
    except ValueError:
        return QueueingHint.QUEUE
    if modified is not None and original is not None:
        if not pod_matches_all_terms(terms, original) and pod_matches_all_terms(terms, modified):
            return QueueingHint.QUEUE
        if pod_matches_all_terms(anti_terms, original) and not pod_matches_all_terms(anti_terms, modified):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
    if modified is not None:
        return QueueingHint.QUEUE if pod_matches_all_terms(terms, modified) else QueueingHint.QUEUE_SKIP
    if original is None or not pod_matches_all_terms(anti_terms, original):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def after_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    modified: Node | None = new
    if modified is None:
        return QueueingHint.QUEUE
    labels = modified.metadata.labels
    try:
        terms = get_affinity_terms(pod, required_affinity_terms(pod.spec.affinity))
    except ValueError:
        return QueueingHint.QUEUE
    if any(t.topology_key in labels for t in terms):
        return QueueingHint.QUEUE
    try:
        anti_terms = get_affinity_terms(pod, required_anti_affinity_terms(pod.spec.affinity))
    except ValueError:
        return QueueingHint.QUEUE
    if any(t.topology_key in labels for t in anti_terms):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
