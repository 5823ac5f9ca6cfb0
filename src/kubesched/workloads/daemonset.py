"""DaemonSet: a pod for each node it should run on, pinned there by node affinity, tolerating node conditions."""

from __future__ import annotations

from typing import Any

from kubesched.api.core import Pod
from kubesched.api.decode import decode
from kubesched.plugins.nodeaffinity import RequiredNodeAffinity
from kubesched.workloads.model import Child, Cluster, controller_ref, labels_of, pod_from_template, with_node_names
from kubesched.workloads.naming import template_hash

TEMPLATE_GENERATION_LABEL = "pod-template-generation"
REVISION_LABEL = "controller-revision-hash"

# What the DaemonSet controller adds to every pod (util.AddOrUpdateDaemonPodTolerations), in its order.
_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
_HOST_NETWORK_TOLERATION = ("node.kubernetes.io/network-unavailable", "NoSchedule")


def _add_toleration(tolerations: list[dict[str, Any]], key: str, effect: str) -> None:
    """AddOrUpdateTolerationInPodSpec: replace one with the same key, operator, value and effect, else append."""
    new = {"key": key, "operator": "Exists", "effect": effect}
    for i, t in enumerate(tolerations):
        same = (t.get("key", ""), t.get("operator", ""), t.get("value", ""), t.get("effect", ""))
        if same == (key, "Exists", "", effect):
            tolerations[i] = new  # (its tolerationSeconds, if any, dropped)
            return
    tolerations.append(new)


def _pin(spec: dict[str, Any], node: str) -> None:
    """ReplaceDaemonSetPodNodeNameNodeAffinity: the required node selector becomes metadata.name In [node]."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    affinity = spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}


def _should_run(pod: Pod, node: Any) -> bool:
    """NodeShouldRunDaemonPod's predicates: the node name, the required node affinity, the taints."""
    if pod.spec.node_name and pod.spec.node_name != node.metadata.name:
        return False
    if not RequiredNodeAffinity(pod).matches(node):
        return False
    for taint in node.spec.taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(t.tolerates(taint) for t in pod.spec.tolerations):
            return False
    return True


def daemon_set_children(ds: Any, cluster: Cluster) -> list[Child]:
    meta, spec = ds.metadata, ds.spec
    owner = controller_ref("apps/v1", "DaemonSet", meta)
    revision = f"{meta.name}-{template_hash(spec.template)}"
    owned = {p.spec.node_name for p in cluster.owned_pods("DaemonSet", meta)}
    owned |= {pinned_node(p) for p in cluster.owned_pods("DaemonSet", meta)}
    out: list[Child] = []
    for node in with_node_names(cluster.nodes):
        name = node.metadata.name
        if name in owned:
            continue
        raw = pod_from_template(spec.template, meta.namespace, owner, generate_name=f"{meta.name}-")
        labels_of(raw).update({REVISION_LABEL: revision, TEMPLATE_GENERATION_LABEL: "1"})
        pspec = raw["spec"]
        tolerations = pspec.setdefault("tolerations", [])
        for key, effect in _TOLERATIONS:
            _add_toleration(tolerations, key, effect)
        if pspec.get("hostNetwork"):
            _add_toleration(tolerations, *_HOST_NETWORK_TOLERATION)
        if not _should_run(decode("Pod", raw), node):
            continue
        _pin(pspec, name)
        out.append(Child("Pod", raw))
    return out


def pinned_node(pod: Pod) -> str:
    """The node a daemon pod's matchFields term names ("" if none)."""
    aff = pod.spec.affinity
    req = aff.node_affinity.required_during_scheduling_ignored_during_execution if aff and aff.node_affinity else None
    for term in req.node_selector_terms if req is not None else []:
        for f in term.match_fields:
            if f.key == "metadata.name" and f.operator == "In" and len(f.values) == 1:
                return str(f.values[0])
    return ""
