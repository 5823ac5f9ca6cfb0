"""StatefulSet: pods <name>-<ordinal> with their claims <template>-<name>-<ordinal>; OrderedReady one by one."""

from __future__ import annotations

from typing import Any

from kubesched.workloads.model import Child, Cluster, controller_ref, labels_of, pod_from_template, wire
from kubesched.workloads.naming import template_hash

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"


def stateful_set_children(sts: Any, cluster: Cluster) -> list[Child]:
    """Claims and pods for the ordinals no pod holds yet; with OrderedReady each pod waits for the one before."""
    meta, spec = sts.metadata, sts.spec
    ns = meta.namespace or "default"
    replicas = 1 if spec.replicas is None else spec.replicas
    first = spec.ordinals.start if spec.ordinals is not None else 0
    ordered = (spec.pod_management_policy or "OrderedReady") == "OrderedReady"
    revision = f"{meta.name}-{template_hash(spec.template)}"
    owner = controller_ref("apps/v1", "StatefulSet", meta)
    existing = {p.metadata.name for p in cluster.pods if (p.metadata.namespace or "default") == ns}
    selector_labels = dict(spec.selector.match_labels) if spec.selector is not None else {}
    claim_names = {t.metadata.name for t in spec.volume_claim_templates}
    out: list[Child] = []
    before: str | None = None
    for ordinal in range(first, first + replicas):
        name = f"{meta.name}-{ordinal}"
        key = f"{ns}/{name}"
        if name in existing:
            before = key
            continue
        volumes: list[dict[str, Any]] = []
        for t in spec.volume_claim_templates:
            claim = f"{t.metadata.name}-{meta.name}-{ordinal}"
            volumes.append({"name": t.metadata.name, "persistentVolumeClaim": {"claimName": claim}})
            if (ns, claim) in cluster.claims:
                continue
            cmeta: dict[str, Any] = {"name": claim, "namespace": ns, "labels": {**t.metadata.labels, **selector_labels}}
            if t.metadata.annotations:
                cmeta["annotations"] = dict(t.metadata.annotations)
            retention = spec.persistent_volume_claim_retention_policy
            if retention is not None and retention.when_deleted == "Delete":
                # Deleted with the set: owned by it, though not as its controller.
                cmeta["ownerReferences"] = [{k: v for k, v in owner.items() if k != "controller"}]
            pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": cmeta, "spec": wire(t.spec)}
            out.append(Child("PersistentVolumeClaim", pvc))
            cluster.claims.add((ns, claim))
        pod = pod_from_template(spec.template, ns, owner, name=name)
        labels_of(pod).update({REVISION_LABEL: revision, POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal)})
        pspec = pod["spec"]
        pspec["hostname"] = name
        if spec.service_name:
            pspec["subdomain"] = spec.service_name
        kept = [v for v in pspec.get("volumes", []) if v.get("name") not in claim_names]
        if volumes or kept:
            pspec["volumes"] = volumes + kept
        out.append(Child("Pod", pod, before if ordered else None))
        before = key
    return out
