"""What kube-apiserver refuses in a ReplicaSet, StatefulSet, Deployment or DaemonSet on create
(pkg/apis/apps/validation, ValidateReplicaSet, ValidateStatefulSet, ValidateDeployment and
ValidateDaemonSet as v1.34.1 runs them, after apps/v1 defaulting).

All need a valid selector that matches the template's labels; the template is validated only once
the selector compiles (upstream validates it inside the else of LabelSelectorAsSelector). A
StatefulSet's pods get its volumeClaimTemplates as volumes, so the API server validates the template
with those volumes first and the template's own volumes (minus the ones a claim replaces) after.
A Deployment's template is checked as a ReplicaSet's (and named so in upstream's messages); a
DaemonSet's selector is not required as such: a missing one simply matches no template labels.
"""

from __future__ import annotations

import re

import msgspec

from kubesched.api.apps import (
    DaemonSet,
    DaemonSetUpdateStrategy,
    Deployment,
    DeploymentStrategy,
    ReplicaSet,
    StatefulSet,
    StatefulSetUpdateStrategy,
)
from kubesched.api.core import (
    PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource,
    PodSpec,
    PodTemplateSpec,
    Volume,
)
from kubesched.api.labels import SelectorError, label_selector
from kubesched.api.meta import LabelSelector
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
from kubesched.api.validation.registry import validator
from kubesched.api.validation.volumes import validate_persistent_volume_claim_spec
from kubesched.gocompat.field import FieldError, GoJSON, child, forbidden, invalid, not_supported, required
from kubesched.gocompat.names import regex_error


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


def _replica_set_template(sel: LabelSelector | None, template: PodTemplateSpec, path: str) -> list[FieldError]:
    """ValidatePodTemplateSpecForReplicaSet (ReplicaSets' and Deployments'), for a selector that compiles."""
    errs = [] if _selects_template(sel, template) else [selector_mismatch(template, path)]
    errs += validate_template(template, path)
    errs += validate_template_pod(template, path)
    # Upstream's message names a ReplicaSet for a Deployment's template too.
    return errs + validate_template_restart(template, path, "ReplicaSet")


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
        errs += _replica_set_template(spec.selector, spec.template, "spec.template")
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


# ---------------------------------------------------------------- intstr.IntOrString (maxSurge, maxUnavailable)

_PERCENT_FMT = "[0-9]+%"
_PERCENT = re.compile(_PERCENT_FMT)
_PERCENT_ERROR = regex_error(
    "a valid percent string must be a numeric string followed by an ending '%'", _PERCENT_FMT, "1%", "93%"
)
_GO_INT = re.compile(r"[+-]?[0-9]+")


def _percent(value: int | str) -> int | None:
    """getPercentValue: the number of a valid percentage, None for anything else."""
    if isinstance(value, str) and _PERCENT.fullmatch(value):
        return int(value[:-1])
    return None


def int_or_percent_value(value: int | str) -> int:
    """getIntOrPercentValue: a percentage's number, an int as is, any other string as strconv.Atoi reads
    it (0 when it does not parse; only whether the result is 0 matters to the callers)."""
    pct = _percent(value)
    if pct is not None:
        return pct
    if isinstance(value, int):
        return value
    return int(value) if _GO_INT.fullmatch(value) else 0


def validate_positive_int_or_percent(value: int | str, path: str) -> list[FieldError]:
    """ValidatePositiveIntOrPercent (despite the name: an int of at least 0, or a percentage)."""
    if isinstance(value, int):
        return validate_nonnegative(value, path)
    return [] if _PERCENT.fullmatch(value) else [invalid(path, GoJSON(value), _PERCENT_ERROR)]


def is_not_more_than_100_percent(value: int | str, path: str) -> list[FieldError]:
    """IsNotMoreThan100Percent: ints are not percentages and pass."""
    pct = _percent(value)
    return [invalid(path, GoJSON(value), "must not be greater than 100%")] if pct is not None and pct > 100 else []


def _rolling_update_value(max_unavailable: int | str | None, max_surge: int | str | None) -> dict[str, object]:
    """An internal RollingUpdateDeployment / RollingUpdateDaemonSet as encoding/json writes it: the v1
    pointers become IntOrString values, an absent one the zero value (0)."""
    return {
        "MaxUnavailable": 0 if max_unavailable is None else max_unavailable,
        "MaxSurge": 0 if max_surge is None else max_surge,
    }


# ---------------------------------------------------------------- Deployment

_DEPLOYMENT_STRATEGIES = ["Recreate", "RollingUpdate"]


def _deployment_strategy(strategy: DeploymentStrategy, path: str) -> list[FieldError]:
    """ValidateDeploymentStrategy, on the defaulted strategy (RollingUpdate, 25% unavailable, 25% surge)."""
    kind = strategy.type or "RollingUpdate"
    ru = strategy.rolling_update
    if kind == "Recreate":
        if ru is not None:
            return [forbidden(child(path, "rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if kind == "RollingUpdate":
        max_unavailable = "25%" if ru is None or ru.max_unavailable is None else ru.max_unavailable
        max_surge = "25%" if ru is None or ru.max_surge is None else ru.max_surge
        ru_path = child(path, "rollingUpdate")
        unavailable_path = child(ru_path, "maxUnavailable")
        errs = validate_positive_int_or_percent(max_unavailable, unavailable_path)
        errs += validate_positive_int_or_percent(max_surge, child(ru_path, "maxSurge"))
        if int_or_percent_value(max_unavailable) == 0 and int_or_percent_value(max_surge) == 0:
            errs.append(invalid(unavailable_path, GoJSON(max_unavailable), "may not be 0 when `maxSurge` is 0"))
        return errs + is_not_more_than_100_percent(max_unavailable, unavailable_path)
    ru_value = None if ru is None else _rolling_update_value(ru.max_unavailable, ru.max_surge)
    return [not_supported(path, GoJSON({"Type": kind, "RollingUpdate": ru_value}), _DEPLOYMENT_STRATEGIES)]


@validator("Deployment")
def validate_deployment(deploy: Deployment) -> list[FieldError]:
    """ValidateDeployment, after apps/v1 defaulting (one replica, RollingUpdate 25%/25%, a revision
    history of 10, a progress deadline of 600 seconds)."""
    spec = deploy.spec
    errs = validate_object_meta(deploy.metadata, True, name_is_dns_subdomain)
    errs += validate_nonnegative(1 if spec.replicas is None else spec.replicas, "spec.replicas")
    sel_errs, compiles = _validate_selector(spec.selector, "spec.selector", "deployment", "invalid label selector")
    errs += sel_errs
    if compiles:
        errs += _replica_set_template(spec.selector, spec.template, "spec.template")
    errs += _deployment_strategy(spec.strategy, "spec.strategy")
    errs += validate_nonnegative(spec.min_ready_seconds, "spec.minReadySeconds")
    history = 10 if spec.revision_history_limit is None else spec.revision_history_limit
    errs += validate_nonnegative(history, "spec.revisionHistoryLimit")
    deadline = 600 if spec.progress_deadline_seconds is None else spec.progress_deadline_seconds
    errs += validate_nonnegative(deadline, "spec.progressDeadlineSeconds")
    if deadline <= spec.min_ready_seconds:
        errs.append(invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    return errs


# ---------------------------------------------------------------- DaemonSet

_DAEMON_SET_STRATEGIES = ["RollingUpdate", "OnDelete"]


def _daemon_set_update_strategy(strategy: DaemonSetUpdateStrategy, path: str) -> list[FieldError]:
    """ValidateDaemonSetUpdateStrategy, on the defaulted strategy (RollingUpdate, 1 unavailable, 0 surge)."""
    kind = strategy.type or "RollingUpdate"
    ru = strategy.rolling_update
    if kind == "OnDelete":
        return []
    if kind == "RollingUpdate":
        max_unavailable = 1 if ru is None or ru.max_unavailable is None else ru.max_unavailable
        max_surge = 0 if ru is None or ru.max_surge is None else ru.max_surge
        ru_path = child(path, "rollingUpdate")
        unavailable_path = child(ru_path, "maxUnavailable")
        surge_path = child(ru_path, "maxSurge")
        errs = validate_positive_int_or_percent(max_unavailable, unavailable_path)
        errs += validate_positive_int_or_percent(max_surge, surge_path)
        errs += is_not_more_than_100_percent(max_unavailable, unavailable_path)
        errs += is_not_more_than_100_percent(max_surge, surge_path)
        has_unavailable = int_or_percent_value(max_unavailable) != 0
        has_surge = int_or_percent_value(max_surge) != 0
        if has_unavailable and has_surge:
            errs.append(invalid(surge_path, GoJSON(max_surge), "may not be set when maxUnavailable is non-zero"))
        elif not has_unavailable and not has_surge:
            errs.append(required(unavailable_path, "cannot be 0 when maxSurge is 0"))
        return errs
    ru_value = None if ru is None else _rolling_update_value(ru.max_unavailable, ru.max_surge)
    return [not_supported(path, GoJSON({"Type": kind, "RollingUpdate": ru_value}), _DAEMON_SET_STRATEGIES)]


@validator("DaemonSet")
def validate_daemon_set(ds: DaemonSet) -> list[FieldError]:
    """ValidateDaemonSet, after apps/v1 defaulting (RollingUpdate with 1 unavailable and 0 surge, a
    revision history of 10). Unlike the other controllers, a missing selector is no error of its own:
    it selects nothing, so the template's labels do not match it."""
    spec = ds.spec
    errs = validate_object_meta(ds.metadata, True, name_is_dns_subdomain)
    sel = spec.selector
    errs += validate_label_selector(sel, "spec.selector")
    try:
        compiled = label_selector(sel)
    except SelectorError:
        pass
    else:
        if not compiled.matches(spec.template.metadata.labels):
            errs.append(selector_mismatch(spec.template, "spec.template"))
    if sel is not None and not sel.match_labels and not sel.match_expressions:
        errs.append(invalid("spec.selector", selector_value(sel), "empty selector is invalid for daemonset"))
    errs += validate_template(spec.template, "spec.template")
    errs += validate_template_pod(spec.template, "spec.template")
    errs += validate_template_restart(spec.template, "spec.template", "DaemonSet")
    errs += validate_nonnegative(spec.min_ready_seconds, "spec.minReadySeconds")
    errs += _daemon_set_update_strategy(spec.update_strategy, "spec.updateStrategy")
    history = 10 if spec.revision_history_limit is None else spec.revision_history_limit
    return errs + validate_nonnegative(history, "spec.revisionHistoryLimit")
