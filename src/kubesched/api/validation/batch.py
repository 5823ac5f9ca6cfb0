"""What kube-apiserver refuses in a Job or CronJob on create (pkg/apis/batch/validation, ValidateJob and
ValidateCronJobCreate as v1.34.1 runs them), and the cron expressions a CronJob's schedule may hold
(github.com/robfig/cron/v3 ParseStandard, whose error texts the API server passes on).

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

A CronJob is defaulted (concurrencyPolicy Allow, history limits 3 and 1) but its job template is not:
only the template's pod spec is, and the Job defaults come when the controller creates a Job.
"""

from __future__ import annotations

import re
import zoneinfo

import msgspec

from kubesched.api.batch import (
    CronJob,
    Job,
    JobSpec,
    PodFailurePolicy,
    PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern,
    PodFailurePolicyRule,
    SuccessPolicy,
    SuccessPolicyRule,
)
from kubesched.api.core import PodTemplateSpec
from kubesched.api.labels import SelectorError, label_selector
from kubesched.api.meta import LabelSelector, ObjectMeta
from kubesched.api.validation.apps import selector_value
from kubesched.api.validation.core import (
    labels_value,
    selector_mismatch,
    validate_nonnegative,
    validate_template,
)
from kubesched.api.validation.meta import (
    name_is_dns_subdomain,
    validate_label_selector,
    validate_object_meta,
)
from kubesched.api.validation.pod import validate_template_pod
from kubesched.api.validation.registry import validator
from kubesched.gocompat.duration import DurationError, parse_duration
from kubesched.gocompat.field import (
    DUPLICATE,
    INVALID,
    FieldError,
    GoJSON,
    child,
    index,
    invalid,
    key,
    not_supported,
    required,
    too_long,
    too_many,
)
from kubesched.gocompat.names import is_dns1123_label, is_dns1123_subdomain, is_qualified_name, regex_error
from kubesched.gocompat.strconv import go_quote

# Labels of the generated selector (pkg/apis/batch/types.go).
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
# Stands in for the UID the API server would give a new Job that carries none.
PLACEHOLDER_UID = "00000000-0000-0000-0000-000000000000"

MAX_PARALLELISM_FOR_INDEXED_JOB = 100_000
MAX_FAILED_INDEXES_FOR_INDEXED_JOB = 100_000
COMPLETIONS_SOFT_LIMIT = 100_000
PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS = 10_000
MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS = 10_000
MAX_POD_FAILURE_POLICY_RULES = 20
MAX_POD_FAILURE_POLICY_ON_EXIT_CODES_VALUES = 255
MAX_POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERNS = 20
MAX_MANAGED_BY_LENGTH = 63
MAX_JOB_SUCCESS_POLICY_SUCCEEDED_INDEXES_LIMIT = 64 * 1024
MAX_SUCCESS_POLICY_RULE = 20
# DNS1035LabelMaxLength - 11: the CronJob controller appends "-<timestamp>" to name its Jobs.
MAX_CRON_JOB_NAME_LENGTH = 52

_COMPLETION_MODES = ["NonIndexed", "Indexed"]
_JOB_RESTART_POLICIES = ["OnFailure", "Never"]
_POD_FAILURE_POLICY_ACTIONS = ["Count", "FailIndex", "FailJob", "Ignore"]  # sorted, as sets.List gives them
_EXIT_CODES_OPERATORS = ["In", "NotIn"]
_CONDITION_STATUSES = ["False", "True", "Unknown"]
_POD_REPLACEMENT_POLICIES = ["Failed", "TerminatingOrFailed"]
_CONCURRENCY_POLICIES = ["Allow", "Forbid", "Replace"]

_HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_HTTP_PATH = re.compile(_HTTP_PATH_FMT)
_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = (-(1 << 63), (1 << 63) - 1)
# Generated names: generateName (at most 58 bytes of it) and five random characters.
_GENERATED_SUFFIX = "xxxxx"


class _OmittedValueError(FieldError):
    """A field.Error whose bad value is field.OmitValueType{}: the body names the type and the detail only."""

    def body(self) -> str:
        return f"{self.type}: {self.detail}" if self.detail else self.type


def _go_list(values: list[str]) -> str:
    """fmt's %q of a []string: ["a" "b"]."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def _atoi(text: str) -> tuple[int, str]:
    """strconv.Atoi: (value, "") or (0, the error's text)."""
    if not _GO_INT.fullmatch(text):
        return 0, f"strconv.Atoi: parsing {go_quote(text)}: invalid syntax"
    value = int(text)
    if not _INT64[0] <= value <= _INT64[1]:
        return 0, f"strconv.Atoi: parsing {go_quote(text)}: value out of range"
    return value, ""


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


# ---------------------------------------------------------------- JobSpec


def _validate_has_label(template: PodTemplateSpec, label: str, expected: str, path: str) -> list[FieldError]:
    """ValidateHasLabel."""
    labels = template.metadata.labels
    where = key(child(path, "labels"), label)
    if label not in labels:
        return [required(where, f"must be '{expected}'")]
    if labels[label] != expected:
        return [invalid(where, labels_value(labels), f"must be '{expected}'")]
    return []


def _validate_generated_selector(meta: ObjectMeta, spec: JobSpec) -> list[FieldError]:
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


def _validate_domain_prefixed_path(value: str, path: str) -> list[FieldError]:
    """IsDomainPrefixedPath."""
    if not value:
        return [required(path)]
    host, sep, rest = value.partition("/")
    if not sep or not host or not rest:
        return [invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = [invalid(path, host, m) for m in is_dns1123_subdomain(host)]
    if not _HTTP_PATH.fullmatch(rest):
        errs.append(invalid(path, rest, regex_error("Invalid path", _HTTP_PATH_FMT)))
    return errs


def _validate_indexed_limits(spec: JobSpec, path: str) -> list[FieldError]:
    """The completionMode Indexed rules of validateJobSpec."""
    errs: list[FieldError] = []
    completions, parallelism, max_failed = spec.completions, spec.parallelism, spec.max_failed_indexes
    if completions is None:
        errs.append(required(child(path, "completions"), "when completion mode is Indexed"))
    if parallelism is not None and parallelism > MAX_PARALLELISM_FOR_INDEXED_JOB:
        msg = f"must be less than or equal to {MAX_PARALLELISM_FOR_INDEXED_JOB} when completion mode is Indexed"
        errs.append(invalid(child(path, "parallelism"), parallelism, msg))
    if completions is not None and max_failed is not None and max_failed > completions:
        errs.append(invalid(child(path, "maxFailedIndexes"), max_failed, "must be less than or equal to completions"))
    if max_failed is not None and max_failed > MAX_FAILED_INDEXES_FOR_INDEXED_JOB:
        msg = f"must be less than or equal to {MAX_FAILED_INDEXES_FOR_INDEXED_JOB}"
        errs.append(invalid(child(path, "maxFailedIndexes"), max_failed, msg))
    if completions is not None and completions > COMPLETIONS_SOFT_LIMIT and spec.backoff_limit_per_index is not None:
        if max_failed is None:
            msg = f"must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"
            errs.append(required(child(path, "maxFailedIndexes"), msg))
        high = f"when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
        if parallelism is not None and parallelism > PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS:
            msg = f"must be less than or equal to {PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS} {high}"
            errs.append(invalid(child(path, "parallelism"), parallelism, msg))
        if max_failed is not None and max_failed > MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS:
            msg = f"must be less than or equal to {MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS} {high}"
            errs.append(invalid(child(path, "maxFailedIndexes"), max_failed, msg))
    return errs


def _validate_on_exit_codes(
    req: PodFailurePolicyOnExitCodesRequirement, path: str, container_names: set[str]
) -> list[FieldError]:
    """validatePodFailurePolicyRuleOnExitCodes."""
    errs: list[FieldError] = []
    operator_path = child(path, "operator")
    if not req.operator:
        errs.append(required(operator_path, f"valid values: {_go_list(_EXIT_CODES_OPERATORS)}"))
    elif req.operator not in _EXIT_CODES_OPERATORS:
        errs.append(not_supported(operator_path, GoJSON(req.operator), _EXIT_CODES_OPERATORS))
    if req.container_name is not None and req.container_name not in container_names:
        msg = "must be one of the container or initContainer names in the pod template"
        errs.append(invalid(child(path, "containerName"), req.container_name, msg))
    values_path = child(path, "values")
    values = req.values or []
    if not values:
        errs.append(invalid(values_path, GoJSON(req.values), "at least one value is required"))
    elif len(values) > MAX_POD_FAILURE_POLICY_ON_EXIT_CODES_VALUES:
        errs.append(too_many(values_path, len(values), MAX_POD_FAILURE_POLICY_ON_EXIT_CODES_VALUES))
    ordered = True
    seen: set[int] = set()
    for j, code in enumerate(values):
        value_path = index(values_path, j)
        if req.operator == "In" and code == 0:
            errs.append(invalid(value_path, code, "must not be 0 for the In operator"))
        if code in seen:
            errs.append(FieldError(DUPLICATE, value_path, code))
        else:
            seen.add(code)
        if j > 0 and values[j - 1] > code:
            ordered = False
    if not ordered:
        errs.append(invalid(values_path, GoJSON(values), "must be ordered"))
    return errs


def _validate_on_pod_conditions(patterns: list[PodFailurePolicyOnPodConditionsPattern], path: str) -> list[FieldError]:
    """validatePodFailurePolicyRuleOnPodConditions."""
    errs: list[FieldError] = []
    if len(patterns) > MAX_POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERNS:
        errs.append(too_many(path, len(patterns), MAX_POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERNS))
    for j, pattern in enumerate(patterns):
        pattern_path = index(path, j)
        errs += _validate_qualified_name(pattern.type, child(pattern_path, "type"))
        status_path = child(pattern_path, "status")
        if not pattern.status:
            errs.append(required(status_path, f"valid values: {_go_list(_CONDITION_STATUSES)}"))
        elif pattern.status not in _CONDITION_STATUSES:
            errs.append(not_supported(status_path, GoJSON(pattern.status), _CONDITION_STATUSES))
    return errs


def _validate_qualified_name(value: str, path: str) -> list[FieldError]:
    """ValidateQualifiedName."""
    return [invalid(path, value, m) for m in is_qualified_name(value)]


def _validate_pod_failure_policy(spec: JobSpec, policy: PodFailurePolicy, path: str) -> list[FieldError]:
    """validatePodFailurePolicy."""
    errs: list[FieldError] = []
    rules_path = child(path, "rules")
    if len(policy.rules) > MAX_POD_FAILURE_POLICY_RULES:
        errs.append(too_many(rules_path, len(policy.rules), MAX_POD_FAILURE_POLICY_RULES))
    pod_spec = spec.template.spec
    container_names = {c.name for c in pod_spec.containers} | {c.name for c in pod_spec.init_containers}
    for i, rule in enumerate(policy.rules):
        rule_path = index(rules_path, i)
        action_path = child(rule_path, "action")
        if not rule.action:
            errs.append(required(action_path, f"valid values: {_go_list(_POD_FAILURE_POLICY_ACTIONS)}"))
        elif rule.action == "FailIndex":
            if spec.backoff_limit_per_index is None:
                msg = "requires the backoffLimitPerIndex to be set"
                errs.append(invalid(action_path, GoJSON(rule.action), msg))
        elif rule.action not in _POD_FAILURE_POLICY_ACTIONS:
            errs.append(not_supported(action_path, GoJSON(rule.action), _POD_FAILURE_POLICY_ACTIONS))
        if rule.on_exit_codes is not None:
            errs += _validate_on_exit_codes(rule.on_exit_codes, child(rule_path, "onExitCodes"), container_names)
        if rule.on_pod_conditions:
            errs += _validate_on_pod_conditions(rule.on_pod_conditions, child(rule_path, "onPodConditions"))
        if rule.on_exit_codes is not None and rule.on_pod_conditions:
            msg = "specifying both OnExitCodes and OnPodConditions is not supported"
            errs.append(_OmittedValueError(INVALID, rule_path, None, msg))
        if rule.on_exit_codes is None and not rule.on_pod_conditions:
            msg = "specifying one of OnExitCodes and OnPodConditions is required"
            errs.append(_OmittedValueError(INVALID, rule_path, None, msg))
    return errs


def _parse_index_interval(interval: str, completions: int) -> tuple[int, int, str]:
    """parseIndexInterval: (first, last, "") or (0, 0, the error)."""
    limits = interval.split("-")
    if len(limits) > 2:
        return (
            0,
            0,
            (
                f"the fragment {go_quote(interval)} violates the requirement that an index interval "
                "can have at most two parts separated by '-'"
            ),
        )
    x, err = _atoi(limits[0])
    if err:
        return 0, 0, f"cannot convert string to integer for index: {go_quote(limits[0])}"
    if x >= completions:
        return 0, 0, f"too large index: {go_quote(limits[0])}"
    if len(limits) == 1:
        return x, x, ""
    y, err = _atoi(limits[1])
    if err:
        return 0, 0, f"cannot convert string to integer for index: {go_quote(limits[1])}"
    if y >= completions:
        return 0, 0, f"too large index: {go_quote(limits[1])}"
    if x >= y:
        return 0, 0, f"non-increasing order, previous: {x}, current: {y}"
    return x, y, ""


def _indexes_total(indexes: str, completions: int) -> tuple[int, str]:
    """validateIndexesFormat: how many indexes the list holds, or the error."""
    if not indexes:
        return 0, ""
    last: int | None = None
    total = 0
    for interval in indexes.split(","):
        x, y, err = _parse_index_interval(interval, completions)
        if err:
            return 0, err
        if last is not None and last >= x:
            return 0, f"non-increasing order, previous: {last}, current: {x}"
        total += y - x + 1
        last = y
    return total, ""


def _success_policy_value(policy: SuccessPolicy) -> GoJSON:
    """An internal batch.SuccessPolicy as encoding/json writes it (no JSON tags)."""
    rules = [{"SucceededIndexes": r.succeeded_indexes, "SucceededCount": r.succeeded_count} for r in policy.rules]
    return GoJSON({"Rules": rules or None})


def _validate_success_policy_rule(rule: SuccessPolicyRule, completions: int | None, path: str) -> list[FieldError]:
    """validateSuccessPolicyRule. Upstream dereferences completions, which an Indexed Job must have (its
    absence is already an error); without it the comparisons are skipped here."""
    errs: list[FieldError] = []
    if rule.succeeded_count is None and rule.succeeded_indexes is None:
        errs.append(required(path, "at least one of succeededCount or succeededIndexes must be specified"))
    total = 0
    if rule.succeeded_indexes is not None:
        indexes_path = child(path, "succeededIndexes")
        if len(rule.succeeded_indexes.encode()) > MAX_JOB_SUCCESS_POLICY_SUCCEEDED_INDEXES_LIMIT:
            errs.append(too_long(indexes_path, MAX_JOB_SUCCESS_POLICY_SUCCEEDED_INDEXES_LIMIT))
        if completions is not None:
            total, err = _indexes_total(rule.succeeded_indexes, completions)
            if err:
                msg = f"error parsing succeededIndexes: {err}"
                errs.append(invalid(indexes_path, rule.succeeded_indexes, msg))
    if rule.succeeded_count is not None:
        count_path = child(path, "succeededCount")
        errs += validate_nonnegative(rule.succeeded_count, count_path)
        if completions is not None:
            if rule.succeeded_count > completions:
                msg = f"must be less than or equal to {completions} (the number of specified completions)"
                errs.append(invalid(count_path, rule.succeeded_count, msg))
            if rule.succeeded_indexes is not None and rule.succeeded_count > total:
                msg = (
                    f"must be less than or equal to {total} "
                    "(the number of indexes in the specified succeededIndexes field)"
                )
                errs.append(invalid(count_path, rule.succeeded_count, msg))
    return errs


def _validate_job_restart_policy(spec: JobSpec, path: str) -> list[FieldError]:
    """A Job's pods end: restartPolicy OnFailure or Never ("" is defaulted to Always), Never with a
    podFailurePolicy."""
    policy = spec.template.spec.restart_policy or "Always"
    where = child(path, "template", "spec", "restartPolicy")
    if policy == "Always":
        return [required(where, 'valid values: "OnFailure", "Never"')]
    if policy not in _JOB_RESTART_POLICIES:
        return [not_supported(where, GoJSON(policy), _JOB_RESTART_POLICIES)]
    if spec.pod_failure_policy is not None and policy != "Never":
        return [invalid(where, GoJSON(policy), 'only "Never" is supported when podFailurePolicy is specified')]
    return []


def validate_job_spec_fields(spec: JobSpec, path: str) -> list[FieldError]:
    """validateJobSpec: the rules a Job and a CronJob's job template share (not the selector's)."""
    errs: list[FieldError] = []
    for value, name in (
        (spec.parallelism, "parallelism"),
        (spec.completions, "completions"),
        (spec.active_deadline_seconds, "activeDeadlineSeconds"),
        (spec.backoff_limit, "backoffLimit"),
        (spec.ttl_seconds_after_finished, "ttlSecondsAfterFinished"),
        (spec.backoff_limit_per_index, "backoffLimitPerIndex"),
    ):
        if value is not None:
            errs += validate_nonnegative(value, child(path, name))
    if spec.max_failed_indexes is not None:
        errs += validate_nonnegative(spec.max_failed_indexes, child(path, "maxFailedIndexes"))
        if spec.backoff_limit_per_index is None:
            errs.append(required(child(path, "backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
    if spec.managed_by is not None:
        errs += _validate_domain_prefixed_path(spec.managed_by, child(path, "managedBy"))
        if len(spec.managed_by.encode()) > MAX_MANAGED_BY_LENGTH:
            errs.append(too_long(child(path, "managedBy"), MAX_MANAGED_BY_LENGTH))
    mode = spec.completion_mode
    if mode is not None:
        if mode not in _COMPLETION_MODES:
            errs.append(not_supported(child(path, "completionMode"), GoJSON(mode), _COMPLETION_MODES))
        if mode == "Indexed":
            errs += _validate_indexed_limits(spec, path)
    if mode is None or mode == "NonIndexed":
        if spec.backoff_limit_per_index is not None:
            where = child(path, "backoffLimitPerIndex")
            errs.append(invalid(where, spec.backoff_limit_per_index, "requires indexed completion mode"))
        if spec.max_failed_indexes is not None:
            where = child(path, "maxFailedIndexes")
            errs.append(invalid(where, spec.max_failed_indexes, "requires indexed completion mode"))
    if spec.pod_failure_policy is not None:
        errs += _validate_pod_failure_policy(spec, spec.pod_failure_policy, child(path, "podFailurePolicy"))
    if spec.success_policy is not None:
        success_path = child(path, "successPolicy")
        if mode != "Indexed":
            value = _success_policy_value(spec.success_policy)
            errs.append(invalid(success_path, value, "requires indexed completion mode"))
        else:
            rules = spec.success_policy.rules
            rules_path = child(success_path, "rules")
            if not rules:
                msg = "at least one rules must be specified when the successPolicy is specified"
                errs.append(required(rules_path, msg))
            if len(rules) > MAX_SUCCESS_POLICY_RULE:
                errs.append(too_many(rules_path, len(rules), MAX_SUCCESS_POLICY_RULE))
            for i, rule in enumerate(rules):
                errs += _validate_success_policy_rule(rule, spec.completions, index(rules_path, i))
    replacement = spec.pod_replacement_policy
    if replacement is not None:
        where = child(path, "podReplacementPolicy")
        if spec.pod_failure_policy is not None:
            if replacement != "Failed":
                errs.append(not_supported(where, GoJSON(replacement), ["Failed"]))
        elif replacement not in _POD_REPLACEMENT_POLICIES:
            errs.append(not_supported(where, GoJSON(replacement), _POD_REPLACEMENT_POLICIES))
    template_path = child(path, "template")
    errs += validate_template(spec.template, template_path)
    errs += validate_template_pod(spec.template, template_path)
    return errs + _validate_job_restart_policy(spec, path)


@validator("Job")
def validate_job(job: Job) -> list[FieldError]:
    """ValidateJob, on the defaulted Job with its generated selector (see defaulted_job)."""
    meta, spec = defaulted_job(job)
    errs = validate_object_meta(meta, True, name_is_dns_subdomain)
    errs += _validate_generated_selector(meta, spec)
    errs += validate_job_spec_fields(spec, "spec")
    if spec.selector is None:
        errs.append(required("spec.selector"))
    else:
        errs += validate_label_selector(spec.selector, "spec.selector")
    try:
        compiled = label_selector(spec.selector)
    except SelectorError:
        pass
    else:
        if not compiled.matches(spec.template.metadata.labels):
            errs.append(selector_mismatch(spec.template, "spec.template"))
    completions = spec.completions
    if spec.completion_mode == "Indexed" and completions is not None and completions > 0:
        # The controller names each pod's hostname "<job name>-<index>".
        name = effective_name(meta)
        hostname = f"{name}-{completions - 1}"
        if is_dns1123_label(hostname):
            msg = f"will not able to create pod with invalid DNS label: {hostname}"
            errs.append(invalid("metadata.name", name, msg))
    return errs


# ---------------------------------------------------------------- cron schedules (robfig/cron/v3)

# strings.Fields and strings.TrimSpace split on unicode.IsSpace.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
_GO_SPACES = re.compile(f"[{_GO_SPACE}]+")

_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTHS = {m: i + 1 for i, m in enumerate(_MONTH_NAMES)}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# second, minute, hour, day of month, month, day of week: (min, max, names).
_BOUNDS: tuple[tuple[int, int, dict[str, int] | None], ...] = (
    (0, 59, None),
    (0, 59, None),
    (0, 23, None),
    (1, 31, None),
    (1, 12, _MONTHS),
    (0, 6, _DAYS),
)
_DESCRIPTORS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})


class CronError(ValueError):
    """A schedule ParseStandard refuses; str() is its error text."""


def _must_parse_int(expr: str) -> int:
    value, err = _atoi(expr)
    if err:
        raise CronError(f"failed to parse int from {expr}: {err}")
    if value < 0:
        raise CronError(f"negative number ({value}) not allowed: {expr}")
    return value


def _int_or_name(expr: str, names: dict[str, int] | None) -> int:
    if names is not None and expr.lower() in names:
        return names[expr.lower()]
    return _must_parse_int(expr)


def _check_range(expr: str, low: int, high: int, names: dict[str, int] | None) -> None:
    """getRange: number | number "-" number [ "/" number ], or * and ? for the whole range."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _int_or_name(low_and_high[0], names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], names)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _must_parse_int(range_and_step[1])
        if len(low_and_high) == 1:
            end = high  # "N/step" means "N-max/step"
    else:
        raise CronError(f"too many slashes: {expr}")
    if start < low:
        raise CronError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise CronError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")


def _load_location(name: str) -> str:
    """time.LoadLocation's error text for a zone name ("" when Go would load it)."""
    if name in ("", "UTC", "Local"):
        return ""
    if ".." in name or name[0] in "/\\":
        return "time: invalid location name"
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return "unknown time zone " + name
    return ""


def parse_cron_standard(spec: str) -> None:
    """cron.ParseStandard: five fields (minute, hour, day of month, month, day of week), or a
    descriptor (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every <duration>),
    optionally after TZ=<zone> or CRON_TZ=<zone>. Raises CronError with the library's text."""
    if not spec:
        raise CronError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        if space < 0:
            # Upstream slices spec[eq+1:-1] here and panics (the request fails with an internal error).
            raise CronError("runtime error: slice bounds out of range [:-1]")
        zone = spec[spec.index("=") + 1 : space]
        err = _load_location(zone)
        if err:
            raise CronError(f"provided bad location {zone}: {err}")
        spec = spec[space:].strip(_GO_SPACE)
    if spec.startswith("@"):
        if spec in _DESCRIPTORS:
            return
        if spec.startswith("@every "):
            try:
                parse_duration(spec[len("@every ") :])
            except DurationError as err:
                raise CronError(f"failed to parse duration {spec}: {err}") from None
            return
        raise CronError(f"unrecognized descriptor: {spec}")
    fields = [f for f in _GO_SPACES.split(spec) if f]
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for text, (low, high, names) in zip(["0", *fields], _BOUNDS, strict=True):
        for expr in (r for r in text.split(",") if r):
            _check_range(expr, low, high, names)


# ---------------------------------------------------------------- CronJob

_TIME_ZONE_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")


def _validate_schedule(schedule: str, path: str) -> list[FieldError]:
    """validateScheduleFormat on create: a schedule ParseStandard takes, without a TZ of its own."""
    errs: list[FieldError] = []
    try:
        parse_cron_standard(schedule)
    except CronError as err:
        errs.append(invalid(path, schedule, str(err)))
    if "TZ" in schedule:
        errs.append(invalid(path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    return errs


def _validate_time_zone(zone: str | None, path: str) -> list[FieldError]:
    """validateTimeZone: an IANA zone name that the API server's time zone database holds."""
    if zone is None:
        return []
    if not zone:
        return [invalid(path, zone, "timeZone must be nil or non-empty string")]
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TIME_ZONE_PART.fullmatch(part):
            return [invalid(path, zone, f"unknown time zone {zone}")]
    errs: list[FieldError] = []
    if zone.lower() == "local":
        msg = "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
        errs.append(invalid(path, zone, msg))
    err = _load_location(zone)
    if err:
        errs.append(invalid(path, zone, err))
    return errs


@validator("CronJob")
def validate_cron_job(cj: CronJob) -> list[FieldError]:
    """ValidateCronJobCreate, after batch/v1 defaulting (concurrencyPolicy Allow, history limits 3 and 1)."""
    spec = cj.spec
    errs = validate_object_meta(cj.metadata, True, name_is_dns_subdomain)
    if not spec.schedule:
        errs.append(required("spec.schedule"))
    else:
        errs += _validate_schedule(spec.schedule, "spec.schedule")
    if spec.starting_deadline_seconds is not None:
        errs += validate_nonnegative(spec.starting_deadline_seconds, "spec.startingDeadlineSeconds")
    errs += _validate_time_zone(spec.time_zone, "spec.timeZone")
    policy = spec.concurrency_policy or "Allow"
    if policy not in _CONCURRENCY_POLICIES:
        errs.append(not_supported("spec.concurrencyPolicy", GoJSON(policy), _CONCURRENCY_POLICIES))
    # ValidateJobTemplateSpec: the job spec as given (not defaulted), whose selector is always generated.
    job_spec = spec.job_template.spec
    errs += validate_job_spec_fields(job_spec, "spec.jobTemplate.spec")
    if job_spec.selector is not None:
        where = "spec.jobTemplate.spec.selector"
        errs.append(invalid(where, selector_value(job_spec.selector), "`selector` will be auto-generated"))
    if job_spec.manual_selector:
        errs.append(not_supported("spec.jobTemplate.spec.manualSelector", True, ["nil", "false"]))
    successful = 3 if spec.successful_jobs_history_limit is None else spec.successful_jobs_history_limit
    errs += validate_nonnegative(successful, "spec.successfulJobsHistoryLimit")
    failed = 1 if spec.failed_jobs_history_limit is None else spec.failed_jobs_history_limit
    errs += validate_nonnegative(failed, "spec.failedJobsHistoryLimit")
    name = effective_name(cj.metadata)
    if len(name.encode()) > MAX_CRON_JOB_NAME_LENGTH:
        msg = f"must be no more than {MAX_CRON_JOB_NAME_LENGTH} characters"
        errs.append(invalid("metadata.name", name, msg))
    return errs
