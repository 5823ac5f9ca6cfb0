"""Reading a replay's inputs: the cluster file, the optional templates file, the trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesched.api.intake import FieldValidation
from kubesched.errors import InputError
from kubesched.replay.trace import CronTemplate, JobTemplate, Templates, Trace, TraceEntry, load_trace
from kubesched.scenario import Manifest, Scenario, load_scenario


def load_templates_file(
    path: str | Path, validation: FieldValidation = FieldValidation.STRICT, cluster: Scenario | None = None
) -> list[Manifest]:
    """Pod manifests (multi-document YAML) for the trace to copy; nothing else is allowed there. They are
    admitted into `cluster` (its PriorityClasses), whose notes get the loader's."""
    sc = load_scenario(path, validation=validation, existing=cluster)
    if cluster is not None:
        cluster.notes += sc.notes
    pods = []
    for m in sc.manifests:
        if m.kind != "Pod":
            raise InputError(sc.source, "a templates file holds only Pods", m.ref, "kind")
        if m.obj.spec.node_name:
            raise InputError(sc.source, "a template must not be bound: remove nodeName", m.ref, "spec.nodeName")
        pods.append(m)
    return pods


def load_inputs(
    cluster: str | Path,
    trace: str | Path,
    templates: str | Path | None = None,
    validation: FieldValidation = FieldValidation.STRICT,
    seed: int = 0,
) -> tuple[Scenario, Trace]:
    """The cluster (its pending pods become templates, not pods) and the trace, checked against each other.
    The scenario's notes include the templates file's."""
    scenario = load_scenario(cluster, validation=validation, seed=seed)
    pending = scenario.pending_pods()
    manifests = [m for m in pending if not m.generated]
    sources = [scenario.source]
    if templates is not None:
        manifests += load_templates_file(templates, validation, scenario)
        sources.append(str(templates))
    classes = {m.obj.metadata.name for m in scenario.manifests if m.kind == "PriorityClass"}
    jobs = job_templates(scenario)
    tr = load_trace(trace, Templates(manifests, sources, jobs, cron_templates(scenario, jobs)), classes)
    if not tr.entries and not tr.crons:
        raise InputError(tr.source, "the trace has no pods")
    # The pods the cluster file's Deployments, StatefulSets, DaemonSets ... make run from the start (a Job's
    # wait for a trace row to start it).
    started = [
        TraceEntry(0, 0.0, f"{m.obj.metadata.namespace or 'default'}/{m.obj.metadata.name}", m.obj, None)
        for m in pending
        if m.generated and not _owned_by_job(m)
    ]
    tr.entries[:0] = started
    return scenario, tr


def _owned_by_job(m: Manifest) -> bool:
    return any(r.controller and r.kind == "Job" for r in m.obj.metadata.owner_references)


def cron_templates(scenario: Scenario, jobs: list[JobTemplate]) -> list[CronTemplate]:
    """The cluster file's CronJobs, each with the Job it makes (its first, made as simulations make it)."""
    by_key = {j.key: j for j in jobs}
    by_owner: dict[tuple[str, str], JobTemplate] = {}
    for m in scenario.manifests:
        if m.kind == "Job" and m.generated:
            ns = m.obj.metadata.namespace or "default"
            job = by_key.get(f"{ns}/{m.obj.metadata.name}")
            ref = next((r for r in m.obj.metadata.owner_references if r.controller and r.kind == "CronJob"), None)
            if job is not None and ref is not None:
                by_owner[(ns, ref.name)] = job
    out = []
    for m in scenario.manifests:
        if m.kind != "CronJob":
            continue
        ns = m.obj.metadata.namespace or "default"
        job = by_owner.get((ns, m.obj.metadata.name))
        if job is None:
            continue  # suspended, or its Job makes no pods
        spec = m.obj.spec
        key = f"{ns}/{m.obj.metadata.name}"
        out.append(CronTemplate(key, job, spec.schedule, spec.time_zone, spec.concurrency_policy or "Allow"))
    return out


def job_templates(scenario: Scenario) -> list[JobTemplate]:
    """The cluster file's Jobs (and its CronJobs' first Jobs) that make pods, each with the pod it makes."""
    pods: dict[tuple[str, str], Any] = {}
    for m in scenario.manifests:
        if m.kind == "Pod" and m.generated:
            for r in m.obj.metadata.owner_references:
                if r.controller and r.kind == "Job":
                    pods.setdefault((m.obj.metadata.namespace or "default", r.name), m.obj)
    out = []
    for m in scenario.manifests:
        if m.kind != "Job":
            continue
        ns = m.obj.metadata.namespace or "default"
        pod = pods.get((ns, m.obj.metadata.name))
        if pod is None:
            continue  # suspended, or parallelism 0: it makes no pods
        spec = m.obj.spec
        parallelism = 1 if spec.parallelism is None else spec.parallelism
        backoff = 6 if spec.backoff_limit is None else spec.backoff_limit
        out.append(JobTemplate(f"{ns}/{m.obj.metadata.name}", pod, parallelism, spec.completions, backoff))
    return out
