"""Job and CronJob: the pods a Job starts at once (min(parallelism, completions)); a CronJob's first Job."""

from __future__ import annotations

from typing import Any

from kubesched.workloads.model import Child, Cluster, controller_ref, labels_of, pod_from_template, wire

JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
CONTROLLER_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


def started_at_once(spec: Any) -> int:
    """Pods a Job runs at the start: parallelism (default 1), at most completions when those are set."""
    if spec.suspend:
        return 0
    parallelism = 1 if spec.parallelism is None else spec.parallelism
    if spec.completions is None:
        return parallelism
    return min(parallelism, spec.completions)


def job_children(job: Any, cluster: Cluster) -> list[Child]:
    meta, spec = job.metadata, job.spec
    owner = controller_ref("batch/v1", "Job", meta)
    indexed = spec.completion_mode == "Indexed"
    have = len(cluster.owned_pods("Job", meta))
    out: list[Child] = []
    for i in range(have, started_at_once(spec)):
        prefix = f"{meta.name}-{i}-" if indexed else f"{meta.name}-"
        raw = pod_from_template(spec.template, meta.namespace, owner, generate_name=prefix)
        labels = labels_of(raw)
        for k in JOB_NAME_LABELS:
            labels[k] = meta.name
        for k in CONTROLLER_UID_LABELS:
            labels[k] = meta.uid
        if indexed:
            labels[COMPLETION_INDEX] = str(i)
            raw["metadata"].setdefault("annotations", {})[COMPLETION_INDEX] = str(i)
            raw["spec"].setdefault("hostname", f"{meta.name}-{i}")
        out.append(Child("Pod", raw))
    return out


def cron_job_children(cj: Any, cluster: Cluster) -> list[Child]:
    """The Job of the first schedule (named after its minute, as the CronJob controller names it)."""
    meta, spec = cj.metadata, cj.spec
    if spec.suspend:
        return []
    tmpl = spec.job_template
    jmeta: dict[str, Any] = {
        "name": f"{meta.name}-{int(cluster.start // 60)}",
        "namespace": meta.namespace,
        "ownerReferences": [controller_ref("batch/v1", "CronJob", meta)],
    }
    if tmpl.metadata.labels:
        jmeta["labels"] = dict(tmpl.metadata.labels)
    if tmpl.metadata.annotations:
        jmeta["annotations"] = dict(tmpl.metadata.annotations)
    return [Child("Job", {"apiVersion": "batch/v1", "kind": "Job", "metadata": jmeta, "spec": wire(tmpl.spec)})]
