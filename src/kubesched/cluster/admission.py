"""What the API server does to an object before storing it: defaulting and admission.

Emulated here for the embedded cluster (pkg/apis/core/v1 defaults, the Priority
admission plugin, namespace labels, the SchedulingGated condition), so that a
manifest loaded from YAML looks as it would after `kubectl apply`.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from kubesched.api.core import (
    Affinity,
    Container,
    Namespace,
    Node,
    Pod,
    PodAffinityTerm,
    PodCondition,
    PodSpec,
    PodStatus,
    ResourceRequirements,
    WeightedPodAffinityTerm,
)
from kubesched.api.meta import LabelSelector, LabelSelectorRequirement
from kubesched.api.quantity import quantity_text
from kubesched.api.resources import (
    aggregate_containers,
    is_hugepage_resource_name,
    is_supported_pod_level_resource,
    parse_resource_list,
)
from kubesched.api.scheduling import SYSTEM_PRIORITY_CLASSES, PriorityClass
from kubesched.api.storage import StorageClass

DEFAULT_SCHEDULER_NAME = "default-scheduler"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
SCHEDULING_GATED = "SchedulingGated"
SCHEDULING_GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


class AdmissionError(ValueError):
    """The API server would refuse the object (HTTP 403/422)."""


def _default_requirements(r: ResourceRequirements) -> ResourceRequirements:
    """Requests copied from limits for every resource that has a limit but no request."""
    if r.limits.keys() <= r.requests.keys():  # nothing missing (the usual case), checked without a loop
        return r
    missing = {k: v for k, v in r.limits.items() if k not in r.requests}
    if not missing:
        return r
    return msgspec.structs.replace(r, requests={**r.requests, **missing})


def _default_container(c: Container, host_network: bool) -> Container:
    """The container with its requests and ports defaulted; `c` itself when nothing changes (every pod's
    create runs it on every container: no dict of changes, no list built to find none)."""
    res = c.resources
    if not res.limits.keys() <= res.requests.keys():
        res = _default_requirements(res)
    ports = c.ports
    if ports:
        if host_network and any(p.host_port == 0 for p in ports):
            ports = [msgspec.structs.replace(p, host_port=p.container_port) if p.host_port == 0 else p for p in ports]
        for port in ports:
            if not port.protocol:
                ports = [p if p.protocol else msgspec.structs.replace(p, protocol="TCP") for p in ports]
                break
    if res is c.resources and ports is c.ports:
        return c
    return msgspec.structs.replace(c, resources=res, ports=ports)


def _default_pod_level_resources(pod: Pod) -> ResourceRequirements | None:
    """defaultHugePagePodLimits then defaultPodRequests (PodLevelResources, on by default in v1.34).

    Runs on the pod whose containers are already defaulted. Only pods that set
    pod-level resources are touched. A missing pod-level cpu/memory request
    takes the containers' aggregated requests when some container requests it,
    else the pod-level limit; hugepages (not overcommittable) take the limit,
    which itself defaults to the containers' aggregated hugepages limits.
    """
    res = pod.spec.resources
    if res is None or (not res.limits and not res.requests):
        return res
    limits = dict(res.limits)
    ctr_limits = aggregate_containers(pod, lambda c: parse_resource_list(c.resources.limits))
    for key, q in ctr_limits.items():
        if is_hugepage_resource_name(key) and key not in res.requests and key not in limits:
            limits[key] = quantity_text(q)
    if not limits:
        return res
    requests = dict(res.requests)
    for key, q in aggregate_containers(pod).items():
        if key not in requests and is_supported_pod_level_resource(key) and not is_hugepage_resource_name(key):
            requests[key] = quantity_text(q)
    for key, v in limits.items():
        if key not in requests and is_supported_pod_level_resource(key):
            requests[key] = v
    return msgspec.structs.replace(res, limits=limits, requests=requests)


def default_pod(pod: Pod) -> Pod:
    """The pod as the API server's defaulting leaves it."""
    spec, status = defaulted_spec_status(pod)
    meta = pod.metadata if pod.metadata.namespace else msgspec.structs.replace(pod.metadata, namespace="default")
    return msgspec.structs.replace(pod, metadata=meta, spec=spec, status=status)


def defaulted_spec_status(pod: Pod, classes: dict[str, PriorityClass] | None = None) -> tuple[PodSpec, PodStatus]:
    """default_pod's spec and status; with `classes`, admit_priority's too, in the same replace of the spec.

    The API server's create (EmbeddedClient) sets the metadata with its own stamp: a replace per level and
    change cost it as much as all the rest. Every field is passed by keyword, changed or not (a dict of
    changes passed as **changes costs more than the replace itself).
    """
    spec = pod.spec
    host_network = spec.host_network
    containers = [_default_container(c, host_network) for c in spec.containers]
    init_containers = (
        [_default_container(c, host_network) for c in spec.init_containers] if spec.init_containers else []
    )
    affinity = spec.affinity
    if affinity is not None:
        affinity = _affinity_with_label_keys(affinity, pod.metadata.labels)
    resources = spec.resources
    if resources is not None:
        # Pod-level defaults read the containers' defaulted requests and limits.
        resources = _default_pod_level_resources(
            msgspec.structs.replace(
                pod, spec=msgspec.structs.replace(spec, containers=containers, init_containers=init_containers)
            )
        )
    priority, policy, class_name = spec.priority, spec.preemption_policy, spec.priority_class_name
    if classes is not None:
        admitted = _admitted_priority(pod, classes)
        if admitted is not None:
            priority, policy, class_name = admitted
    status = pod.status
    conditions = status.conditions
    if spec.scheduling_gates and not spec.node_name:
        cond = PodCondition(
            type="PodScheduled", status="False", reason=SCHEDULING_GATED, message=SCHEDULING_GATED_MESSAGE
        )
        conditions = [*conditions, cond]
    phase = status.phase or ("Pending" if not spec.node_name else "Running")
    if conditions is not status.conditions or phase != status.phase:
        status = msgspec.structs.replace(status, phase=phase, conditions=conditions)
    spec = msgspec.structs.replace(
        spec,
        containers=containers,
        init_containers=init_containers,
        affinity=affinity,
        scheduler_name=spec.scheduler_name or DEFAULT_SCHEDULER_NAME,
        resources=resources,
        priority=priority,
        preemption_policy=policy,
        priority_class_name=class_name,
    )
    return spec, status


def admit_priority(pod: Pod, classes: dict[str, PriorityClass]) -> Pod:
    """The Priority admission plugin: priority and preemptionPolicy from the pod's PriorityClass."""
    admitted = _admitted_priority(pod, classes)
    if admitted is None:
        return pod
    priority, policy, class_name = admitted
    spec = msgspec.structs.replace(
        pod.spec, priority=priority, preemption_policy=policy, priority_class_name=class_name
    )
    return msgspec.structs.replace(pod, spec=spec)


def _admitted_priority(pod: Pod, classes: dict[str, PriorityClass]) -> tuple[int | None, str, str] | None:
    """The priority, preemptionPolicy and priorityClassName admit_priority gives the pod; None: its own."""
    spec = pod.spec
    name = spec.priority_class_name
    if name:
        if name in SYSTEM_PRIORITY_CLASSES and name not in classes:
            value, policy = SYSTEM_PRIORITY_CLASSES[name], PREEMPT_LOWER_PRIORITY
        else:
            pc = classes.get(name)
            if pc is None:
                raise AdmissionError(
                    f'pods "{pod.metadata.name}" is forbidden: no PriorityClass with name {name} was found'
                )
            value, policy = pc.value, pc.preemption_policy or PREEMPT_LOWER_PRIORITY
    elif spec.priority is not None:
        # Set directly in the manifest (a simulation convenience): keep it.
        return None if spec.preemption_policy else (spec.priority, PREEMPT_LOWER_PRIORITY, name)
    else:
        default = global_default_class(classes) if classes else None
        if default is None:
            value, policy = 0, PREEMPT_LOWER_PRIORITY
        else:
            value, policy = default.value, default.preemption_policy or PREEMPT_LOWER_PRIORITY
            name = default.metadata.name
    return value, spec.preemption_policy or policy, name


def priority_refusal(pod: Pod, classes: dict[str, PriorityClass]) -> str | None:
    """The Priority admission plugin's refusal of a pod on create, in its words; None if it admits it.

    admit_priority fills priority and preemptionPolicy in; a pod that sets them itself must agree with
    what the plugin computes, or the API server refuses it.
    """
    spec = pod.spec
    name = spec.priority_class_name
    if not name and spec.priority is None and not spec.preemption_policy:
        return None  # nothing named, nothing to disagree with (most pods)
    if name:
        if name in SYSTEM_PRIORITY_CLASSES and name not in classes:
            value, policy = SYSTEM_PRIORITY_CLASSES[name], PREEMPT_LOWER_PRIORITY
        elif name in classes:
            value, policy = classes[name].value, classes[name].preemption_policy or PREEMPT_LOWER_PRIORITY
        else:
            return f'pods "{pod.metadata.name}" is forbidden: no PriorityClass with name {name} was found'
    else:
        default = global_default_class(classes)
        value = default.value if default is not None else 0
        policy = (default.preemption_policy if default is not None else "") or PREEMPT_LOWER_PRIORITY
    if spec.priority is not None and spec.priority != value:
        return (
            f'pods "{pod.metadata.name}" is forbidden: the integer value of priority ({spec.priority}) must not be '
            f"provided in pod spec; {_COMPUTED} {value} from the given PriorityClass name"
        )
    if spec.preemption_policy and spec.preemption_policy != policy:
        return (
            f'pods "{pod.metadata.name}" is forbidden: the string value of PreemptionPolicy '
            f"({spec.preemption_policy}) must not be provided in pod spec; {_COMPUTED} {policy} from the given "
            "PriorityClass name"
        )
    return None


_COMPUTED = "priority admission controller computed"


def global_default_class(classes: dict[str, PriorityClass]) -> PriorityClass | None:
    """The globalDefault class; with several (which the API server forbids) the lowest value wins."""
    defaults = [pc for pc in classes.values() if pc.global_default]
    if not defaults:
        return None
    return min(defaults, key=lambda pc: (pc.value, pc.metadata.name))


def default_node(node: Node) -> Node:
    st = node.status
    if not st.allocatable and st.capacity:
        node = msgspec.structs.replace(node, status=msgspec.structs.replace(st, allocatable=dict(st.capacity)))
    return node


def default_namespace(ns: Namespace) -> Namespace:
    labels = ns.metadata.labels
    if labels.get(NAMESPACE_NAME_LABEL) == ns.metadata.name:
        return ns
    meta = msgspec.structs.replace(ns.metadata, labels={**labels, NAMESPACE_NAME_LABEL: ns.metadata.name})
    return msgspec.structs.replace(ns, metadata=meta)


def default_storage_class(sc: StorageClass) -> StorageClass:
    if sc.volume_binding_mode:
        return sc
    return msgspec.structs.replace(sc, volume_binding_mode="Immediate")


def _merge_keys(term: PodAffinityTerm, labels: Mapping[str, str]) -> PodAffinityTerm:
    if (not term.match_label_keys and not term.mismatch_label_keys) or term.label_selector is None:
        return term
    extra: list[LabelSelectorRequirement] = []
    for key in term.match_label_keys:
        if key in labels:
            extra.append(LabelSelectorRequirement(key=key, operator="In", values=[labels[key]]))
    for key in term.mismatch_label_keys:
        if key in labels:
            extra.append(LabelSelectorRequirement(key=key, operator="NotIn", values=[labels[key]]))
    if not extra:
        return term
    sel = term.label_selector
    merged = LabelSelector(match_labels=dict(sel.match_labels), match_expressions=[*sel.match_expressions, *extra])
    return msgspec.structs.replace(term, label_selector=merged)


def apply_pod_affinity_label_keys(pod: Pod) -> Pod:
    """kube-apiserver's pod creation step: merge matchLabelKeys (In) / mismatchLabelKeys (NotIn) into selectors.

    The pod's own label values are added to each term's labelSelector; terms
    without a labelSelector are left alone (a nil selector matches nothing).
    Returns `pod` itself when nothing changes.
    """
    aff = pod.spec.affinity
    if aff is None:
        return pod
    new_aff = _affinity_with_label_keys(aff, pod.metadata.labels)
    if new_aff is aff:
        return pod
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, affinity=new_aff))


def _affinity_with_label_keys(aff: Affinity, labels: Mapping[str, str]) -> Affinity:
    """apply_pod_affinity_label_keys on a pod's affinity and labels; `aff` itself when nothing changes."""
    if aff.pod_affinity is None and aff.pod_anti_affinity is None:
        return aff
    changed = False

    def req(terms: list[PodAffinityTerm]) -> list[PodAffinityTerm]:
        nonlocal changed
        out = [_merge_keys(t, labels) for t in terms]
        changed = changed or any(a is not b for a, b in zip(out, terms, strict=True))
        return out

    def pref(terms: list[WeightedPodAffinityTerm]) -> list[WeightedPodAffinityTerm]:
        nonlocal changed
        out = []
        for t in terms:
            m = _merge_keys(t.pod_affinity_term, labels)
            if m is not t.pod_affinity_term:
                changed = True
                t = msgspec.structs.replace(t, pod_affinity_term=m)
            out.append(t)
        return out

    pa, paa = aff.pod_affinity, aff.pod_anti_affinity
    new_pa = (
        msgspec.structs.replace(
            pa,
            required_during_scheduling_ignored_during_execution=req(
                pa.required_during_scheduling_ignored_during_execution
            ),
            preferred_during_scheduling_ignored_during_execution=pref(
                pa.preferred_during_scheduling_ignored_during_execution
            ),
        )
        if pa is not None
        else None
    )
    new_paa = (
        msgspec.structs.replace(
            paa,
            required_during_scheduling_ignored_during_execution=req(
                paa.required_during_scheduling_ignored_during_execution
            ),
            preferred_during_scheduling_ignored_during_execution=pref(
                paa.preferred_during_scheduling_ignored_during_execution
            ),
        )
        if paa is not None
        else None
    )
    if not changed:
        return aff
    return msgspec.structs.replace(aff, pod_affinity=new_pa, pod_anti_affinity=new_paa)
