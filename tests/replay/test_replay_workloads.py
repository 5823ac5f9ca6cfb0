"""Workloads in a replay: a trace row starts a Job of the cluster file; the cluster file's other workloads'
pods run from the start."""

from __future__ import annotations

from replay_helpers import Runner, node

from kubesched.replay.metrics import FINISHED, RUNNING

JOB = """---
apiVersion: batch/v1
kind: Job
metadata: {name: pi}
spec:
  completions: 5
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: pi, image: perl:5.34, resources: {requests: {cpu: '1', memory: 1Gi}}}]
"""
DEPLOYMENT = """---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx, resources: {requests: {cpu: '1', memory: 1Gi}}}]
"""


def test_a_job_runs_parallelism_pods_at_a_time_until_its_completions(run_replay: Runner) -> None:
    (run,) = run_replay(node("n1", cpu="4") + JOB, "time,name,template,duration\n10,run-1,job/pi,100\n")
    pods = {p.key: (p.arrival, p.bound, p.end, p.state) for p in run.pods}
    # Two at a time: 0 and 1 at 10; as they finish at 110, 2 and 3; then 4 alone, done at 310.
    assert pods == {
        "default/run-1-0": (10.0, 10.0, 110.0, FINISHED),
        "default/run-1-1": (10.0, 10.0, 110.0, FINISHED),
        "default/run-1-2": (110.0, 110.0, 210.0, FINISHED),
        "default/run-1-3": (110.0, 110.0, 210.0, FINISHED),
        "default/run-1-4": (210.0, 210.0, 310.0, FINISHED),
    }
    assert run.end_time == 310.0


def test_a_job_waits_for_room_and_the_cluster_files_deployment_runs_from_the_start(run_replay: Runner) -> None:
    # 3 cpu: the Deployment's 2 replicas take 2 from t=0; the Job runs one pod at a time in what is left.
    (run,) = run_replay(node("n1", cpu="3") + DEPLOYMENT + JOB, "time,name,template,duration\n0,run,job/pi,50\n")
    web = [p for p in run.pods if p.key.startswith("default/web-")]
    assert len(web) == 2 and all(p.state == RUNNING and p.bound == 0.0 for p in web)
    job = sorted((p for p in run.pods if p.key.startswith("default/run-")), key=lambda p: p.key)
    assert [p.state for p in job] == [FINISHED] * 5
    assert max(p.end for p in job if p.end is not None) == 250.0  # one pod per 50 s: 5 x 50


def test_a_row_naming_a_job_the_cluster_file_lacks_is_refused(run_replay: Runner) -> None:
    import pytest

    from kubesched.errors import InputError

    with pytest.raises(InputError) as err:
        run_replay(node("n1") + JOB, "time,name,template,duration\n0,run,job/tau,5\n")
    assert str(err.value).endswith("line 2: template: no Job 'tau' in the cluster file that makes pods (Jobs: job/pi)")


def _cron(policy: str = "Allow") -> str:
    return f"""---
apiVersion: batch/v1
kind: CronJob
metadata: {{name: report}}
spec:
  schedule: "*/10 * * * *"
  concurrencyPolicy: {policy}
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{{name: r, image: busybox, resources: {{requests: {{cpu: '1', memory: 1Gi}}}}}}]
"""


# A CronJob row starts it; a later pod row marks how long the trace lasts (its ticks stop at the last arrival).
CRON_TRACE = (
    "time,name,template,spec,duration\n"
    "0,nightly,cronjob/report,,{d}\n"
    '3600,end,,"{{""containers"": [{{""name"": ""c""}}]}}",1\n'
)


def test_a_cron_job_starts_a_job_at_each_tick_until_the_last_arrival(run_replay: Runner) -> None:
    (run,) = run_replay(node("n1", cpu="4") + _cron(), CRON_TRACE.format(d=120))
    jobs = sorted((p.arrival, p.key, p.end) for p in run.pods if p.key.startswith("default/nightly-"))
    # Every ten minutes from 0 to 3600 (the minute in the name, as the CronJob controller names its Jobs).
    assert [a for a, _, _ in jobs] == [0.0, 600.0, 1200.0, 1800.0, 2400.0, 3000.0, 3600.0]
    assert jobs[1][1] == "default/nightly-28928170-0" and all(e == a + 120 for a, _, e in jobs)


def test_forbid_skips_a_tick_while_the_previous_job_runs(run_replay: Runner) -> None:
    (run,) = run_replay(node("n1", cpu="4") + _cron("Forbid"), CRON_TRACE.format(d=900))
    starts = sorted(p.arrival for p in run.pods if p.key.startswith("default/nightly-"))
    # Each run lasts 15 minutes: the tick 10 minutes after a start finds it still running.
    assert starts == [0.0, 1200.0, 2400.0, 3600.0]
