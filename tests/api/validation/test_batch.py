"""batch/v1 Job and CronJob: decoded as kube-apiserver v1.34.1 decodes them (strictly, with the manifests
of the Kubernetes documentation) and refused in the words of pkg/apis/batch/validation and of
robfig/cron/v3, whose parser the API server runs on a CronJob's schedule."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from tests.api.validation.raw_edits import drop_field, set_field

from kubesched.api import batch
from kubesched.api.decode import KINDS, NAMESPACED, DecodeError, decode
from kubesched.api.intake import IntakeError, admit
from kubesched.api.validation import validate, validated_kinds
from kubesched.api.validation.cron import CronError, parse_cron_standard
from kubesched.api.validation.job_defaults import CONTROLLER_UID_LABEL, JOB_NAME_LABEL, PLACEHOLDER_UID, defaulted_job
from kubesched.gocompat.field import to_aggregate

OPENAPI = Path(__file__).parents[3] / "src" / "kubesched" / "api" / "openapi-v1.34.1.json"

# https://kubernetes.io/docs/concepts/workloads/controllers/job/ (controllers/job.yaml)
PI_JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  template:
    spec:
      containers:
      - name: pi
        image: perl:5.34.0
        command: ["perl",  "-Mbignum=bpi", "-wle", "print bpi(2000)"]
      restartPolicy: Never
  backoffLimit: 4
"""

# https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ (application/job/cronjob.yaml)
HELLO_CRONJOB = """
apiVersion: batch/v1
kind: CronJob
metadata:
  name: hello
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: hello
            image: busybox:1.28
            imagePullPolicy: IfNotPresent
            command:
            - /bin/sh
            - -c
            - date; echo Hello from the Kubernetes cluster
          restartPolicy: OnFailure
"""

MANIFESTS = {"Job": PI_JOB, "CronJob": HELLO_CRONJOB}


def _raw(kind: str, *changes: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    raw: dict[str, Any] = copy.deepcopy(yaml.safe_load(MANIFESTS[kind]))
    for change in changes:
        change(raw)
    return raw


def _errors(kind: str, *changes: Callable[[dict[str, Any]], object]) -> list[str]:
    return to_aggregate(validate(kind, decode(kind, _raw(kind, *changes))))


# ---------------------------------------------------------------- decoding


def test_kinds_are_registered_namespaced_and_validated() -> None:
    assert KINDS["Job"] is batch.Job and KINDS["CronJob"] is batch.CronJob
    assert {"Job", "CronJob"} <= NAMESPACED
    assert {"Job", "CronJob"} <= validated_kinds()


def test_pi_job_is_admitted() -> None:
    job = admit("Job", _raw("Job"))
    assert isinstance(job, batch.Job)
    assert job.spec.backoff_limit == 4
    assert job.spec.selector is None  # the API server generates it
    assert job.spec.template.spec.restart_policy == "Never"
    assert job.spec.template.spec.containers[0].image == "perl:5.34.0"


def test_hello_cronjob_is_admitted() -> None:
    cj = admit("CronJob", _raw("CronJob"))
    assert isinstance(cj, batch.CronJob)
    assert cj.spec.schedule == "* * * * *"
    assert cj.spec.job_template.spec.template.spec.containers[0].name == "hello"
    assert cj.spec.job_template.spec.template.spec.restart_policy == "OnFailure"


def test_every_spec_field_of_the_openapi_document_decodes() -> None:
    """A field the struct lacks would be read as absent: the structs hold every field upstream declares."""
    types = json.loads(OPENAPI.read_text())["types"]
    for struct in (
        batch.JobSpec,
        batch.JobTemplateSpec,
        batch.CronJobSpec,
        batch.PodFailurePolicy,
        batch.PodFailurePolicyRule,
        batch.PodFailurePolicyOnExitCodesRequirement,
        batch.PodFailurePolicyOnPodConditionsPattern,
        batch.SuccessPolicy,
        batch.SuccessPolicyRule,
    ):
        declared = {f.encode_name for f in msgspec.structs.fields(struct)}
        assert declared == set(types[f"io.k8s.api.batch.v1.{struct.__name__}"]), struct.__name__


def test_every_field_a_full_manifest_may_carry_is_admitted() -> None:
    job = admit(
        "Job",
        _raw(
            "Job",
            set_field("spec.completions", 3),
            set_field("spec.parallelism", 2),
            set_field("spec.completionMode", "Indexed"),
            set_field("spec.activeDeadlineSeconds", 100),
            set_field("spec.backoffLimitPerIndex", 1),
            set_field("spec.maxFailedIndexes", 1),
            set_field("spec.ttlSecondsAfterFinished", 60),
            set_field("spec.suspend", True),
            set_field("spec.podReplacementPolicy", "Failed"),
            set_field("spec.managedBy", "example.com/controller"),
            set_field(
                "spec.podFailurePolicy",
                {
                    "rules": [
                        {"action": "FailJob", "onExitCodes": {"containerName": "pi", "operator": "In", "values": [42]}},
                        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
                    ]
                },
            ),
            set_field("spec.successPolicy", {"rules": [{"succeededIndexes": "0,2", "succeededCount": 1}]}),
            set_field("status", {"active": 1}),
        ),
    )
    assert job.spec.pod_failure_policy.rules[0].on_exit_codes.values == [42]
    assert job.spec.success_policy.rules[0].succeeded_indexes == "0,2"
    assert job.spec.managed_by == "example.com/controller"
    cj = admit(
        "CronJob",
        _raw(
            "CronJob",
            set_field("spec.timeZone", "Europe/Rome"),
            set_field("spec.startingDeadlineSeconds", 10),
            set_field("spec.concurrencyPolicy", "Forbid"),
            set_field("spec.suspend", False),
            set_field("spec.successfulJobsHistoryLimit", 0),
            set_field("spec.failedJobsHistoryLimit", 0),
            set_field("spec.jobTemplate.metadata", {"labels": {"team": "a"}}),
            set_field("spec.jobTemplate.spec.backoffLimit", 2),
        ),
    )
    assert cj.spec.time_zone == "Europe/Rome" and cj.spec.job_template.metadata.labels == {"team": "a"}


def test_unknown_fields_are_refused_strictly() -> None:
    with pytest.raises(IntakeError) as err:
        admit("CronJob", _raw("CronJob", set_field("spec.jobTemplate.spec.restartPolicy", "Never")))
    assert err.value.message == 'strict decoding error: unknown field "spec.jobTemplate.spec.restartPolicy"'


def test_template_quantities_are_checked_at_decode() -> None:
    limits = {"limits": {"cpu": "lots"}}
    raw = _raw("Job", set_field("spec.template.spec.containers", [{"name": "c", "resources": limits}]))
    with pytest.raises(DecodeError) as err:
        decode("Job", raw)
    assert err.value.field == "spec.template.spec.containers[0].resources.limits[cpu]"
    raw = _raw(
        "CronJob", set_field("spec.jobTemplate.spec.template.spec.containers", [{"name": "c", "resources": limits}])
    )
    with pytest.raises(DecodeError) as err:
        decode("CronJob", raw)
    assert err.value.field == "spec.jobTemplate.spec.template.spec.containers[0].resources.limits[cpu]"


# ---------------------------------------------------------------- defaulting and the generated selector


def test_defaulting_and_generated_selector() -> None:
    job = decode("Job", _raw("Job", set_field("metadata.uid", "u-1")))
    meta, spec = defaulted_job(job)
    assert (spec.parallelism, spec.completions, spec.backoff_limit) == (1, 1, 4)
    assert (spec.completion_mode, spec.pod_replacement_policy, spec.manual_selector) == (
        "NonIndexed",
        "TerminatingOrFailed",
        False,
    )
    assert spec.selector is not None and spec.selector.match_labels == {CONTROLLER_UID_LABEL: "u-1"}
    assert spec.template.metadata.labels == {
        "controller-uid": "u-1",
        "job-name": "pi",
        CONTROLLER_UID_LABEL: "u-1",
        JOB_NAME_LABEL: "pi",
    }
    assert meta.labels == {}  # the template had no labels to share
    # The Job itself is left as it came.
    assert job.spec.selector is None and job.spec.template.metadata.labels == {}


def test_a_job_without_labels_shares_its_templates() -> None:
    job = decode("Job", _raw("Job", set_field("spec.template.metadata", {"labels": {"app": "pi"}})))
    meta, _ = defaulted_job(job)
    assert meta.labels == {
        "app": "pi",
        "controller-uid": PLACEHOLDER_UID,
        "job-name": "pi",
        CONTROLLER_UID_LABEL: PLACEHOLDER_UID,
        JOB_NAME_LABEL: "pi",
    }


def test_only_completion_mode_indexed_defaults_to_one_completion() -> None:
    """completions default to 1 when neither they nor parallelism are given, so that Indexed alone passes."""
    assert _errors("Job", set_field("spec.completionMode", "Indexed")) == []
    assert _errors("Job", set_field("spec.completionMode", "Indexed"), set_field("spec.parallelism", 2)) == [
        "spec.completions: Required value: when completion mode is Indexed"
    ]


def test_manual_selector_is_taken_as_given() -> None:
    labels = {"app": "pi"}
    assert (
        _errors(
            "Job",
            set_field("spec.manualSelector", True),
            set_field("spec.selector", {"matchLabels": labels}),
            set_field("spec.template.metadata", {"labels": labels}),
        )
        == []
    )


# ---------------------------------------------------------------- refusals

MISMATCH = "`selector` does not match template `labels`"
GENERATED = (
    f'{{"{CONTROLLER_UID_LABEL}":"{PLACEHOLDER_UID}","{JOB_NAME_LABEL}":"pi",'
    f'"controller-uid":"{PLACEHOLDER_UID}","job-name":"pi"}}'
)

# (kind, changes, the API server's errors in its order)
REFUSALS: list[tuple[str, list[Callable[[dict[str, Any]], None]], list[str]]] = [
    (
        "Job",
        [drop_field("spec.template.spec.restartPolicy")],
        ['spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'],
    ),
    (
        "Job",
        [set_field("spec.template.spec.restartPolicy", "Always")],
        ['spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'],
    ),
    (
        "Job",
        [
            set_field(
                "spec.podFailurePolicy",
                {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1]}}]},
            ),
            set_field("spec.template.spec.restartPolicy", "OnFailure"),
        ],
        [
            'spec.template.spec.restartPolicy: Invalid value: "OnFailure": '
            'only "Never" is supported when podFailurePolicy is specified'
        ],
    ),
    (
        "Job",
        [set_field("spec.parallelism", -1), set_field("spec.completions", -2), set_field("spec.backoffLimit", -4)],
        [
            "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
            "spec.completions: Invalid value: -2: must be greater than or equal to 0",
            "spec.backoffLimit: Invalid value: -4: must be greater than or equal to 0",
        ],
    ),
    (
        "Job",
        [set_field("spec.completionMode", "Indexed"), set_field("spec.parallelism", 3)],
        ["spec.completions: Required value: when completion mode is Indexed"],
    ),
    (
        "Job",
        [set_field("spec.completionMode", "Sequential")],
        ['spec.completionMode: Unsupported value: "Sequential": supported values: "NonIndexed", "Indexed"'],
    ),
    (
        "Job",
        [
            set_field("metadata.name", "j" * 61),
            set_field("spec.completionMode", "Indexed"),
            set_field("spec.completions", 100),
        ],
        [
            f'metadata.name: Invalid value: "{"j" * 61}": '
            f"will not able to create pod with invalid DNS label: {'j' * 61}-99"
        ],
    ),
    (
        # The generated job-name labels hold the name: a label value of at most 63 characters.
        "Job",
        [set_field("metadata.name", "j" * 64)],
        [f'spec.template.labels: Invalid value: "{"j" * 64}": must be no more than 63 characters'],
    ),
    (
        "Job",
        [set_field("spec.selector", {"matchLabels": {"app": "pi"}})],
        [
            'spec.selector: Invalid value: {"matchLabels":{"app":"pi",'
            f'"{CONTROLLER_UID_LABEL}":"{PLACEHOLDER_UID}"}}}}: `selector` not auto-generated',
            f"spec.template.metadata.labels: Invalid value: {GENERATED}: {MISMATCH}",
        ],
    ),
    (
        "Job",
        [set_field("spec.template.metadata", {"labels": {"job-name": "other"}})],
        [
            "spec.template.metadata.labels[job-name]: Invalid value: "
            + GENERATED.replace('"job-name":"pi"', '"job-name":"other"')
            + ": must be 'pi'"
        ],
    ),
    (
        "Job",
        [set_field("spec.manualSelector", True)],
        ["spec.selector: Required value", f"spec.template.metadata.labels: Invalid value: null: {MISMATCH}"],
    ),
    (
        "Job",
        [set_field("spec.backoffLimitPerIndex", 1), set_field("spec.maxFailedIndexes", 1)],
        [
            "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
            "spec.maxFailedIndexes: Invalid value: 1: requires indexed completion mode",
        ],
    ),
    (
        "Job",
        [set_field("spec.successPolicy", {"rules": [{"succeededCount": 1}]})],
        [
            'spec.successPolicy: Invalid value: {"Rules":[{"SucceededIndexes":null,"SucceededCount":1}]}: '
            "requires indexed completion mode"
        ],
    ),
    (
        "Job",
        [
            set_field("spec.completionMode", "Indexed"),
            set_field("spec.completions", 3),
            set_field("spec.successPolicy", {"rules": [{"succeededIndexes": "0-5", "succeededCount": 2}]}),
        ],
        [
            'spec.successPolicy.rules[0].succeededIndexes: Invalid value: "0-5": '
            'error parsing succeededIndexes: too large index: "5"',
            "spec.successPolicy.rules[0].succeededCount: Invalid value: 2: must be less than or equal to 0 "
            "(the number of indexes in the specified succeededIndexes field)",
        ],
    ),
    (
        "Job",
        [
            set_field(
                "spec.podFailurePolicy",
                {
                    "rules": [
                        {"action": "Retry"},
                        {
                            "action": "Ignore",
                            "onExitCodes": {"containerName": "perl", "operator": "In", "values": [3, 0, 3]},
                            "onPodConditions": [{"type": "DisruptionTarget"}],
                        },
                    ]
                },
            )
        ],
        [
            'spec.podFailurePolicy.rules[0].action: Unsupported value: "Retry": '
            'supported values: "Count", "FailIndex", "FailJob", "Ignore"',
            "spec.podFailurePolicy.rules[0]: Invalid value: "
            "specifying one of OnExitCodes and OnPodConditions is required",
            'spec.podFailurePolicy.rules[1].onExitCodes.containerName: Invalid value: "perl": '
            "must be one of the container or initContainer names in the pod template",
            "spec.podFailurePolicy.rules[1].onExitCodes.values[1]: Invalid value: 0: must not be 0 for the In operator",
            "spec.podFailurePolicy.rules[1].onExitCodes.values[2]: Duplicate value: 3",
            "spec.podFailurePolicy.rules[1].onExitCodes.values: Invalid value: [3,0,3]: must be ordered",
            "spec.podFailurePolicy.rules[1]: Invalid value: specifying both OnExitCodes and OnPodConditions is not "
            "supported",
        ],
    ),
    (
        "Job",
        [set_field("spec.managedBy", "job-controller")],
        ['spec.managedBy: Invalid value: "job-controller": must be a domain-prefixed path (such as "acme.io/foo")'],
    ),
    (
        "Job",
        [set_field("spec.podReplacementPolicy", "Never")],
        ['spec.podReplacementPolicy: Unsupported value: "Never": supported values: "Failed", "TerminatingOrFailed"'],
    ),
    (
        "CronJob",
        [set_field("spec.schedule", "* * * *")],
        ['spec.schedule: Invalid value: "* * * *": expected exactly 5 fields, found 4: [* * * *]'],
    ),
    (
        "CronJob",
        [set_field("spec.schedule", "0 24 * * *")],
        ['spec.schedule: Invalid value: "0 24 * * *": end of range (24) above maximum (23): 24'],
    ),
    (
        "CronJob",
        [set_field("spec.schedule", "@every")],
        ['spec.schedule: Invalid value: "@every": unrecognized descriptor: @every'],
    ),
    (
        "CronJob",
        [set_field("spec.schedule", "TZ=UTC 0 * * * *")],
        [
            'spec.schedule: Invalid value: "TZ=UTC 0 * * * *": '
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
        ],
    ),
    (
        "CronJob",
        [set_field("spec.schedule", "")],
        ["spec.schedule: Required value"],
    ),
    (
        "CronJob",
        [set_field("spec.timeZone", "Mars/Olympus_Mons")],
        ['spec.timeZone: Invalid value: "Mars/Olympus_Mons": unknown time zone Mars/Olympus_Mons'],
    ),
    (
        "CronJob",
        [set_field("spec.timeZone", "Local")],
        [
            'spec.timeZone: Invalid value: "Local": '
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
        ],
    ),
    (
        "CronJob",
        [set_field("spec.concurrencyPolicy", "Queue")],
        ['spec.concurrencyPolicy: Unsupported value: "Queue": supported values: "Allow", "Forbid", "Replace"'],
    ),
    (
        "CronJob",
        [set_field("spec.startingDeadlineSeconds", -1), set_field("spec.failedJobsHistoryLimit", -1)],
        [
            "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
            "spec.failedJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
        ],
    ),
    (
        "CronJob",
        [set_field("metadata.name", "c" * 53)],
        [f'metadata.name: Invalid value: "{"c" * 53}": must be no more than 52 characters'],
    ),
    (
        "CronJob",
        [drop_field("spec.jobTemplate.spec.template.spec.restartPolicy")],
        ['spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'],
    ),
    (
        # A job template is not defaulted: Indexed needs its completions there.
        "CronJob",
        [set_field("spec.jobTemplate.spec.completionMode", "Indexed")],
        ["spec.jobTemplate.spec.completions: Required value: when completion mode is Indexed"],
    ),
    (
        "CronJob",
        [
            set_field("spec.jobTemplate.spec.selector", {"matchLabels": {"a": "b"}}),
            set_field("spec.jobTemplate.spec.manualSelector", True),
        ],
        [
            'spec.jobTemplate.spec.selector: Invalid value: {"matchLabels":{"a":"b"}}: '
            "`selector` will be auto-generated",
            'spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: "nil", "false"',
        ],
    ),
]


@pytest.mark.parametrize(("kind", "changes", "want"), REFUSALS, ids=[f"{k}-{w[0][:60]}" for k, _, w in REFUSALS])
def test_refusals_in_the_api_servers_words(
    kind: str, changes: list[Callable[[dict[str, Any]], None]], want: list[str]
) -> None:
    assert _errors(kind, *changes) == want


def test_a_52_character_cronjob_name_is_accepted() -> None:
    assert _errors("CronJob", set_field("metadata.name", "c" * 52)) == []


def test_admit_reports_the_first_refusal_as_invalid() -> None:
    with pytest.raises(IntakeError) as err:
        admit("CronJob", _raw("CronJob", set_field("spec.schedule", "every minute")))
    assert err.value.invalid and err.value.field == "spec.schedule"
    assert err.value.message == 'Invalid value: "every minute": expected exactly 5 fields, found 2: [every minute]'


# ---------------------------------------------------------------- cron expressions (robfig/cron/v3 ParseStandard)


@pytest.mark.parametrize(
    "schedule",
    [
        "* * * * *",
        "*/5 * * * *",
        "0 0 1,15 * *",
        "30 6 * * mon-FRI",
        "0 0 1 JAN,jul ?",
        "5/15 1-23/2 * * 0",
        "@hourly",
        "@daily",
        "@midnight",
        "@weekly",
        "@monthly",
        "@yearly",
        "@annually",
        "@every 1h30m",
        "CRON_TZ=Europe/Rome 0 6 * * *",
        "\t0  6 * *\u00a0* ",
    ],
)
def test_cron_accepts(schedule: str) -> None:
    parse_cron_standard(schedule)


@pytest.mark.parametrize(
    ("schedule", "error"),
    [
        ("* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"),
        ("60 * * * *", "end of range (60) above maximum (59): 60"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("* * * 13 *", "end of range (13) above maximum (12): 13"),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        ("5-3 * * * *", "beginning of range (5) beyond end of range (3): 5-3"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("1/2/3 * * * *", "too many slashes: 1/2/3"),
        ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
        ("-1 * * * *", 'failed to parse int from : strconv.Atoi: parsing "": invalid syntax'),
        ("* * * * fun", 'failed to parse int from fun: strconv.Atoi: parsing "fun": invalid syntax'),
        (
            "99999999999999999999 * * * *",
            'failed to parse int from 99999999999999999999: strconv.Atoi: parsing "99999999999999999999": '
            "value out of range",
        ),
        ("@reboot", "unrecognized descriptor: @reboot"),
        ("@every 5x", 'failed to parse duration @every 5x: time: unknown unit "x" in duration "5x"'),
        ("TZ=Nowhere/Land * * * * *", "provided bad location Nowhere/Land: unknown time zone Nowhere/Land"),
    ],
)
def test_cron_refuses_in_the_librarys_words(schedule: str, error: str) -> None:
    with pytest.raises(CronError) as err:
        parse_cron_standard(schedule)
    assert str(err.value) == error
