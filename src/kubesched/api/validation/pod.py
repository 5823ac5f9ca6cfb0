"""Pods (core validation's ValidatePodCreate), for the object metadata and the fields the scheduler reads.

The errors come in the API server's order: metadata and pod annotations; then the spec (volumes,
resource claims, containers, init containers, pod-level resources, hostNetwork ports, restartPolicy,
nodeSelector, affinity, scheduling gates, topology spread, nodeName, tolerations, priorityClassName,
preemptionPolicy, overhead); then the pod-only checks (image whitespace, nodeName on a gated pod).

Not checked, because the scheduler does not read them: security contexts, probes, lifecycle, env,
volume mounts, DNS, host aliases, the pod's OS and ephemeral containers. Note that for a Pod the
Priority admission plugin runs before validation and refuses an unknown priorityClassName or a
preemptionPolicy or priority that differs from the class's in its own words; the rules on those
fields here are what a pod template (which admission does not see) is refused for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from kubesched.api.core import Pod, PodSpec
from kubesched.api.meta import ObjectMeta
from kubesched.api.validation.meta import name_is_dns_subdomain, validate_labels, validate_object_meta
from kubesched.api.validation.pod_containers import (
    validate_containers,
    validate_host_network_ports,
    validate_images,
    validate_init_containers,
)
from kubesched.api.validation.pod_resources import (
    claim_names,
    validate_overhead,
    validate_pod_resource_claims,
    validate_pod_resources,
)
from kubesched.api.validation.pod_scheduling import (
    validate_affinity,
    validate_scheduling_gates,
    validate_tolerations,
    validate_topology_spread,
)
from kubesched.api.validation.pod_volumes import validate_volumes
from kubesched.api.validation.registry import validator
from kubesched.gocompat.field import FieldError, forbidden, invalid, key, not_supported, required

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
_RESTART_POLICIES = ["Always", "OnFailure", "Never"]
_PREEMPTION_POLICIES = ["PreemptLowerPriority", "Never"]
_INT32 = (-(1 << 31), (1 << 31) - 1)


def _is_int32(text: str) -> bool:
    """helper.GetDeletionCostFromPodAnnotations: a decimal int32 without '+' or leading zeros."""
    if text and not (text[0] == "-" or text == "0" or "1" <= text[0] <= "9"):
        return False
    digits = text[1:] if text.startswith("-") else text
    if not digits or not digits.isascii() or not digits.isdigit():
        return False
    return _INT32[0] <= int(text) <= _INT32[1]


def validate_pod_annotations(annotations: Mapping[str, str], spec: PodSpec, path: str) -> list[FieldError]:
    """ValidatePodSpecificAnnotations, for the mirror pod and pod-deletion-cost annotations."""
    errs: list[FieldError] = []
    mirror = annotations.get(MIRROR_POD_ANNOTATION)
    if mirror is not None and not spec.node_name:
        errs.append(
            invalid(key(path, MIRROR_POD_ANNOTATION), mirror, "must set spec.nodeName if mirror pod annotation is set")
        )
    cost = annotations.get(DELETION_COST_ANNOTATION)
    if cost is not None and not _is_int32(cost):
        errs.append(invalid(key(path, DELETION_COST_ANNOTATION), cost, "must be a 32bit integer"))
    return errs


def validate_pod_spec(
    spec: PodSpec, path: str, meta: ObjectMeta | None = None, *, is_pod: bool = False
) -> list[FieldError]:
    """ValidatePodSpec, for the fields the scheduler reads.

    For a pod template (a ReplicaSet's, a StatefulSet's) call it with the template's spec path and
    no `meta`. For a Pod, `meta` is the pod's metadata (its name names the claims of ephemeral
    volumes, its labels are merged into matchLabelKeys selectors) and `is_pod` applies the defaulting
    the API server does to a Pod before validating it (requests from limits, pod-level requests).
    """
    errs = validate_volumes(spec.volumes, meta, path + ".volumes") if spec.volumes else []
    return errs + _validate_spec_after_volumes(spec, path, meta, is_pod)


def validate_template_pod(template: Any, path: str, spec: PodSpec | None = None) -> list[FieldError]:
    """The pod part of ValidatePodTemplateSpec (a controller's template): its pod annotations and its
    spec; `spec` in place of the template's own where the controller adds to it (StatefulSet claims)."""
    spec = template.spec if spec is None else spec
    errs = validate_pod_annotations(template.metadata.annotations, spec, path + ".annotations")
    return errs + validate_pod_spec(spec, path + ".spec")


def _validate_spec_after_volumes(spec: PodSpec, path: str, meta: ObjectMeta | None, is_pod: bool) -> list[FieldError]:
    """ValidatePodSpec from the resource claims on (nothing there depends on the volumes)."""
    errs: list[FieldError] = []
    mirror = meta is not None and MIRROR_POD_ANNOTATION in meta.annotations
    names = claim_names(spec.resource_claims) if spec.resource_claims else frozenset()
    if spec.resource_claims:
        errs += validate_pod_resource_claims(spec.resource_claims, mirror, path + ".resourceClaims")
    host_network = spec.host_network
    errs += validate_containers(spec.containers, path + ".containers", names, host_network, is_pod)
    if spec.init_containers:
        errs += validate_init_containers(
            spec.init_containers, spec.containers, path + ".initContainers", names, host_network, is_pod
        )
    if spec.resources is not None:
        errs += validate_pod_resources(spec, names, path + ".resources", is_pod)
    if host_network:
        errs += validate_host_network_ports(spec.containers, path + ".containers")
    if spec.restart_policy and spec.restart_policy not in _RESTART_POLICIES:
        errs.append(not_supported(path + ".restartPolicy", spec.restart_policy, _RESTART_POLICIES))
    if spec.node_selector:
        errs += validate_labels(spec.node_selector, path + ".nodeSelector")
    labels = meta.labels if meta is not None else {}
    if spec.affinity is not None:
        errs += validate_affinity(spec.affinity, path + ".affinity", labels)
    if spec.scheduling_gates:
        errs += validate_scheduling_gates(spec.scheduling_gates, path + ".schedulingGates")
    if spec.topology_spread_constraints:
        errs += validate_topology_spread(spec.topology_spread_constraints, path + ".topologySpreadConstraints", labels)
    if spec.node_name:
        errs += [invalid(path + ".nodeName", spec.node_name, m) for m in name_is_dns_subdomain(spec.node_name, False)]
    if spec.tolerations:
        errs += validate_tolerations(spec.tolerations, path + ".tolerations")
    if spec.priority_class_name:
        name = spec.priority_class_name
        errs += [invalid(path + ".priorityClassName", name, m) for m in name_is_dns_subdomain(name, False)]
    if spec.preemption_policy is not None:
        if not spec.preemption_policy:
            errs.append(required(path + ".preemptionPolicy"))
        elif spec.preemption_policy not in _PREEMPTION_POLICIES:
            errs.append(not_supported(path + ".preemptionPolicy", spec.preemption_policy, _PREEMPTION_POLICIES))
    if spec.overhead:
        errs += validate_overhead(spec.overhead, path + ".overhead")
    return errs


# ---------------------------------------------------------------- specs already found valid

# The pods of a large scenario come from a few templates: their specs repeat, but for the node a
# bound pod runs on and the claims of a StatefulSet's pods. Volumes are always checked (they come
# first, and nothing after them depends on them); the rest of a spec found valid, images included, is
# remembered by its encoding, nodeName and volumes left out, with the only parts of the metadata it
# depends on.
_ENCODER = msgspec.json.Encoder()
_VALID_SPECS: set[tuple[object, ...]] = set()
_VALID_SPECS_LIMIT = 1 << 12


def _uses_label_keys(spec: PodSpec) -> bool:
    if spec.topology_spread_constraints and any(c.match_label_keys for c in spec.topology_spread_constraints):
        return True
    aff = spec.affinity
    if aff is None:
        return False
    for pa in (aff.pod_affinity, aff.pod_anti_affinity):
        if pa is None:
            continue
        terms = [*pa.required_during_scheduling_ignored_during_execution]
        terms += [w.pod_affinity_term for w in pa.preferred_during_scheduling_ignored_during_execution]
        if any(t.match_label_keys or t.mismatch_label_keys for t in terms):
            return True
    return False


def _spec_and_image_errors(spec: PodSpec, meta: ObjectMeta) -> list[FieldError]:
    """validate_pod_spec on a Pod, then its containers' images (the first of the pod-only checks), reusing
    what an identical spec was found to be."""
    errs = validate_volumes(spec.volumes, meta, "spec.volumes") if spec.volumes else []
    if spec.node_name and name_is_dns_subdomain(spec.node_name, False):
        return errs + _after_volumes_and_images(spec, meta)
    # With omit_defaults, a spec without nodeName and volumes encodes as it does with them cleared.
    cleared = spec
    if spec.node_name or spec.volumes:
        cleared = msgspec.structs.replace(spec, node_name="", volumes=[])
    labels = tuple(meta.labels.items()) if _uses_label_keys(spec) else None
    seen = (_ENCODER.encode(cleared), labels, bool(spec.resource_claims) and MIRROR_POD_ANNOTATION in meta.annotations)
    if seen in _VALID_SPECS:
        return errs
    rest = _after_volumes_and_images(spec, meta)
    if not rest:
        if len(_VALID_SPECS) >= _VALID_SPECS_LIMIT:
            _VALID_SPECS.clear()
        _VALID_SPECS.add(seen)
    return errs + rest


def _after_volumes_and_images(spec: PodSpec, meta: ObjectMeta) -> list[FieldError]:
    errs = _validate_spec_after_volumes(spec, "spec", meta, True)
    errs += validate_images(spec.containers, "spec.containers")
    if spec.init_containers:
        errs += validate_images(spec.init_containers, "spec.initContainers")
    return errs


@validator("Pod")
def validate_pod(pod: Pod) -> list[FieldError]:
    """ValidatePodCreate: the metadata, the spec, then what only a Pod (not a template) is checked for."""
    meta, spec = pod.metadata, pod.spec
    errs = validate_object_meta(meta, True, name_is_dns_subdomain)
    if meta.annotations:
        errs += validate_pod_annotations(meta.annotations, spec, "metadata.annotations")
    errs += _spec_and_image_errors(spec, meta)
    if spec.node_name and spec.scheduling_gates:
        errs.append(forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared"))
    return errs
