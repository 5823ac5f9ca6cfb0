"""Which controller makes what: a workload's children, in the order its controller would create them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.workloads.daemonset import daemon_set_children
from kubesched.workloads.deployment import deployment_children
from kubesched.workloads.job import cron_job_children, job_children, started_at_once
from kubesched.workloads.model import Child, Cluster
from kubesched.workloads.replicaset import replica_set_children, replication_controller_children
from kubesched.workloads.statefulset import stateful_set_children

_CONTROLLERS: dict[str, Callable[[Any, Cluster], list[Child]]] = {
    "Deployment": lambda d, _cluster: deployment_children(d),
    "ReplicaSet": replica_set_children,
    "ReplicationController": replication_controller_children,
    "StatefulSet": stateful_set_children,
    "DaemonSet": daemon_set_children,
    "Job": job_children,
    "CronJob": cron_job_children,
}
WORKLOAD_KINDS = frozenset(_CONTROLLERS)


def children(kind: str, obj: Any, cluster: Cluster) -> list[Child]:
    """What the kind's controller creates for `obj` given the declared cluster (nothing for other kinds)."""
    make = _CONTROLLERS.get(kind)
    return make(obj, cluster) if make is not None else []


def workload_name(kind: str, name: str) -> str:
    """kubectl's kind/name: deployment/web."""
    return f"{kind.lower()}/{name}"


def note(kind: str, obj: Any) -> str | None:
    """What a simulation, where no time passes, leaves out of a workload (None: nothing)."""
    spec = obj.spec
    if kind == "CronJob" and not spec.suspend:
        return "a CronJob runs on its schedule: the simulation creates the Job of its first run only"
    if kind == "Job" and spec.completions is not None and started_at_once(spec) < spec.completions:
        return (
            f"{started_at_once(spec)} of its {spec.completions} completions start at once: the simulation places "
            "those (the next start as pods finish)"
        )
    if kind in ("Deployment", "Job", "CronJob") and (getattr(spec, "paused", False) or getattr(spec, "suspend", False)):
        return f"{'paused' if getattr(spec, 'paused', False) else 'suspended'}: its controller creates no pods"
    return None
