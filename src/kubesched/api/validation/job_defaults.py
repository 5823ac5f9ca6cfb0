"""A Job as ValidateJob sees it: batch/v1 defaulting and the Job strategy's selector generation, and
the check that a selector the user gave is the generated one (validateGeneratedSelector).

The API server validates a Job after two steps that change it:
- batch/v1 defaulting: parallelism and completions of 1 (when neither is given), a backoffLimit of 6,
  completionMode NonIndexed, podReplacementPolicy TerminatingOrFailed (Failed with a podFailurePolicy),
  manualSelector false, a pattern's status True; the Job takes its template's labels when it has none
  (the very same map, so it also gets the labels added next); the template's restartPolicy "" is Always;
- the Job strategy's selector generation (unless manualSelector): the template gets the labels
  controller-uid, job-name and their batch.kubernetes.io/ forms, and the selector requires
  batch.kubernetes.io/controller-uid. So a Job without a selector is valid; one with a selector of
  its own, or with template labels that contradict the generated ones, is not.

The API server gives each new object a fresh random UID before this; the object's own uid (or a fixed
stand-in) plays that part here, so a message that quotes the UID quotes another one.
"""

from __future__ import annotations

import msgspec

from kubesched.api.batch import (
    Job,
    JobSpec,
    PodFailurePolicy,
    PodFailurePolicyOnPodConditionsPattern,
    PodFailurePolicyRule,
)
from kubesched.api.core import PodTemplateSpec
from kubesched.api.labels import SelectorError, label_selector
from kubesched.api.meta import LabelSelector, ObjectMeta
from kubesched.api.validation.apps import selector_value
from kubesched.api.validation.core import labels_value
from kubesched.gocompat.field import FieldError, child, invalid, key, required

# Labels of the generated selector (pkg/apis/batch/types.go).
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
# Stands in for the UID the API server would give a new Job that carries none.
PLACEHOLDER_UID = "00000000-0000-0000-0000-000000000000"
# Generated names: generateName (at most 58 bytes of it) and five random characters.
_GENERATED_SUFFIX = "xxxxx"


def effective_name(meta: ObjectMeta) -> str:
    """The name the API server validates: the given one, or generateName plus five random characters
    (a stand-in here: which characters does not change whether the name is valid)."""
    if meta.name or not meta.generate_name:
        return meta.name
    return meta.generate_name.encode()[:58].decode(errors="ignore") + _GENERATED_SUFFIX


# ---------------------------------------------------------------- Job defaulting and selector generation


def _defaulted_pod_failure_policy(policy: PodFailurePolicy) -> PodFailurePolicy:
    """SetDefaults_Job's part: an onPodConditions pattern without a status matches status True."""
    rules: list[PodFailurePolicyRule] = []
    for rule in policy.rules:
        if all(p.status for p in rule.on_pod_conditions):
            rules.append(rule)
            continue
        patterns = [
            p if p.status else PodFailurePolicyOnPodConditionsPattern(type=p.type, status="True")
            for p in rule.on_pod_conditions
        ]
        rules.append(msgspec.structs.replace(rule, on_pod_conditions=patterns))
    return PodFailurePolicy(rules=rules)


def defaulted_job(job: Job) -> tuple[ObjectMeta, JobSpec]:
    """The Job's metadata and spec as ValidateJob sees them: batch/v1 defaulting, then (unless the
    selector is manual) the generated selector and template labels. The Job itself is not changed.
    The name stays as given (see effective_name for the one the generated labels hold)."""
    spec = job.spec
    meta = job.metadata
    name = effective_name(meta)
    uid = meta.uid or PLACEHOLDER_UID
    parallelism, completions = spec.parallelism, spec.completions
    if completions is None and parallelism is None:
        completions = parallelism = 1
    elif parallelism is None:
        parallelism = 1
    backoff_limit = spec.backoff_limit
    if backoff_limit is None:
        backoff_limit = (1 << 31) - 1 if spec.backoff_limit_per_index is not None else 6
    failure_policy = spec.pod_failure_policy
    if failure_policy is not None:
        failure_policy = _defaulted_pod_failure_policy(failure_policy)
    replacement = spec.pod_replacement_policy
    if replacement is None:
        replacement = "Failed" if failure_policy is not None else "TerminatingOrFailed"
    manual = bool(spec.manual_selector)
    template_labels = dict(spec.template.metadata.labels)
    selector = spec.selector
    if not manual:
        for label, value in (
            (LEGACY_JOB_NAME_LABEL, name),
            (JOB_NAME_LABEL, name),
            (LEGACY_CONTROLLER_UID_LABEL, uid),
            (CONTROLLER_UID_LABEL, uid),
        ):
            template_labels.setdefault(label, value)
        if selector is None:
            selector = LabelSelector()
        if CONTROLLER_UID_LABEL not in selector.match_labels:
            selector = msgspec.structs.replace(
                selector, match_labels={**selector.match_labels, CONTROLLER_UID_LABEL: uid}
            )
    template = spec.template
    if template_labels != template.metadata.labels:
        template = msgspec.structs.replace(
            template, metadata=msgspec.structs.replace(template.metadata, labels=template_labels)
        )
    # The Job takes its template's label map when it has no labels: the one selector generation adds to.
    if not meta.labels and spec.template.metadata.labels:
        meta = msgspec.structs.replace(meta, labels=template_labels)
    defaulted = msgspec.structs.replace(
        spec,
        parallelism=parallelism,
        completions=completions,
        backoff_limit=backoff_limit,
        completion_mode=spec.completion_mode or "NonIndexed",
        suspend=bool(spec.suspend),
        pod_failure_policy=failure_policy,
        pod_replacement_policy=replacement,
        manual_selector=manual,
        selector=selector,
        template=template,
    )
    return meta, defaulted


def _validate_has_label(template: PodTemplateSpec, label: str, expected: str, path: str) -> list[FieldError]:
    """ValidateHasLabel."""
    labels = template.metadata.labels
    where = key(child(path, "labels"), label)
    if label not in labels:
        return [required(where, f"must be '{expected}'")]
    if labels[label] != expected:
        return [invalid(where, labels_value(labels), f"must be '{expected}'")]
    return []


def validate_generated_selector(meta: ObjectMeta, spec: JobSpec) -> list[FieldError]:
    """validateGeneratedSelector (with the prefixed labels required, as on every create)."""
    if spec.manual_selector or spec.selector is None:
        return []
    uid = meta.uid or PLACEHOLDER_UID
    name = effective_name(meta)
    path = "spec.template.metadata"
    errs: list[FieldError] = []
    for label, value in (
        (LEGACY_CONTROLLER_UID_LABEL, uid),
        (LEGACY_JOB_NAME_LABEL, name),
        (CONTROLLER_UID_LABEL, uid),
        (JOB_NAME_LABEL, name),
    ):
        errs += _validate_has_label(spec.template, label, value, path)
    expected = {
        CONTROLLER_UID_LABEL: uid,
        JOB_NAME_LABEL: name,
        LEGACY_CONTROLLER_UID_LABEL: uid,
        LEGACY_JOB_NAME_LABEL: name,
    }
    try:
        compiled = label_selector(spec.selector)
    except SelectorError:
        return errs
    if not compiled.matches(expected):
        errs.append(invalid("spec.selector", selector_value(spec.selector), "`selector` not auto-generated"))
    return errs
