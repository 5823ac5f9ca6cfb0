"""Rendering a simulation: FORMAT.md's JSON, YAML, or a table for people."""

from __future__ import annotations

import json
from typing import Any

import yaml

from kubesched.simulate.runner import SimulationResult


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
    """A rich Table: pod, node, status, reason; and a summary caption."""
    from rich.table import Table

    table = Table(title=title or None, show_lines=False)
    table.add_column("POD", no_wrap=True)
    table.add_column("NODE", no_wrap=True)
    table.add_column("STATUS", no_wrap=True)
    table.add_column("REASON")
    counts: dict[str, int] = {}
    for o in result.results:
        counts[o.status] = counts.get(o.status, 0) + 1
        reason = o.message or ""
        if o.status == "Scheduled" and o.nominated_node:
            reason = f"preempted on {o.nominated_node}"
        style = {"Scheduled": "green", "Unschedulable": "red", "Deleted": "yellow"}.get(o.status, "")
        table.add_row(o.key, o.node or "-", f"[{style}]{o.status}[/]" if style else o.status, reason)
    parts = [f"{n} {s.lower()}" for s, n in sorted(counts.items())]
    summary = f"{len(result.results)} pods: " + ", ".join(parts)
    if result.deleted:
        summary += f"; {len(result.deleted)} preempted: " + ", ".join(result.deleted)
    table.caption = summary
    return table
