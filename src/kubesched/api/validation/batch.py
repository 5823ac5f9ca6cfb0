"""What kube-apiserver refuses in a Job or CronJob on create (pkg/apis/batch/validation, ValidateJob and
ValidateCronJobCreate as v1.34.1 runs them).

A Job is validated as defaulted, with its generated selector (job_defaults.py); its pod failure and
success policies have rules of their own (job_policies.py); a CronJob's schedule is parsed as
robfig/cron/v3 parses it (cron.py).

A CronJob is defaulted (concurrencyPolicy Allow, history limits 3 and 1) but its job template is not:
only the template's pod spec is, and the Job defaults come when the controller creates a Job.
"""

from __future__ import annotations

import re

from kubesched.api.batch import CronJob, Job, JobSpec
from kubesched.api.labels import SelectorError, label_selector
from kubesched.api.validation.apps import selector_value
from kubesched.api.validation.core import selector_mismatch, validate_nonnegative, validate_template
from kubesched.api.validation.cron import CronError, load_location, parse_cron_standard
from kubesched.api.validation.job_defaults import defaulted_job, effective_name, validate_generated_selector
from kubesched.api.validation.job_policies import validate_pod_failure_policy, validate_success_policy
from kubesched.api.validation.meta import (
    name_is_dns_subdomain,
    validate_label_selector,
    validate_object_meta,
)
from kubesched.api.validation.pod import validate_template_pod
from kubesched.api.validation.registry import validator
from kubesched.gocompat.field import FieldError, GoJSON, child, invalid, not_supported, required, too_long
from kubesched.gocompat.names import is_dns1123_label, is_dns1123_subdomain, regex_error

MAX_PARALLELISM_FOR_INDEXED_JOB = 100_000
MAX_FAILED_INDEXES_FOR_INDEXED_JOB = 100_000
COMPLETIONS_SOFT_LIMIT = 100_000
PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS = 10_000
MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS = 10_000
MAX_MANAGED_BY_LENGTH = 63
# DNS1035LabelMaxLength - 11: the CronJob controller appends "-<timestamp>" to name its Jobs.
MAX_CRON_JOB_NAME_LENGTH = 52

_COMPLETION_MODES = ["NonIndexed", "Indexed"]
_JOB_RESTART_POLICIES = ["OnFailure", "Never"]
_POD_REPLACEMENT_POLICIES = ["Failed", "TerminatingOrFailed"]
_CONCURRENCY_POLICIES = ["Allow", "Forbid", "Replace"]

_HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_HTTP_PATH = re.compile(_HTTP_PATH_FMT)


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
        errs += validate_pod_failure_policy(spec, spec.pod_failure_policy, child(path, "podFailurePolicy"))
    if spec.success_policy is not None:
        errs += validate_success_policy(spec, spec.success_policy, child(path, "successPolicy"))
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
    errs += validate_generated_selector(meta, spec)
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
    err = load_location(zone)
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
