"""Where a pod may run (core validation): affinity, tolerations, topology spread constraints and
scheduling gates.

On create the API server first merges a term's matchLabelKeys (and an affinity term's
mismatchLabelKeys) into its labelSelector, with the values of the pod's own labels; the
"exists in both matchLabelKeys and labelSelector" rule is checked on that merged selector, so it
applies only to keys the pod carries or that the selector names twice. The checks here reproduce
the merge without changing the object.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubesched.api.core import (
    Affinity,
    NodeAffinity,
    PodAffinityTerm,
    PodSchedulingGate,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from kubesched.api.meta import LabelSelector
from kubesched.api.validation.meta import (
    name_is_dns_label,
    validate_label_name,
    validate_label_selector,
    validate_label_value,
)
from kubesched.api.validation.node_selector import validate_node_selector, validate_node_selector_term
from kubesched.gocompat.field import FieldError, duplicate, forbidden, index, invalid, not_supported, required

_WEIGHT_RANGE = "must be in the range 1-100"
_NOT_POSITIVE = "must be greater than zero"
_TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
_INCLUSION_POLICIES = ("Honor", "Ignore")

# ---------------------------------------------------------------- affinity


def _node_affinity(na: NodeAffinity, path: str) -> list[FieldError]:
    """validateNodeAffinity: required terms with valid label values; preferred ones weighted 1-100
    (where label values are not checked: a preferred term may still be met by a single node)."""
    errs: list[FieldError] = []
    req = na.required_during_scheduling_ignored_during_execution
    if req is not None:
        errs += validate_node_selector(req, path + ".requiredDuringSchedulingIgnoredDuringExecution")
    ppath = path + ".preferredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(na.preferred_during_scheduling_ignored_during_execution):
        p = index(ppath, i)
        if not 1 <= term.weight <= 100:
            errs.append(invalid(p + ".weight", term.weight, _WEIGHT_RANGE))
        errs += validate_node_selector_term(term.preference, p + ".preference", allow_invalid_label_values=True)
    return errs


def validate_label_keys(
    path: str,
    match_keys: list[str],
    mismatch_keys: list[str],
    selector: LabelSelector | None,
    pod_labels: Mapping[str, str],
) -> list[FieldError]:
    """validateMatchLabelKeysAndMismatchLabelKeys on the selector as the API server merged it.

    `path` is the term's (or constraint's) path; upstream reports a key found in both places at
    path[i], i being the key's (last) index in matchLabelKeys.
    """
    errs = _key_names(path + ".matchLabelKeys", match_keys, selector)
    errs += _key_names(path + ".mismatchLabelKeys", mismatch_keys, selector)
    if selector is not None and match_keys:
        positions = {k: i for i, k in enumerate(match_keys)}
        seen = set(selector.match_labels)
        merged = [r.key for r in selector.match_expressions]
        merged += [k for k in (*match_keys, *mismatch_keys) if k in pod_labels]
        for k in merged:
            if k in positions and k in seen:
                errs.append(invalid(index(path, positions[k]), k, "exists in both matchLabelKeys and labelSelector"))
            seen.add(k)
    if mismatch_keys:
        mismatched = set(mismatch_keys)
        errs += [
            invalid(index(path + ".matchLabelKeys", i), k, "exists in both matchLabelKeys and mismatchLabelKeys")
            for i, k in enumerate(match_keys)
            if k in mismatched
        ]
    return errs


def _key_names(path: str, keys: list[str], selector: LabelSelector | None) -> list[FieldError]:
    """validateLabelKeys: label names, and only beside a labelSelector."""
    if not keys:
        return []
    if selector is None:
        return [forbidden(path, "must not be specified when labelSelector is not set")]
    errs: list[FieldError] = []
    for i, k in enumerate(keys):
        errs += validate_label_name(k, index(path, i))
    return errs


def _pod_affinity_term(term: PodAffinityTerm, path: str, pod_labels: Mapping[str, str]) -> list[FieldError]:
    """validatePodAffinityTerm: selectors, namespaces, label keys, then a non-empty valid topologyKey."""
    errs = validate_label_selector(term.label_selector, path + ".labelSelector")
    errs += validate_label_selector(term.namespace_selector, path + ".namespaceSelector")
    for ns in term.namespaces:
        errs += [invalid(path + ".namespace", ns, m) for m in name_is_dns_label(ns, False)]
    if term.match_label_keys or term.mismatch_label_keys:
        errs += validate_label_keys(
            path, term.match_label_keys, term.mismatch_label_keys, term.label_selector, pod_labels
        )
    if not term.topology_key:
        errs.append(required(path + ".topologyKey", "can not be empty"))
    return errs + validate_label_name(term.topology_key, path + ".topologyKey")


def _pod_affinity_terms(
    required_terms: list[PodAffinityTerm],
    preferred: list[WeightedPodAffinityTerm],
    path: str,
    pod_labels: Mapping[str, str],
) -> list[FieldError]:
    errs: list[FieldError] = []
    rpath = path + ".requiredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(required_terms):
        errs += _pod_affinity_term(term, index(rpath, i), pod_labels)
    ppath = path + ".preferredDuringSchedulingIgnoredDuringExecution"
    for i, wterm in enumerate(preferred):
        p = index(ppath, i)
        if not 1 <= wterm.weight <= 100:
            errs.append(invalid(p + ".weight", wterm.weight, _WEIGHT_RANGE))
        errs += _pod_affinity_term(wterm.pod_affinity_term, p + ".podAffinityTerm", pod_labels)
    return errs


def validate_affinity(affinity: Affinity | None, path: str, pod_labels: Mapping[str, str]) -> list[FieldError]:
    """validateAffinity: node affinity, then pod affinity, then pod anti-affinity."""
    if affinity is None:
        return []
    errs: list[FieldError] = []
    if affinity.node_affinity is not None:
        errs += _node_affinity(affinity.node_affinity, path + ".nodeAffinity")
    for aff, name in ((affinity.pod_affinity, "podAffinity"), (affinity.pod_anti_affinity, "podAntiAffinity")):
        if aff is not None:
            errs += _pod_affinity_terms(
                aff.required_during_scheduling_ignored_during_execution,
                aff.preferred_during_scheduling_ignored_during_execution,
                f"{path}.{name}",
                pod_labels,
            )
    return errs


# ---------------------------------------------------------------- tolerations


def validate_tolerations(tolerations: list[Toleration], path: str) -> list[FieldError]:
    """ValidateTolerations. An empty key with operator Exists tolerates everything; upstream reports a
    bad value under the operator's path."""
    errs: list[FieldError] = []
    for i, t in enumerate(tolerations):
        p = index(path, i)
        if t.key:
            errs += validate_label_name(t.key, p + ".key")
        if not t.key and t.operator != "Exists":
            errs.append(
                invalid(
                    p + ".operator",
                    t.operator,
                    'operator must be Exists when `key` is empty, which means "match all values and all keys"',
                )
            )
        if t.toleration_seconds is not None and t.effect != "NoExecute":
            errs.append(invalid(p + ".effect", t.effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if t.operator in ("Equal", ""):
            bad = validate_label_value(t.value, p + ".operator")
            if bad:
                errs.append(invalid(p + ".operator", t.value, ";".join(e.detail for e in bad)))
        elif t.operator == "Exists":
            if t.value:
                errs.append(invalid(p + ".operator", t.value, "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(not_supported(p + ".operator", t.operator, ["Equal", "Exists"]))
        if t.effect and t.effect not in _TAINT_EFFECTS:
            errs.append(not_supported(p + ".effect", t.effect, _TAINT_EFFECTS))
    return errs


# ---------------------------------------------------------------- topology spread


def validate_topology_spread(
    constraints: list[TopologySpreadConstraint], path: str, pod_labels: Mapping[str, str]
) -> list[FieldError]:
    """validateTopologySpreadConstraints. The topologyKey need only be non-empty; one constraint per
    {topologyKey, whenUnsatisfiable}, reported at the first of the pair."""
    errs: list[FieldError] = []
    for i, c in enumerate(constraints):
        p = index(path, i)
        if c.max_skew <= 0:
            errs.append(invalid(p + ".maxSkew", c.max_skew, _NOT_POSITIVE))
        if not c.topology_key:
            errs.append(required(p + ".topologyKey", "can not be empty"))
        if c.when_unsatisfiable not in _WHEN_UNSATISFIABLE:
            errs.append(not_supported(p + ".whenUnsatisfiable", c.when_unsatisfiable, list(_WHEN_UNSATISFIABLE)))
        for other in constraints[i + 1 :]:
            if other.topology_key == c.topology_key and other.when_unsatisfiable == c.when_unsatisfiable:
                errs.append(
                    duplicate(p + ".{topologyKey, whenUnsatisfiable}", f"{{{c.topology_key}, {c.when_unsatisfiable}}}")
                )
                break
        if c.min_domains is not None:
            if c.min_domains <= 0:
                errs.append(invalid(p + ".minDomains", c.min_domains, _NOT_POSITIVE))
            if c.when_unsatisfiable != "DoNotSchedule":
                detail = f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {c.when_unsatisfiable}"
                errs.append(invalid(p + ".minDomains", c.min_domains, detail))
        for policy, name in (
            (c.node_affinity_policy, "nodeAffinityPolicy"),
            (c.node_taints_policy, "nodeTaintsPolicy"),
        ):
            if policy is not None and policy not in _INCLUSION_POLICIES:
                errs.append(not_supported(f"{p}.{name}", policy, list(_INCLUSION_POLICIES)))
        if c.match_label_keys:
            errs += validate_label_keys(p, c.match_label_keys, [], c.label_selector, pod_labels)
        errs += validate_label_selector(c.label_selector, p + ".labelSelector")
    return errs


# ---------------------------------------------------------------- scheduling gates


def validate_scheduling_gates(gates: list[PodSchedulingGate], path: str) -> list[FieldError]:
    """validateSchedulingGates: qualified names, each once."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, gate in enumerate(gates):
        p = index(path, i)
        name = gate.name
        errs += validate_label_name(name, p)
        if name in seen:
            errs.append(duplicate(p, name))
        seen.add(name)
    return errs
