"""The scale subresource (autoscaling/v1 Scale) of Deployments, ReplicaSets, StatefulSets and
ReplicationControllers: what `kubectl scale` reads and writes."""

from __future__ import annotations

from typing import Any

SCALE_GROUP, SCALE_VERSION = "autoscaling", "v1"


def scale_view(parent: dict[str, Any], kind: str) -> dict[str, Any]:
    """The Scale of an object: its replicas (default 1) and its selector as a string."""
    meta = parent.get("metadata") or {}
    spec = parent.get("spec") or {}
    status = parent.get("status") or {}
    view_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta}
    return {
        "kind": "Scale",
        "apiVersion": f"{SCALE_GROUP}/{SCALE_VERSION}",
        "metadata": view_meta,
        "spec": {"replicas": spec.get("replicas", 1)},
        "status": {"replicas": status.get("replicas", 0), "selector": selector_text(spec.get("selector"), kind)},
    }


def selector_text(sel: Any, kind: str) -> str:
    """The selector as a label-selector string (a ReplicationController's is a plain map)."""
    if not isinstance(sel, dict):
        return ""
    if kind == "ReplicationController":
        return ",".join(f"{k}={v}" for k, v in sorted(sel.items()))
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or []:
        op, key, values = e.get("operator"), e.get("key"), ",".join(e.get("values") or [])
        parts.append(
            {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key}.get(op, f"!{key}")
        )
    return ",".join(parts)


def replicas_of(scale: Any) -> Any:
    """spec.replicas of a Scale body (None when missing)."""
    spec = scale.get("spec") if isinstance(scale, dict) else None
    return spec.get("replicas") if isinstance(spec, dict) else None
