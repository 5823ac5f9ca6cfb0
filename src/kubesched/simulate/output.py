"""Rendering a simulation: FORMAT.md's JSON, YAML, or a table for people."""

from __future__ import annotations

import json
from typing import Any

import yaml

from kubesched.simulate.runner import PodOutcome, SimulationResult


def to_dict(result: SimulationResult) -> dict[str, Any]:
    results = []
    for o in result.results:
        r: dict[str, Any] = {
            "pod": o.key,
            "node": o.node,
            "status": o.status,
            "nominatedNode": o.nominated_node,
            "message": o.message,
        }
        if o.workload:
            r["workload"] = o.workload
        if o.tied_nodes:
            r["tiedNodes"] = o.tied_nodes
        if o.scores:
            r["scores"] = o.scores
        results.append(r)
    out: dict[str, Any] = {"results": results, "deleted": list(result.deleted)}
    out.update(result.extra)
    return out


def to_json(result: SimulationResult) -> str:
    return json.dumps(to_dict(result), indent=2)


def to_yaml(result: SimulationResult) -> str:
    return yaml.safe_dump(to_dict(result), sort_keys=False)


def render_table(result: SimulationResult, title: str = "") -> Any:
    """A rich Table: pod, node, status, reason, pods grouped under their workload; and a summary caption."""
    from rich.table import Table

    table = Table(title=title or None, show_lines=False)
    table.add_column("POD", no_wrap=True)
    table.add_column("NODE", no_wrap=True)
    table.add_column("STATUS", no_wrap=True)
    table.add_column("REASON")
    counts: dict[str, int] = {}
    # Rows in the order pods come; a workload's pods under its heading, where its first pod comes.
    entries: list[PodOutcome | str] = []
    groups: dict[str, list[PodOutcome]] = {}
    for o in result.results:
        counts[o.status] = counts.get(o.status, 0) + 1
        group = _group(o)
        if group is None:
            entries.append(o)
            continue
        if group not in groups:
            groups[group] = []
            entries.append(group)
        groups[group].append(o)
    for entry in entries:
        if isinstance(entry, str):
            table.add_section()
            scheduled, why = workload_summary(groups[entry])
            table.add_row(f"[bold]{entry}[/]", "", f"[bold]{scheduled}[/]", why)
            for o in groups[entry]:
                _add_pod_row(table, o, indent=True)
            table.add_section()
        else:
            _add_pod_row(table, entry, indent=False)
    parts = [f"{n} {s.lower()}" for s, n in sorted(counts.items())]
    summary = _count(len(result.results), "pod") + (": " + ", ".join(parts) if parts else "")
    if result.deleted:
        summary += f"; {len(result.deleted)} preempted: " + ", ".join(result.deleted)
    table.caption = summary
    return table


def _count(n: int, noun: str) -> str:
    """ "1 pod", "3 pods"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _add_pod_row(table: Any, o: PodOutcome, indent: bool) -> None:
    reason = o.message or ""
    if o.status == "Scheduled" and o.nominated_node:
        reason = f"preempted {_count(o.victims, 'pod')} on {o.nominated_node}" if o.victims else ""
    style = {"Scheduled": "green", "Unschedulable": "red", "Deleted": "yellow"}.get(o.status, "")
    status = f"[{style}]{o.status}[/]" if style else o.status
    table.add_row(f"  {o.key}" if indent else o.key, o.node or "-", status, reason)


def _group(o: PodOutcome) -> str | None:
    """The workload heading a pod is listed under: namespace/kind/name (None: a pod of its own)."""
    if o.workload is None:
        return None
    return f"{o.key.split('/', 1)[0]}/{o.workload}"


def workload_summary(outcomes: list[PodOutcome]) -> tuple[str, str]:
    """ "5/6 scheduled" and what the others are, with the first one's reason: the workload's line."""
    scheduled = sum(1 for o in outcomes if o.status == "Scheduled")
    others: dict[str, int] = {}
    first = ""
    for o in outcomes:
        if o.status != "Scheduled":
            others[o.status] = others.get(o.status, 0) + 1
            first = first or (o.message or "")
    why = ", ".join(f"{n} {s.lower()}" for s, n in others.items())
    if first:
        why += f": {first}"
    return f"{scheduled}/{len(outcomes)} scheduled", why
