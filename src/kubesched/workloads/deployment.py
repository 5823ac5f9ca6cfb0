"""Deployment: one ReplicaSet <name>-<pod-template-hash> (whose pods carry the hash label); no rollouts."""

from __future__ import annotations

import math
from typing import Any

from kubesched.workloads.model import Child, controller_ref, wire
from kubesched.workloads.naming import template_hash

POD_TEMPLATE_HASH = "pod-template-hash"
DEFAULT_MAX_SURGE = "25%"


def _surge(strategy: Any, replicas: int) -> int:
    """maxSurge resolved against the replica count (a percentage rounds up), 0 for Recreate."""
    if strategy is not None and strategy.type == "Recreate":
        return 0
    ru = strategy.rolling_update if strategy is not None else None
    value = ru.max_surge if ru is not None and ru.max_surge is not None else DEFAULT_MAX_SURGE
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(replicas * int(value[:-1]) / 100)
    return int(value)


def deployment_children(d: Any) -> list[Child]:
    """The ReplicaSet the deployment controller creates first (a paused Deployment creates none)."""
    meta, spec = d.metadata, d.spec
    if spec.paused:
        return []
    replicas = 1 if spec.replicas is None else spec.replicas
    h = template_hash(spec.template)
    template = wire(spec.template)
    tmeta = template.setdefault("metadata", {})
    labels = {**tmeta.get("labels", {}), POD_TEMPLATE_HASH: h}
    tmeta["labels"] = labels
    selector = wire(spec.selector)
    selector["matchLabels"] = {**selector.get("matchLabels", {}), POD_TEMPLATE_HASH: h}
    rs_spec: dict[str, Any] = {"replicas": replicas, "selector": selector, "template": template}
    if spec.min_ready_seconds:
        rs_spec["minReadySeconds"] = spec.min_ready_seconds
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{meta.name}-{h}",
            "namespace": meta.namespace,
            "labels": dict(labels),
            "annotations": {
                "deployment.kubernetes.io/desired-replicas": str(replicas),
                "deployment.kubernetes.io/max-replicas": str(replicas + _surge(spec.strategy, replicas)),
                "deployment.kubernetes.io/revision": "1",
            },
            "ownerReferences": [controller_ref("apps/v1", "Deployment", meta)],
        },
        "spec": rs_spec,
    }
    return [Child("ReplicaSet", rs)]
