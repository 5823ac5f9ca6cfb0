"""Job and CronJob: the pods a Job starts at once; a CronJob's first Job."""

from __future__ import annotations

from typing import Any

from tests.workloads.helpers import load, made, template

PI: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "pi"},
    "spec": {"backoffLimit": 4, "template": template({}, restartPolicy="Never")},
}


def _job(**spec: Any) -> dict[str, Any]:
    return {**PI, "spec": {**PI["spec"], **spec}}


def test_a_job_starts_parallelism_pods_at_most_its_completions() -> None:
    assert len(made(load([PI]))) == 1
    sc = load([_job(parallelism=3, completions=5)])
    assert len(made(sc)) == 3
    assert sc.notes == [
        "note: s.yaml: Job default/pi: 3 of its 5 completions start at once: the simulation places those "
        "(the next start as pods finish)"
    ]
    assert len(made(load([_job(parallelism=4, completions=2)]))) == 2
    assert len(made(load([_job(parallelism=2)]))) == 2  # a work queue: no completions
    assert made(load([_job(parallelism=2, suspend=True)])) == []
    (pod,) = made(load([PI]))
    labels = pod.obj.metadata.labels
    assert (
        pod.obj.metadata.name.startswith("pi-") and labels["job-name"] == labels["batch.kubernetes.io/job-name"] == "pi"
    )
    assert labels["controller-uid"] == labels["batch.kubernetes.io/controller-uid"] != ""
    assert pod.workload == "job/pi"


def test_an_indexed_job_names_its_pods_by_index() -> None:
    pods = made(load([_job(completionMode="Indexed", completions=3, parallelism=2)]))
    assert [p.obj.metadata.annotations["batch.kubernetes.io/job-completion-index"] for p in pods] == ["0", "1"]
    assert [p.obj.metadata.name[: len("pi-0-")] for p in pods] == ["pi-0-", "pi-1-"]
    assert pods[1].raw["spec"]["hostname"] == "pi-1"


def test_a_cron_job_makes_the_job_of_its_first_schedule() -> None:
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "hello"},
        "spec": {
            "schedule": "* * * * *",
            "jobTemplate": {"spec": {"template": template({}, restartPolicy="OnFailure")}},
        },
    }
    sc = load([cron])
    (job,) = made(sc, "Job")
    # Named after the minute of its schedule: the simulation's start, 2025-01-01T00:00:00Z.
    assert job.obj.metadata.name == "hello-28928160" and job.obj.metadata.owner_references[0].kind == "CronJob"
    (pod,) = made(sc)
    assert pod.obj.metadata.name.startswith("hello-28928160-") and pod.workload == "cronjob/hello"
    assert sc.notes == [
        "note: s.yaml: CronJob default/hello: a CronJob runs on its schedule: the simulation creates the Job of "
        "its first run only"
    ]
