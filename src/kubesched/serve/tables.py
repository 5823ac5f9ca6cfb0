"""Server-side printing: the meta.k8s.io/v1 Table kubectl asks for (`kubectl get`, `-o wide`).

Columns follow the API server's printers for pods, nodes, events and the workload kinds; every
other kind gets Name and Age, as kubectl shows custom resources.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubesched.serve.scale import selector_text

Column = tuple[str, str, int, Callable[[dict[str, Any]], Any]]  # name, type, priority, cell


def human_duration(seconds: float) -> str:
    """duration.HumanDuration."""
    s = int(max(seconds, 0))
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if h < 24 * 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if d < 365 * 2:
        return f"{d}d"
    y = d // 365
    return f"{y}y{d % 365}d" if y < 8 and d % 365 else f"{y}y"


def _age(ts: str | None) -> str:
    if not ts:
        return "<unknown>"
    try:
        t = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    return human_duration((datetime.now(UTC) - t).total_seconds())


def _meta(o: dict[str, Any]) -> dict[str, Any]:
    return o.get("metadata") or {}


def _pod_status(o: dict[str, Any]) -> str:
    st = o.get("status") or {}
    if _meta(o).get("deletionTimestamp"):
        return "Terminating"
    for c in st.get("conditions") or ():
        if c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            return "SchedulingGated"
    return st.get("reason") or st.get("phase") or "Pending"


def _pod_ready(o: dict[str, Any]) -> str:
    containers = (o.get("spec") or {}).get("containers") or ()
    statuses = (o.get("status") or {}).get("containerStatuses") or ()
    return f"{sum(1 for c in statuses if c.get('ready'))}/{len(containers)}"


def _restarts(o: dict[str, Any]) -> int:
    return sum(int(c.get("restartCount") or 0) for c in (o.get("status") or {}).get("containerStatuses") or ())


def _node_status(o: dict[str, Any]) -> str:
    status = "Unknown"
    for c in (o.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            status = "Ready" if c.get("status") == "True" else "NotReady"
    if (o.get("spec") or {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    return status


def _node_roles(o: dict[str, Any]) -> str:
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k[len(prefix) :] for k in (_meta(o).get("labels") or {}) if k.startswith(prefix))
    return ",".join(r for r in roles if r) or "<none>"


def _address(o: dict[str, Any], kind: str) -> str:
    for a in (o.get("status") or {}).get("addresses") or ():
        if a.get("type") == kind:
            return str(a.get("address"))
    return "<none>"


def _info(o: dict[str, Any], key: str) -> str:
    return str(((o.get("status") or {}).get("nodeInfo") or {}).get(key) or "<unknown>")


def _or_none(v: Any) -> Any:
    return v if v not in (None, "") else "<none>"


def _spec(o: dict[str, Any]) -> dict[str, Any]:
    return o.get("spec") or {}


def _status(o: dict[str, Any]) -> dict[str, Any]:
    return o.get("status") or {}


def _template_spec(o: dict[str, Any]) -> dict[str, Any]:
    spec = _spec(o)
    if "jobTemplate" in spec:
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    return (spec.get("template") or {}).get("spec") or {}


def _containers(o: dict[str, Any]) -> str:
    return ",".join(str(c.get("name", "")) for c in _template_spec(o).get("containers") or ())


def _images(o: dict[str, Any]) -> str:
    return ",".join(str(c.get("image", "")) for c in _template_spec(o).get("containers") or ())


def _selector(o: dict[str, Any]) -> str:
    sel = _spec(o).get("selector")
    if not isinstance(sel, dict) or not sel:
        return "<none>"
    if "matchLabels" not in sel and "matchExpressions" not in sel:  # a ReplicationController's map
        return ",".join(f"{k}={v}" for k, v in sorted(sel.items()))
    return selector_text(sel, "") or "<none>"


def _n(o: dict[str, Any], field: str) -> str:
    return str(int(_status(o).get(field) or 0))


def _replicas(o: dict[str, Any]) -> int:
    r = _spec(o).get("replicas")
    return 1 if r is None else int(r)


NAME: Column = ("Name", "string", 0, lambda o: _meta(o).get("name", ""))
AGE: Column = ("Age", "string", 0, lambda o: _age(_meta(o).get("creationTimestamp")))

_WIDE_TEMPLATE: list[Column] = [
    ("Containers", "string", 1, _containers),
    ("Images", "string", 1, _images),
    ("Selector", "string", 1, _selector),
]

_REPLICA_COLUMNS: list[Column] = [
    NAME,
    ("Desired", "integer", 0, _replicas),
    ("Current", "integer", 0, lambda o: int(_n(o, "replicas"))),
    ("Ready", "integer", 0, lambda o: int(_n(o, "readyReplicas"))),
    AGE,
    *_WIDE_TEMPLATE,
]

COLUMNS: dict[str, list[Column]] = {
    "Deployment": [
        NAME,
        ("Ready", "string", 0, lambda o: f"{_n(o, 'readyReplicas')}/{_replicas(o)}"),
        ("Up-to-date", "integer", 0, lambda o: int(_n(o, "updatedReplicas"))),
        ("Available", "integer", 0, lambda o: int(_n(o, "availableReplicas"))),
        AGE,
        *_WIDE_TEMPLATE,
    ],
    "ReplicaSet": _REPLICA_COLUMNS,
    "ReplicationController": _REPLICA_COLUMNS,
    "StatefulSet": [
        NAME,
        ("Ready", "string", 0, lambda o: f"{_n(o, 'readyReplicas')}/{_replicas(o)}"),
        AGE,
        *_WIDE_TEMPLATE[:2],
    ],
    "DaemonSet": [
        NAME,
        ("Desired", "integer", 0, lambda o: int(_n(o, "desiredNumberScheduled"))),
        ("Current", "integer", 0, lambda o: int(_n(o, "currentNumberScheduled"))),
        ("Ready", "integer", 0, lambda o: int(_n(o, "numberReady"))),
        ("Up-to-date", "integer", 0, lambda o: int(_n(o, "updatedNumberScheduled"))),
        ("Available", "integer", 0, lambda o: int(_n(o, "numberAvailable"))),
        (
            "Node Selector",
            "string",
            0,
            lambda o: (
                ",".join(f"{k}={v}" for k, v in sorted((_template_spec(o).get("nodeSelector") or {}).items()))
                or "<none>"
            ),
        ),
        AGE,
        *_WIDE_TEMPLATE,
    ],
    "Job": [
        NAME,
        ("Status", "string", 0, lambda o: "Running" if _status(o).get("active") else "Pending"),
        ("Completions", "string", 0, lambda o: f"{_n(o, 'succeeded')}/{_spec(o).get('completions') or 1}"),
        ("Duration", "string", 0, lambda o: ""),
        AGE,
        *_WIDE_TEMPLATE,
    ],
    "CronJob": [
        NAME,
        ("Schedule", "string", 0, lambda o: str(_spec(o).get("schedule", ""))),
        ("Timezone", "string", 0, lambda o: str(_spec(o).get("timeZone") or "<none>")),
        ("Suspend", "boolean", 0, lambda o: bool(_spec(o).get("suspend"))),
        ("Active", "integer", 0, lambda o: len(_status(o).get("active") or ())),
        ("Last Schedule", "string", 0, lambda o: "<none>"),
        AGE,
        *_WIDE_TEMPLATE,
    ],
    "Pod": [
        NAME,
        ("Ready", "string", 0, _pod_ready),
        ("Status", "string", 0, _pod_status),
        ("Restarts", "string", 0, lambda o: str(_restarts(o))),
        AGE,
        ("IP", "string", 1, lambda o: _or_none((o.get("status") or {}).get("podIP"))),
        ("Node", "string", 1, lambda o: _or_none((o.get("spec") or {}).get("nodeName"))),
        ("Nominated Node", "string", 1, lambda o: _or_none((o.get("status") or {}).get("nominatedNodeName"))),
        ("Readiness Gates", "string", 1, lambda o: "<none>"),
    ],
    "Node": [
        NAME,
        ("Status", "string", 0, _node_status),
        ("Roles", "string", 0, _node_roles),
        AGE,
        (
            "Version",
            "string",
            0,
            lambda o: _info(o, "kubeletVersion") if _info(o, "kubeletVersion") != "<unknown>" else "",
        ),
        ("Internal-IP", "string", 1, lambda o: _address(o, "InternalIP")),
        ("External-IP", "string", 1, lambda o: _address(o, "ExternalIP")),
        ("OS-Image", "string", 1, lambda o: _info(o, "osImage")),
        ("Kernel-Version", "string", 1, lambda o: _info(o, "kernelVersion")),
        ("Container-Runtime", "string", 1, lambda o: _info(o, "containerRuntimeVersion")),
    ],
    "CoreEvent": [
        ("Last Seen", "string", 0, lambda o: _age(o.get("lastTimestamp") or o.get("eventTime"))),
        ("Type", "string", 0, lambda o: o.get("type", "")),
        ("Reason", "string", 0, lambda o: o.get("reason", "")),
        (
            "Object",
            "string",
            0,
            lambda o: (
                f"{(o.get('involvedObject') or {}).get('kind', '').lower()}/"
                f"{(o.get('involvedObject') or {}).get('name', '')}"
            ),
        ),
        ("Source", "string", 1, lambda o: (o.get("source") or {}).get("component") or o.get("reportingComponent", "")),
        ("Message", "string", 0, lambda o: o.get("message", "")),
        ("Count", "string", 1, lambda o: str(o.get("count") or 1)),
    ],
    "Lease": [
        NAME,
        ("Holder", "string", 0, lambda o: (o.get("spec") or {}).get("holderIdentity") or ""),
        AGE,
    ],
}


def table(kind: str, objects: list[dict[str, Any]], resource_version: str, api_version: str) -> dict[str, Any]:
    cols = COLUMNS.get(kind, [NAME, AGE])
    defs = [
        {"name": n, "type": t, "format": "name" if n == "Name" else "", "description": n, "priority": p}
        for n, t, p, _ in cols
    ]
    rows = []
    for o in objects:
        rows.append(
            {
                "cells": [cell(o) for _, _, _, cell in cols],
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": _meta(o),
                },
            }
        )
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": defs,
        "rows": rows,
    }
