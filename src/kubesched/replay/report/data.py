"""A replay report as plain data: the JSON document (`--json`) and what the HTML report plots.

The schema is documented in docs/replay.md; `SCHEMA_VERSION` changes when a
field changes meaning or goes away (new fields may appear without a bump).
Long series are thinned to at most `max_points` evenly spaced samples (the
first and last always kept), so that a 100,000-event replay gives a report a
browser opens; the summary is computed from every sample.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.replay.metrics import ReplayRun, unit

KIND = "ReplayReport"
SCHEMA_VERSION = 1
DEFAULT_MAX_POINTS = 2000


@dataclass(frozen=True)
class ReportMeta:
    """Where a report's inputs came from."""

    cluster: str
    trace: str
    seed: int = 0
    until: float | None = None


def thin_indices(n: int, max_points: int) -> list[int]:
    """At most `max_points` indices into a series of `n`, evenly spaced, first and last included."""
    if n <= max_points or max_points < 2:
        return list(range(n))
    step = (n - 1) / (max_points - 1)
    return sorted({round(i * step) for i in range(max_points)})


def _num(x: float) -> float | None:
    """A float for JSON: rounded to 6 places (stable, short); NaN as null."""
    if isinstance(x, float) and math.isnan(x):
        return None
    return round(float(x), 6)


def run_to_dict(run: ReplayRun, max_points: int = DEFAULT_MAX_POINTS) -> dict[str, Any]:
    s = run.samples
    idx = thin_indices(len(s), max_points)
    util = run.utilization()
    frag = run.fragmentation()
    series: dict[str, Any] = {
        "time": [_num(s.time[i]) for i in idx],
        "arrived": [s.arrived[i] for i in idx],
        "pending": [s.pending[i] for i in idx],
        "running": [s.running[i] for i in idx],
        "finished": [s.finished[i] for i in idx],
        "preempted": [s.preempted[i] for i in idx],
        "utilization": {r: [_num(util[r][i]) for i in idx] for r in run.resources},
        "fragmentation": {r: [_num(frag[r][i]) for i in idx] for r in run.resources},
    }
    heatmap = {
        "time": [_num(t) for t in run.heat_times],
        "nodes": list(run.nodes),
        # utilization[resource][node][column]: requested / allocatable (null: the node has none of it)
        "utilization": {
            r: [[_num(frame[n, j]) for frame in run.heat] for n in range(len(run.nodes))]
            for j, r in enumerate(run.resources)
        },
    }
    pods = []
    for p in run.pods:
        pods.append(
            {
                "pod": p.key,
                "line": p.line,
                "arrival": _num(p.arrival),
                "duration": None if p.duration is None else _num(p.duration),
                "state": p.state,
                "node": p.node,
                "bound": None if p.bound is None else _num(p.bound),
                "end": None if p.end is None else _num(p.end),
                "latency": None if p.bound is None else _num(p.bound - p.arrival),
                "pendingSeconds": _num(p.pending_time(run.end_time)),
            }
        )
    summary = run.summary()
    return {
        "config": run.label,
        "summary": _rounded(summary),
        "overcommits": [
            {
                "time": _num(o.time),
                "node": o.node,
                "pod": o.pod,
                "resource": o.resource,
                "requested": o.requested,
                "allocatable": o.allocatable,
            }
            for o in run.overcommits
        ],
        "samples": len(s),
        "series": series,
        "heatmap": heatmap,
        "pods": pods,
    }


def _rounded(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, float):
        return _num(x)
    return x


def report_dict(meta: ReportMeta, runs: Sequence[ReplayRun], max_points: int = DEFAULT_MAX_POINTS) -> dict[str, Any]:
    """The whole report: inputs, resources, and one entry per configuration, in the order given."""
    if not runs:
        raise ValueError("a report needs at least one run")
    first = runs[0]
    return {
        "kind": KIND,
        "version": SCHEMA_VERSION,
        "cluster": meta.cluster,
        "trace": meta.trace,
        "seed": meta.seed,
        "until": meta.until,
        "resources": list(first.resources),
        "units": {r: unit(r) for r in first.resources},
        "nodes": list(first.nodes),
        "allocatable": dict(zip(first.resources, first.allocatable, strict=True)),
        "runs": [run_to_dict(r, max_points) for r in runs],
    }


def to_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, allow_nan=False) + "\n"
