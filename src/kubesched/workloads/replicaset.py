"""ReplicaSet and ReplicationController: `replicas` pods named <owner>-<random>, minus the pods they already own."""

from __future__ import annotations

from typing import Any

from kubesched.api.core import Pod
from kubesched.api.labels import Selector, label_selector
from kubesched.workloads.model import Child, Cluster, controller_ref, pod_from_template


def _adoptable(cluster: Cluster, namespace: str, selects: Any) -> int:
    """Orphans the controller adopts: same namespace, no controller, labels its selector matches."""
    return sum(1 for p in cluster.orphans(namespace) if p.metadata.deletion_timestamp is None and selects(p))


def _missing(kind: str, meta: Any, replicas: int, cluster: Cluster, selects: Any) -> int:
    have = len(cluster.owned_pods(kind, meta)) + _adoptable(cluster, meta.namespace, selects)
    return max(replicas - have, 0)


def replica_set_children(rs: Any, cluster: Cluster) -> list[Child]:
    meta, spec = rs.metadata, rs.spec
    replicas = 1 if spec.replicas is None else spec.replicas
    sel = label_selector(spec.selector)

    def selects(p: Pod) -> bool:
        return not sel.is_empty() and sel.matches(p.metadata.labels)

    owner = controller_ref("apps/v1", "ReplicaSet", meta)
    count = _missing("ReplicaSet", meta, replicas, cluster, selects)
    template = spec.template
    return [
        Child("Pod", pod_from_template(template, meta.namespace, owner, generate_name=f"{meta.name}-"))
        for _ in range(count)
    ]


def replication_controller_children(rc: Any, cluster: Cluster) -> list[Child]:
    meta, spec = rc.metadata, rc.spec
    if spec.template is None:
        return []
    replicas = 1 if spec.replicas is None else spec.replicas
    # An RC without a selector selects its template's labels (the API server defaults it so).
    sel = Selector.from_map(spec.selector or spec.template.metadata.labels)

    def selects(p: Pod) -> bool:
        return sel.matches(p.metadata.labels)

    owner = controller_ref("v1", "ReplicationController", meta)
    count = _missing("ReplicationController", meta, replicas, cluster, selects)
    return [
        Child("Pod", pod_from_template(spec.template, meta.namespace, owner, generate_name=f"{meta.name}-"))
        for _ in range(count)
    ]
