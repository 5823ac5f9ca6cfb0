"""The core/v1 view of events.k8s.io/v1 Events: the served store keeps the new kind, old clients read this."""

from __future__ import annotations

from typing import Any


def core_event(ev: dict[str, Any]) -> dict[str, Any]:
    series = ev.get("series") or {}
    out: dict[str, Any] = {
        "metadata": ev.get("metadata") or {},
        "involvedObject": ev.get("regarding") or {},
        "reason": ev.get("reason", ""),
        "message": ev.get("note", ""),
        "source": {"component": ev.get("reportingController", "")},
        "count": int(series.get("count") or ev.get("deprecatedCount") or 1),
        "type": ev.get("type", ""),
        "eventTime": ev.get("eventTime"),
        "action": ev.get("action", ""),
        "reportingComponent": ev.get("reportingController", ""),
        "reportingInstance": ev.get("reportingInstance", ""),
    }
    last = series.get("lastObservedTime") or ev.get("eventTime")
    if last:
        out["lastTimestamp"] = str(last).split(".")[0] + "Z" if "." in str(last) else last
    if series:
        out["series"] = {"count": series.get("count"), "lastObservedTime": series.get("lastObservedTime")}
    if ev.get("related"):
        out["related"] = ev["related"]
    return out
