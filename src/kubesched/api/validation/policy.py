"""What kube-apiserver refuses in a PodDisruptionBudget on create (pkg/apis/policy/validation).

The policy strategy validates the spec only; the metadata is checked afterwards by the generic
registry (names need only be path segments, finalizers only qualified names), and only when the
spec passed, so a PDB with both kinds of errors is refused for its spec alone.
"""

from __future__ import annotations

import re

from kubesched.api.scheduling import PodDisruptionBudget, PodDisruptionBudgetSpec
from kubesched.api.validation.apps import selector_value
from kubesched.api.validation.core import validate_nonnegative
from kubesched.api.validation.meta import name_is_path_segment, validate_label_selector, validate_object_meta
from kubesched.api.validation.registry import validator
from kubesched.gocompat.field import FieldError, GoJSON, child, invalid, not_supported
from kubesched.gocompat.names import regex_error

_PERCENT_FMT = "[0-9]+%"
_PERCENT = re.compile(_PERCENT_FMT)
_PERCENT_ERROR = regex_error(
    "a valid percent string must be a numeric string followed by an ending '%'", _PERCENT_FMT, "1%", "93%"
)
UNHEALTHY_POD_EVICTION_POLICIES = ["AlwaysAllow", "IfHealthyBudget"]


def validate_positive_int_or_percent(value: int | str, path: str) -> list[FieldError]:
    """ValidatePositiveIntOrPercent, then IsNotMoreThan100Percent."""
    if isinstance(value, int):
        return validate_nonnegative(value, path)
    if not _PERCENT.fullmatch(value):
        return [invalid(path, value, _PERCENT_ERROR)]
    if int(value[:-1]) > 100:
        return [invalid(path, value, "must not be greater than 100%")]
    return []


def _spec_value(spec: PodDisruptionBudgetSpec) -> GoJSON:
    """The internal PodDisruptionBudgetSpec as encoding/json writes it (no JSON tags)."""
    return GoJSON(
        {
            "MinAvailable": spec.min_available,
            "Selector": None if spec.selector is None else selector_value(spec.selector).value,
            "MaxUnavailable": spec.max_unavailable,
            "UnhealthyPodEvictionPolicy": spec.unhealthy_pod_eviction_policy,
        }
    )


def validate_pdb_spec(spec: PodDisruptionBudgetSpec, path: str) -> list[FieldError]:
    """ValidatePodDisruptionBudgetSpec."""
    errs: list[FieldError] = []
    if spec.min_available is not None and spec.max_unavailable is not None:
        errs.append(invalid(path, _spec_value(spec), "minAvailable and maxUnavailable cannot be both set"))
    if spec.min_available is not None:
        errs += validate_positive_int_or_percent(spec.min_available, child(path, "minAvailable"))
    if spec.max_unavailable is not None:
        errs += validate_positive_int_or_percent(spec.max_unavailable, child(path, "maxUnavailable"))
    errs += validate_label_selector(spec.selector, child(path, "selector"))
    policy = spec.unhealthy_pod_eviction_policy
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        errs.append(not_supported(child(path, "unhealthyPodEvictionPolicy"), policy, UNHEALTHY_POD_EVICTION_POLICIES))
    return errs


@validator("PodDisruptionBudget")
def validate_pod_disruption_budget(pdb: PodDisruptionBudget) -> list[FieldError]:
    """ValidatePodDisruptionBudget, then (if it passed) the generic registry's metadata checks."""
    errs = validate_pdb_spec(pdb.spec, "spec")
    if errs:
        return errs
    return validate_object_meta(pdb.metadata, True, name_is_path_segment, kube_finalizers=False)
