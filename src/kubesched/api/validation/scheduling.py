"""What kube-apiserver refuses in a PriorityClass on create (pkg/apis/scheduling/validation), and what
its Priority admission plugin refuses after validation: a second default class."""

from __future__ import annotations

from collections.abc import Iterable

from kubesched.api.scheduling import (
    HIGHEST_USER_DEFINABLE_PRIORITY,
    SYSTEM_PRIORITY_CLASSES,
    PriorityClass,
)
from kubesched.api.validation.meta import name_is_dns_subdomain, validate_object_meta
from kubesched.api.validation.registry import validator
from kubesched.gocompat.field import FieldError, forbidden, not_supported, required

SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
PREEMPTION_POLICIES = ["PreemptLowerPriority", "Never"]


def _system_class_error(pc: PriorityClass) -> str:
    """IsKnownSystemPriorityClass's error ("" for a built-in class as the API server creates it)."""
    name = pc.metadata.name
    value = SYSTEM_PRIORITY_CLASSES.get(name)
    if value is None:
        return f"{name} is not a known system priority class"
    if pc.value != value:
        return f"value of {name} PriorityClass must be {value}"
    if pc.global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


def validate_preemption_policy(policy: str, path: str) -> list[FieldError]:
    """ValidatePreemptionPolicy (pods use it too)."""
    if policy in PREEMPTION_POLICIES:
        return []
    if not policy:
        return [required(path)]
    return [not_supported(path, policy, PREEMPTION_POLICIES)]


@validator("PriorityClass")
def validate_priority_class(pc: PriorityClass) -> list[FieldError]:
    """ValidatePriorityClass: the "system-" names are the built-in classes', user values stop at one billion."""
    errs = validate_object_meta(pc.metadata, False, name_is_dns_subdomain)
    if pc.metadata.name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        err = _system_class_error(pc)
        if err:
            errs.append(
                forbidden(
                    "metadata.name",
                    f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system use "
                    f"only. error: {err}",
                )
            )
    elif pc.value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(
            forbidden("value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}")
        )
    if pc.preemption_policy is not None:
        errs += validate_preemption_policy(pc.preemption_policy, "preemptionPolicy")
    return errs


def existing_default(classes: Iterable[PriorityClass]) -> PriorityClass | None:
    """The default class the admission plugin sees: of several (a race), the one of lowest value."""
    found: PriorityClass | None = None
    for c in classes:
        if c.global_default and (found is None or c.value < found.value):
            found = c
    return found


def check_global_default(pc: PriorityClass, classes: Iterable[PriorityClass]) -> str | None:
    """The Priority admission plugin's refusal of a second default class on create (after validation
    passed), as the API server words it; None when `pc` may be created beside `classes`."""
    if not pc.global_default:
        return None
    default = existing_default(classes)
    if default is None:
        return None
    return (
        f'priorityclasses.scheduling.k8s.io "{pc.metadata.name}" is forbidden: '
        f"PriorityClass {default.metadata.name} is already marked as default. Only one default can exist"
    )
