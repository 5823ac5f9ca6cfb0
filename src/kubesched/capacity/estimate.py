"""`kubesched capacity`: how many replicas of a pod fit in a cluster, and where (cluster-capacity's question).

As kubernetes-sigs/cluster-capacity does, replicas of the pod (named
`<name>-0`, `<name>-1`, ...) are created one at a time, each only after the
previous one was placed, and every one goes through the real scheduling cycle:
filters, scores, preemption when priorities allow it. The first replica that
does not fit ends the run, its FailedScheduling message being the stop reason;
`--max N` ends it after N replicas ("LimitReached"). The cluster file is a
scenario: its own pending pods are scheduled first, so the answer is "how many
more fit once those are placed". Devices count as resources do: a replica's
`resourceClaimTemplateName` gets it a claim of its own, as the resourceclaim
controller would make it, so replicas stop when the matching devices run out;
a `resourceClaimName` is one claim that every replica shares.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesched.api.intake import FieldValidation
from kubesched.api.quantity import format_quantity
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.errors import InputError
from kubesched.framework.types import PodInfo
from kubesched.progress import SILENT, Progress
from kubesched.scenario import Manifest, Scenario, parse_scenario, read_text
from kubesched.workloads.expand import WORKLOAD_KINDS

LIMIT_REACHED = "LimitReached"
FAILED_SCHEDULING = "FailedScheduling"


@dataclass
class CapacityResult:
    pod: str  # namespace/name of the template
    requests: dict[str, str]  # what one replica asks for, as the scheduler counts it
    node_selector: dict[str, str]
    replicas: int
    nodes: dict[str, int]  # every node (in scheduling order) -> replicas placed on it
    stop_reason: str  # LimitReached, FailedScheduling, or the PodScheduled reason of the last replica
    stop_message: str
    failed_pod: str | None = None  # the replica that did not fit
    preempted: list[str] = field(default_factory=list)  # pods evicted to make room for replicas
    # The pod's spec.resourceClaims: each replica gets its own claim from a template, or shares a named claim.
    resource_claims: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "requests": dict(self.requests),
            "nodeSelector": dict(self.node_selector),
            "resourceClaims": [dict(c) for c in self.resource_claims],
            "replicas": self.replicas,
            "nodes": dict(self.nodes),
            "stop": {"reason": self.stop_reason, "message": self.stop_message, "pod": self.failed_pod},
            "preempted": list(self.preempted),
        }


def load_pod(
    path: str, validation: FieldValidation = FieldValidation.STRICT, cluster: Scenario | None = None
) -> Manifest:
    """The one Pod of `path`, decoded as scenario pods are (errors name the file, the pod and the field),
    admitted into `cluster` (its PriorityClasses)."""
    text, source = read_text(path)
    docs = parse_scenario(text, source, validation=validation, existing=cluster).manifests
    declared = [m for m in docs if not m.generated]
    if len(declared) == 1 and declared[0].kind in WORKLOAD_KINDS:
        return _workload_pod(declared[0], docs, source)
    pods = [m for m in declared if m.kind == "Pod"]
    if len(declared) != 1 or len(pods) != 1:
        kinds = ", ".join(m.kind for m in declared) or "nothing"
        raise InputError(source, f"must hold exactly one Pod or one workload (found: {kinds})")
    m = pods[0]
    if m.obj.spec.node_name:
        raise InputError(path, "must not be bound: the replicas are for the scheduler to place", m.ref, "spec.nodeName")
    return m


class WorkloadPod(Manifest):
    """The pod a workload's controller makes, with the claims a StatefulSet gives each of its pods (made for
    ordinal 0; each replica gets its own, named after it, as the StatefulSet controller names them)."""

    __slots__ = ("claims",)

    def __init__(self, obj: Any, index: int, claims: list[Any]) -> None:
        super().__init__("Pod", obj, {}, index)
        self.claims = claims


def _workload_pod(workload: Manifest, docs: list[Manifest], source: str) -> Manifest:
    """A workload's pod as its controller makes it (labels, owners, claims), named after the workload."""
    made = next((m for m in docs if m.generated and m.kind == "Pod"), None)
    if made is None:
        raise InputError(source, "its controller makes no pod to place (replicas 0, paused or suspended)", workload.ref)
    meta = msgspec.structs.replace(made.obj.metadata, name=workload.obj.metadata.name, generate_name="")
    claims = []
    if workload.kind == "StatefulSet":
        ordinal0 = {v.persistent_volume_claim.claim_name for v in made.obj.spec.volumes if v.persistent_volume_claim}
        claims = [
            m.obj for m in docs if m.generated and m.kind == "PersistentVolumeClaim" and m.obj.metadata.name in ordinal0
        ]
    return WorkloadPod(msgspec.structs.replace(made.obj, metadata=meta), workload.index, claims)


def _replica(template: Manifest, i: int) -> Manifest:
    pod = template.obj
    name = f"{pod.metadata.name}-{i}"
    meta = msgspec.structs.replace(pod.metadata, name=name, uid="", generate_name="")
    return Manifest("Pod", msgspec.structs.replace(pod, metadata=meta), {}, template.index)


def _own_claims(template: Manifest, replica: Manifest, i: int) -> list[Any]:
    """A StatefulSet replica's claims (<template>-<name>-<i>, as for its ordinal) and the replica using them."""
    if not isinstance(template, WorkloadPod) or not template.claims:
        return []
    sts = template.obj.metadata.name
    renamed = {c.metadata.name: c.metadata.name.removesuffix(f"-{sts}-0") + f"-{sts}-{i}" for c in template.claims}
    pod = replica.obj
    volumes = [
        msgspec.structs.replace(
            v,
            persistent_volume_claim=msgspec.structs.replace(
                v.persistent_volume_claim, claim_name=renamed[v.persistent_volume_claim.claim_name]
            ),
        )
        if v.persistent_volume_claim and v.persistent_volume_claim.claim_name in renamed
        else v
        for v in pod.spec.volumes
    ]
    labels = {
        **pod.metadata.labels,
        "statefulset.kubernetes.io/pod-name": pod.metadata.name,
        "apps.kubernetes.io/pod-index": str(i),
    }
    replica.obj = msgspec.structs.replace(
        pod,
        metadata=msgspec.structs.replace(pod.metadata, labels=labels),
        spec=msgspec.structs.replace(pod.spec, volumes=volumes),
    )
    return [
        msgspec.structs.replace(c, metadata=msgspec.structs.replace(c.metadata, name=renamed[c.metadata.name], uid=""))
        for c in template.claims
    ]


def capacity(
    scenario: Scenario,
    template: Manifest,
    config: KubeSchedulerConfiguration | None = None,
    max_replicas: int | None = None,
    seed: int = 0,
    pod_source: str = "--pod",
    config_source: str | None = None,
    progress: Progress = SILENT,
) -> CapacityResult:
    """Place replicas of `template` one by one until one does not fit or `max_replicas` are placed
    (`progress` sees the cluster's own pods scheduled, then the replicas placed)."""
    from kubesched.collector import collector_paused
    from kubesched.simulate.runner import Simulation

    if max_replicas is not None and max_replicas < 0:
        raise InputError("--max", f"must be 0 or more, not {max_replicas}")
    pod = template.obj
    ns = pod.metadata.namespace or "default"
    prefix = f"{pod.metadata.name}-"
    clash = sorted(
        f"{ns}/{m.obj.metadata.name}"
        for m in scenario.manifests
        if m.kind == "Pod"
        and (m.obj.metadata.namespace or "default") == ns
        and m.obj.metadata.name.startswith(prefix)
        and m.obj.metadata.name[len(prefix) :].isdigit()
    )
    if clash:
        raise InputError(
            pod_source,
            f"the replicas would be named {prefix}0, {prefix}1, ... but {', '.join(clash[:3])} already "
            "exist in the cluster: give the pod another name",
            template.ref,
            "metadata.name",
        )
    sim = Simulation(scenario, config, seed=seed, keep_scores=False, config_source=config_source)
    sim.settle(progress)
    store = sim.cluster.store
    first_deleted = len(sim.deleted)
    nodes = {ni.name: 0 for ni in sim.scheduler.snapshot.nodes} or {n.metadata.name: 0 for n in store.list("Node")}
    placed = 0
    stop_reason, stop_message, failed = LIMIT_REACHED, "", None
    stage = progress.stage("placing replicas", max_replicas, "replicas")
    with collector_paused():
        while True:
            stage.update(placed)
            if max_replicas is not None and placed >= max_replicas:
                stop_message = f"Maximum number of pods simulated: {max_replicas}"
                break
            replica = _replica(template, placed)
            try:
                for claim in _own_claims(template, replica, placed):
                    sim.cluster.client.create("PersistentVolumeClaim", claim)
                sim._create(replica)
            except InputError as err:
                # The API server refused the replica (e.g. an unknown priorityClassName): the pod file's fault.
                raise InputError(pod_source, err.message, template.ref) from None
            sim.run_until_settled()
            key = f"{ns}/{replica.obj.metadata.name}"
            now = store.find("Pod", key)
            if now is not None and now.spec.node_name:
                nodes[now.spec.node_name] = nodes.get(now.spec.node_name, 0) + 1
                placed += 1
                continue
            failed = key
            cond = next((c for c in now.status.conditions if c.type == "PodScheduled"), None) if now else None
            if cond is not None and cond.reason == "Unschedulable":
                stop_reason, stop_message = FAILED_SCHEDULING, cond.message
            elif cond is not None:
                stop_reason, stop_message = cond.reason, cond.message
            else:
                stop_reason, stop_message = "Pending", "the replica was never attempted (no profile schedules it)"
            break
    stage.finish()
    requests = PodInfo(pod).requests
    req = {"cpu": format_quantity(requests.milli_cpu, "cpu"), "memory": format_quantity(requests.memory, "memory")}
    if requests.ephemeral_storage:
        req["ephemeral-storage"] = format_quantity(requests.ephemeral_storage, "ephemeral-storage")
    for name, v in sorted(requests.scalar.items()):
        req[name] = format_quantity(v, name)
    return CapacityResult(
        f"{ns}/{pod.metadata.name}",
        req,
        dict(pod.spec.node_selector),
        placed,
        nodes,
        stop_reason,
        stop_message,
        failed,
        list(sim.deleted[first_deleted:]),
        _resource_claims(pod),
    )


def _resource_claims(pod: Any) -> list[dict[str, str]]:
    """The pod's claims as written in its spec (name plus resourceClaimName or resourceClaimTemplateName)."""
    out = []
    for pc in pod.spec.resource_claims:
        entry = {"name": pc.name}
        if pc.resource_claim_name is not None:
            entry["resourceClaimName"] = pc.resource_claim_name
        if pc.resource_claim_template_name is not None:
            entry["resourceClaimTemplateName"] = pc.resource_claim_template_name
        out.append(entry)
    return out
