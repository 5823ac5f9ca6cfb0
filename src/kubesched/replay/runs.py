"""What a trace starts: its pods (TraceEntry), the Jobs its rows run (JobRun) and the CronJobs that
start Jobs on schedule (CronRun). Apart from reading the trace file: the replay engine drives these."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from kubesched.api.core import Pod
from kubesched.api.meta import ObjectMeta
from kubesched.cluster.clock import EPOCH


@dataclass(frozen=True)
class TraceEntry:
    """One pod of a trace: the pod to create at `time` and how long it runs once bound."""

    line: int
    time: float
    key: str
    pod: Pod
    duration: float | None
    # The Job run this pod belongs to (a row whose template names a Job), else None.
    job: JobRun | None = None

    @property
    def namespace(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.key.split("/", 1)[1]


@dataclass(frozen=True)
class JobTemplate:
    """A Job of the cluster file that trace rows start: the pod its controller makes, and its counts."""

    key: str
    pod: Pod
    parallelism: int
    completions: int | None
    backoff_limit: int


@dataclass
class JobRun:
    """One trace row's Job: `parallelism` pods at a time, each running the row's duration; as one finishes
    the next starts, until `completions` have succeeded (without completions, the first ones only); a pod
    lost to preemption is replaced while failures stay within backoffLimit."""

    line: int
    namespace: str
    name: str
    job: JobTemplate
    priority_class: str
    duration: float | None
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    made: int = 0

    def start(self, now: float) -> list[TraceEntry]:
        """The pods to create now: up to parallelism running, no more than completions need."""
        out = []
        while self.active < self.job.parallelism and self._wants_more():
            out.append(self._next_pod(now))
        return out

    def _next_pod(self, now: float) -> TraceEntry:
        name = f"{self.name}-{self.made}"
        pod = instantiate(self.job.pod, self.namespace, name, self.priority_class)
        self.active += 1
        self.made += 1
        return TraceEntry(self.line, now, f"{self.namespace}/{name}", pod, self.duration, self)

    def _wants_more(self) -> bool:
        """Completions not yet covered by succeeded and running pods (a work queue: its first pods only)."""
        if self.job.completions is None:
            return self.made < self.job.parallelism
        return self.succeeded + self.active < self.job.completions

    def finished(self, now: float) -> list[TraceEntry]:
        self.active -= 1
        self.succeeded += 1
        return self.start(now) if self.job.completions is not None else []

    def lost(self, now: float) -> list[TraceEntry]:
        """A pod preempted: a failure; replaced while failures are within backoffLimit."""
        self.active -= 1
        self.failed += 1
        if self.failed > self.job.backoff_limit:
            return []
        if self.job.completions is None:
            return [self._next_pod(now)]  # a work queue: the lost pod's work is still to do
        return self.start(now)


@dataclass(frozen=True)
class CronTemplate:
    """A CronJob of the cluster file: its Job (as a JobTemplate), schedule and concurrency policy."""

    key: str
    job: JobTemplate
    schedule: str
    time_zone: str | None
    concurrency_policy: str


@dataclass
class CronRun:
    """One trace row's CronJob: from the row's time, a Job at each tick of its schedule, named after the
    tick's minute as the CronJob controller names them; Forbid (and Replace, run as Forbid) skips a tick
    while the previous Job still has pods to finish."""

    line: int
    namespace: str
    name: str
    cron: CronTemplate
    priority_class: str
    duration: float | None
    next_tick: Callable[[float], float]
    runs: list[JobRun] = field(default_factory=list)

    def tick(self, t: float) -> list[TraceEntry]:
        if self.cron.concurrency_policy in ("Forbid", "Replace") and any(r.active for r in self.runs):
            return []
        minute = int((EPOCH.timestamp() + t) // 60)
        run = JobRun(
            self.line, self.namespace, f"{self.name}-{minute}", self.cron.job, self.priority_class, self.duration
        )
        self.runs.append(run)
        return run.start(t)


def instantiate(template: Pod, namespace: str, name: str, priority_class: str) -> Pod:
    """The template's labels, annotations, owners and spec under a new name; no status, not bound."""
    meta = template.metadata
    new_meta = ObjectMeta(
        name=name,
        namespace=namespace,
        labels=dict(meta.labels),
        annotations=dict(meta.annotations),
        owner_references=list(meta.owner_references),
    )
    spec = template.spec
    if priority_class:
        spec = msgspec.structs.replace(spec, priority_class_name=priority_class, priority=None)
    return Pod(metadata=new_meta, spec=spec)
