"""Topology spread constraints as the plugin uses them (podtopologyspread/common.go, helper/spread.go).

A pod's constraints of one kind (DoNotSchedule for Filter, ScheduleAnyway for
Score) are compiled with their defaults (minDomains 1, nodeAffinityPolicy
Honor, nodeTaintsPolicy Ignore) and matchLabelKeys merged into the selector.
A pod without constraints of its own gets the cluster defaults (the system
defaults, or the configured list) when a Service, ReplicationController,
ReplicaSet or StatefulSet selects it: their selectors become the constraints'
selector.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from kubesched.api.core import Node, Pod
from kubesched.api.labels import Requirement, Selector, label_selector
from kubesched.api.meta import LabelSelector, LabelSelectorRequirement
from kubesched.framework.types import PodInfo
from kubesched.plugins.nodeaffinity import RequiredNodeAffinity
from kubesched.plugins.tainttoleration import find_untolerated_taint, tolerated_mask

if TYPE_CHECKING:
    from kubesched.framework.snapshot import Snapshot

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"


@dataclass(frozen=True, slots=True)
class SpreadConstraintSpec:
    """A v1.TopologySpreadConstraint as a value (used for the system defaults)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: Any = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] = ()


SYSTEM_DEFAULT_CONSTRAINTS = (
    SpreadConstraintSpec(max_skew=3, topology_key=LABEL_HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY),
    SpreadConstraintSpec(max_skew=5, topology_key=LABEL_TOPOLOGY_ZONE, when_unsatisfiable=SCHEDULE_ANYWAY),
)


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """The internal form: parsed selector, defaulted minDomains and inclusion policies."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str

    def with_selector(self, selector: Selector) -> TopologySpreadConstraint:
        return TopologySpreadConstraint(
            self.max_skew,
            self.topology_key,
            selector,
            self.min_domains,
            self.node_affinity_policy,
            self.node_taints_policy,
        )

    def match_node_inclusion_policies(self, pod: Pod, node: Node, required: RequiredNodeAffinity) -> bool:
        """Whether `node` counts as a domain member under nodeAffinityPolicy / nodeTaintsPolicy."""
        if self.node_affinity_policy == HONOR and not required.matches(node):
            return False
        return not (
            self.node_taints_policy == HONOR
            and find_untolerated_taint(node.spec.taints, pod.spec.tolerations) is not None
        )


def merge_label_set_with_selector(match_labels: Mapping[str, str], s: Selector) -> Selector:
    """mergeLabelSetWithSelector: the pod's matchLabelKeys values ANDed with the selector (nothing stays nothing)."""
    if s.is_nothing():
        return s
    reqs = [Requirement(k, "In", frozenset((v,))) for k, v in match_labels.items()]
    reqs.extend(s.requirements)
    return Selector(tuple(sorted(reqs, key=lambda r: r.key)))


def filter_constraints(
    constraints: Iterable[Any], pod_labels: Mapping[str, str], action: str
) -> list[TopologySpreadConstraint]:
    """filterTopologySpreadConstraints: the constraints whose whenUnsatisfiable is `action`, compiled.

    Raises SelectorError (a ValueError) for an invalid label selector.
    """
    out: list[TopologySpreadConstraint] = []
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = label_selector(c.label_selector)
        if c.match_label_keys:
            match_labels = {k: pod_labels[k] for k in c.match_label_keys if k in pod_labels}
            if match_labels:
                selector = merge_label_set_with_selector(match_labels, selector)
        out.append(
            TopologySpreadConstraint(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=selector,
                min_domains=c.min_domains if c.min_domains is not None else 1,
                node_affinity_policy=c.node_affinity_policy if c.node_affinity_policy is not None else HONOR,
                node_taints_policy=c.node_taints_policy if c.node_taints_policy is not None else IGNORE,
            )
        )
    return out


def node_labels_match_spread_constraints(
    labels: Mapping[str, str], constraints: Sequence[TopologySpreadConstraint]
) -> bool:
    """Whether the node has every constraint's topology key."""
    return all(c.topology_key in labels for c in constraints)


def count_pods_match_selector(pods: Iterable[PodInfo], selector: Selector, namespace: str) -> int:
    """Pods in `namespace`, not terminating, matching `selector`. An empty selector counts nothing (upstream)."""
    if selector.is_empty():
        return 0
    n = 0
    matches = selector.matches
    # PodInfo's namespace and labels are its pod's.
    for pi in pods:
        if pi.namespace == namespace and matches(pi.labels) and pi.pod.metadata.deletion_timestamp is None:
            n += 1
    return n


def spread_counts(snapshot: Snapshot, selector: Selector, namespace: str) -> np.ndarray:
    """Per node of the snapshot, `count_pods_match_selector` of its pods (from the snapshot's index)."""
    if selector.is_empty():
        return np.zeros(snapshot.num_nodes, np.int64)
    return snapshot.pod_counts(
        ("spread", namespace, selector), lambda ni: count_pods_match_selector(ni.pods, selector, namespace)
    )


class InclusionMasks:
    """Per node, whether it passes the pod's node inclusion policies; each mask computed on first use."""

    __slots__ = ("_affinity", "_affinity_done", "_pod", "_snapshot", "_tolerated")

    def __init__(self, pod: Pod, snapshot: Snapshot) -> None:
        self._pod = pod
        self._snapshot = snapshot
        # The required node affinity's mask; None (once done) when the pod has none: every node passes.
        self._affinity: np.ndarray | None = None
        self._affinity_done = False
        self._tolerated: np.ndarray | None = None

    def of(self, c: TopologySpreadConstraint) -> np.ndarray | None:
        """The nodes `c.match_node_inclusion_policies` admits (None: all of them)."""
        m = None
        if c.node_affinity_policy == HONOR:
            if not self._affinity_done:
                required = RequiredNodeAffinity(self._pod)
                if required.label_selector is not None or required.node_selector is not None:
                    self._affinity = required.mask(self._snapshot)
                self._affinity_done = True
            m = self._affinity
        if c.node_taints_policy == HONOR:
            if self._tolerated is None:
                self._tolerated = tolerated_mask(self._snapshot, self._pod.spec.tolerations)
            m = self._tolerated if m is None else m & self._tolerated
        return m


def pod_labels_match_spread_constraints(
    constraints: Sequence[TopologySpreadConstraint], labels: Mapping[str, str]
) -> bool:
    return any(c.selector.matches(labels) for c in constraints)


# ---------------------------------------------------------------- default constraints

_RC = ("v1", "ReplicationController")
_RS = ("apps/v1", "ReplicaSet")
_SS = ("apps/v1", "StatefulSet")


def _requirements_from_map(labels: Mapping[str, str]) -> list[Requirement]:
    return [Requirement(k, "In", frozenset((v,))) for k, v in labels.items()]


_NO_REQUIREMENTS = Selector(())


def default_selector(pod: Pod, lister: Any) -> Selector:
    """helper.DefaultSelector: the union of the selectors of the Services and the controller selecting the pod.

    `lister(kind)` gives the handle's listers ("Service", "ReplicationController",
    "ReplicaSet", "StatefulSet"); a missing kind or object contributes nothing.
    """
    ns = pod.metadata.namespace
    pod_labels = pod.metadata.labels
    refs = pod.metadata.owner_references
    if not pod_labels and not refs:
        return _NO_REQUIREMENTS  # no Service selects a pod without labels (selectors are never empty here)
    label_set: dict[str, str] = {}
    for svc in lister("Service").list():
        if svc.metadata.namespace != ns or not svc.spec.selector:
            continue
        if all(pod_labels.get(k) == v for k, v in svc.spec.selector.items()):
            label_set.update(svc.spec.selector)
    owner = next((o for o in refs if o.controller), None) if refs else None
    if not label_set and owner is None:
        return _NO_REQUIREMENTS
    requirements = _requirements_from_map(label_set)
    if owner is not None:
        gvk = (owner.api_version, owner.kind)
        if gvk == _RC:
            rc = lister("ReplicationController").get(f"{ns}/{owner.name}")
            if rc is not None:
                label_set.update(rc.spec.selector)
                requirements = _requirements_from_map(label_set)
        elif gvk in (_RS, _SS):
            kind = "ReplicaSet" if gvk == _RS else "StatefulSet"
            obj = lister(kind).get(f"{ns}/{owner.name}")
            if obj is not None:
                try:
                    other = label_selector(obj.spec.selector)
                except ValueError:
                    other = None
                if other is not None and not other.is_nothing():
                    requirements = [*requirements, *other.requirements]
    return Selector(tuple(sorted(requirements, key=lambda r: r.key)))


# ---------------------------------------------------------------- API-server side


def apply_match_label_keys(pod: Pod) -> Pod:
    """kube-apiserver's pod creation step (MatchLabelKeysInPodTopologySpreadSelectorMerge, on in 1.34).

    Each constraint's matchLabelKeys present in the pod's labels are appended to
    its labelSelector as `key In (value)`; constraints without a labelSelector
    are left alone. The scheduler merges them again (harmlessly) for pods
    created before the API server did. Returns `pod` itself when nothing changes.
    """
    labels = pod.metadata.labels
    out = []
    changed = False
    for c in pod.spec.topology_spread_constraints:
        extra = [
            LabelSelectorRequirement(key=k, operator="In", values=[labels[k]])
            for k in c.match_label_keys
            if k in labels
        ]
        if c.label_selector is None or not extra:
            out.append(c)
            continue
        sel = LabelSelector(
            match_labels=dict(c.label_selector.match_labels),
            match_expressions=[*c.label_selector.match_expressions, *extra],
        )
        out.append(msgspec.structs.replace(c, label_selector=sel))
        changed = True
    if not changed:
        return pod
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, topology_spread_constraints=out))
