"""batch/v1 Job and CronJob (k8s.io/api/batch/v1), as a manifest may hold them.

Every spec field is kept (validation reads them); status is not (the API server resets it on create).
Pointer fields upstream are `X | None` here, so that validation can tell "not given" (defaulted)
from a zero value.
"""

from __future__ import annotations

import msgspec

from kubesched.api.core import PodTemplateSpec
from kubesched.api.meta import K8sStruct, LabelSelector, ObjectMeta

# ---------------------------------------------------------------- Job


class PodFailurePolicyOnExitCodesRequirement(K8sStruct):
    container_name: str | None = None
    operator: str = ""
    # None (absent) and [] differ in the API server's error text (null vs []).
    values: list[int] | None = None


class PodFailurePolicyOnPodConditionsPattern(K8sStruct):
    type: str = ""
    status: str = ""


class PodFailurePolicyRule(K8sStruct):
    action: str = ""
    on_exit_codes: PodFailurePolicyOnExitCodesRequirement | None = None
    on_pod_conditions: list[PodFailurePolicyOnPodConditionsPattern] = []


class PodFailurePolicy(K8sStruct):
    rules: list[PodFailurePolicyRule] = []


class SuccessPolicyRule(K8sStruct):
    succeeded_indexes: str | None = None
    succeeded_count: int | None = None


class SuccessPolicy(K8sStruct):
    rules: list[SuccessPolicyRule] = []


class JobSpec(K8sStruct):
    parallelism: int | None = None
    completions: int | None = None
    active_deadline_seconds: int | None = None
    pod_failure_policy: PodFailurePolicy | None = None
    success_policy: SuccessPolicy | None = None
    backoff_limit: int | None = None
    backoff_limit_per_index: int | None = None
    max_failed_indexes: int | None = None
    selector: LabelSelector | None = None
    manual_selector: bool | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    ttl_seconds_after_finished: int | None = None
    completion_mode: str | None = None
    suspend: bool | None = None
    pod_replacement_policy: str | None = None
    managed_by: str | None = None


class Job(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: JobSpec = msgspec.field(default_factory=JobSpec)


# ---------------------------------------------------------------- CronJob


class JobTemplateSpec(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: JobSpec = msgspec.field(default_factory=JobSpec)


class CronJobSpec(K8sStruct):
    schedule: str = ""
    time_zone: str | None = None
    starting_deadline_seconds: int | None = None
    concurrency_policy: str = ""
    suspend: bool | None = None
    job_template: JobTemplateSpec = msgspec.field(default_factory=JobTemplateSpec)
    successful_jobs_history_limit: int | None = None
    failed_jobs_history_limit: int | None = None


class CronJob(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CronJobSpec = msgspec.field(default_factory=CronJobSpec)
