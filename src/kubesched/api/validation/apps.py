"""What kube-apiserver refuses in a ReplicaSet or StatefulSet on create (pkg/apis/apps/validation,
ValidateReplicaSet and ValidateStatefulSet as v1.34.1 runs them).

Both need a valid selector that matches the template's labels; the template is validated only once
the selector compiles (upstream validates it inside the else of LabelSelectorAsSelector). A
StatefulSet's pods get its volumeClaimTemplates as volumes, so the API server validates the template
with those volumes first and the template's own volumes (minus the ones a claim replaces) after.
"""

from __future__ import annotations

import msgspec

from kubesched.api.apps import ReplicaSet, StatefulSet, StatefulSetUpdateStrategy
from kubesched.api.core import (
    PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource,
    PodSpec,
    PodTemplateSpec,
    Volume,
)
from kubesched.api.labels import SelectorError, label_selector
from kubesched.api.meta import LabelSelector
from kubesched.api.validation import validator
from kubesched.api.validation.core import (
    selector_mismatch,
    validate_nonnegative,
    validate_template,
    validate_template_restart,
)
from kubesched.api.validation.meta import (
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_label_selector,
    validate_object_meta,
)
from kubesched.api.validation.pod import validate_template_pod
from kubesched.api.validation.volumes import validate_persistent_volume_claim_spec
from kubesched.config.field import FieldError, GoJSON, child, invalid, not_supported, required


def selector_value(sel: LabelSelector) -> GoJSON:
    """A *metav1.LabelSelector as a bad value (encoding/json, empty fields omitted, map keys sorted)."""
    out: dict[str, object] = {}
    if sel.match_labels:
        out["matchLabels"] = {k: sel.match_labels[k] for k in sorted(sel.match_labels)}
    if sel.match_expressions:
        exprs = []
        for e in sel.match_expressions:
            item: dict[str, object] = {"key": e.key, "operator": e.operator}
            if e.values:
                item["values"] = list(e.values)
            exprs.append(item)
        out["matchExpressions"] = exprs
    return GoJSON(out)


def _validate_selector(
    sel: LabelSelector | None, path: str, kind: str, bad_detail: str
) -> tuple[list[FieldError], bool]:
    """The selector rules shared by the apps controllers, and whether the selector compiles (so that
    the template is validated next). `kind` names the controller in the empty-selector message."""
    if sel is None:
        return [required(path)], True  # nil compiles to "nothing": no template labels match it
    errs = validate_label_selector(sel, path)
    if not sel.match_labels and not sel.match_expressions:
        errs.append(invalid(path, selector_value(sel), f"empty selector is invalid for {kind}"))
    try:
        label_selector(sel)
    except SelectorError:
        errs.append(invalid(path, selector_value(sel), bad_detail))
        return errs, False
    return errs, True


def _selects_template(sel: LabelSelector | None, template: PodTemplateSpec) -> bool:
    """Whether the (compilable) selector is empty or matches the template's labels."""
    compiled = label_selector(sel)
    return compiled.is_empty() or compiled.matches(template.metadata.labels)


# ---------------------------------------------------------------- ReplicaSet


@validator("ReplicaSet")
def validate_replica_set(rs: ReplicaSet) -> list[FieldError]:
    """ValidateReplicaSet (replicas default to one)."""
    spec = rs.spec
    errs = validate_object_meta(rs.metadata, True, name_is_dns_subdomain)
    errs += validate_nonnegative(1 if spec.replicas is None else spec.replicas, "spec.replicas")
    errs += validate_nonnegative(spec.min_ready_seconds, "spec.minReadySeconds")
    # Upstream's message names a deployment here too.
    sel_errs, compiles = _validate_selector(spec.selector, "spec.selector", "deployment", "invalid label selector")
    errs += sel_errs
    if compiles:
        path = "spec.template"
        if not _selects_template(spec.selector, spec.template):
            errs.append(selector_mismatch(spec.template, path))
        errs += validate_template(spec.template, path)
        errs += validate_template_pod(spec.template, path)
        errs += validate_template_restart(spec.template, path, "ReplicaSet")
    return errs


# ---------------------------------------------------------------- StatefulSet

_POD_MANAGEMENT_POLICIES = ("OrderedReady", "Parallel")
_RETENTION_POLICIES = ["Retain", "Delete"]


def _update_strategy(strategy: StatefulSetUpdateStrategy, path: str) -> list[FieldError]:
    """The update strategy, defaulted to RollingUpdate with partition 0."""
    kind = strategy.type or "RollingUpdate"
    ru = strategy.rolling_update
    # apps.RollingUpdateStatefulSetStrategy as encoding/json writes it (maxUnavailable is behind a gate
    # that v1.34 leaves off, so the API server has dropped it).
    ru_value = None if ru is None else {"Partition": ru.partition, "MaxUnavailable": None}
    if kind == "OnDelete":
        if ru is not None:
            msg = "only allowed for updateStrategy 'RollingUpdate'"
            return [invalid(child(path, "rollingUpdate"), GoJSON(ru_value), msg)]
        return []
    if kind == "RollingUpdate":
        if ru is not None:
            return validate_nonnegative(ru.partition, child(path, "rollingUpdate", "partition"))
        return []
    value = GoJSON({"Type": kind, "RollingUpdate": ru_value})
    return [invalid(path, value, "must be 'RollingUpdate' or 'OnDelete'")]


def statefulset_template_spec(ss: StatefulSet) -> PodSpec:
    """The template's pod spec as the API server validates it: one volume per claim template (each
    name once, its claimName the template's name) first, then the template's volumes no claim replaces."""
    claims: list[Volume] = []
    names: set[str] = set()
    for claim in ss.spec.volume_claim_templates:
        name = claim.metadata.name
        if name not in names:
            names.add(name)
            claims.append(Volume(name=name, persistent_volume_claim=PersistentVolumeClaimVolumeSource(claim_name=name)))
    spec = ss.spec.template.spec
    if not claims:
        return spec
    return msgspec.structs.replace(spec, volumes=claims + [v for v in spec.volumes if v.name not in names])


@validator("StatefulSet")
def validate_stateful_set(ss: StatefulSet) -> list[FieldError]:
    """ValidateStatefulSet as v1.34.1 runs it (policies defaulted: OrderedReady, RollingUpdate, Retain)."""
    spec = ss.spec
    errs = validate_object_meta(ss.metadata, True, name_is_dns_label)
    policy = spec.pod_management_policy or "OrderedReady"
    if policy not in _POD_MANAGEMENT_POLICIES:
        errs.append(invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
    errs += _update_strategy(spec.update_strategy, "spec.updateStrategy")
    retention = spec.persistent_volume_claim_retention_policy
    if retention is not None:
        for field_name, value in (("whenDeleted", retention.when_deleted), ("whenScaled", retention.when_scaled)):
            if value and value not in _RETENTION_POLICIES:
                where = child("spec.persistentVolumeClaimRetentionPolicy", field_name)
                errs.append(not_supported(where, value, _RETENTION_POLICIES))
    for i, claim in enumerate(spec.volume_claim_templates):
        cp = f"spec.volumeClaimTemplates[{i}].spec"
        errs += validate_persistent_volume_claim_spec(claim.spec or PersistentVolumeClaimSpec(), cp)
    errs += validate_nonnegative(1 if spec.replicas is None else spec.replicas, "spec.replicas")
    errs += validate_nonnegative(spec.min_ready_seconds, "spec.minReadySeconds")
    if spec.ordinals is not None:
        errs += validate_nonnegative(spec.ordinals.start, "spec.ordinals.start")
    if spec.service_name:
        errs += [invalid("spec.serviceName", spec.service_name, m) for m in name_is_dns_label(spec.service_name, False)]
    sel_errs, compiles = _validate_selector(spec.selector, "spec.selector", "statefulset", "")
    errs += sel_errs
    path = "spec.template"
    if compiles:
        if not _selects_template(spec.selector, spec.template):
            errs.append(selector_mismatch(spec.template, path))
        errs += validate_template(spec.template, path)
        errs += validate_template_pod(spec.template, path, statefulset_template_spec(ss))
    errs += validate_template_restart(spec.template, path, "StatefulSet")
    return errs
