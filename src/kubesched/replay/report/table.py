"""The replay summary as rows (one column per configuration): printed by the CLI, shown atop the HTML report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubesched.replay.metrics import ReplayRun


def fmt_seconds(x: float | None) -> str:
    """Seconds, one decimal at most: '0', '12.5', '3600'; '-' when there is nothing to measure."""
    if x is None:
        return "-"
    s = f"{x:.1f}"
    return s[:-2] if s.endswith(".0") else s


def fmt_share(x: float) -> str:
    return f"{100.0 * x:.1f}%"


def _triple(d: dict[str, Any]) -> str:
    if not d["count"]:
        return "-"
    return " / ".join(fmt_seconds(d[k]) for k in ("p50", "p90", "p99"))


def summary_rows(sums: Sequence[dict[str, Any]], resources: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(metric, value per run) in display order, from each run's summary (ReplayRun.summary())."""
    rows: list[tuple[str, list[str]]] = [
        ("pods arrived", [str(s["arrived"]) for s in sums]),
        ("scheduled", [str(s["scheduled"]) for s in sums]),
        ("finished", [str(s["finished"]) for s in sums]),
        ("running at end", [str(s["running"]) for s in sums]),
        ("pending at end", [str(s["pending"]) for s in sums]),
        ("preempted", [str(s["preempted"]) for s in sums]),
    ]
    if any(s["initialPreempted"] for s in sums):
        rows.append(("cluster-file pods preempted", [str(s["initialPreempted"]) for s in sums]))
    rows += [
        ("scheduling attempts", [str(s["schedulingAttempts"]) for s in sums]),
        ("latency p50 / p90 / p99 (s)", [_triple(s["latencySeconds"]) for s in sums]),
        ("pending time p50 / p90 / p99 (s)", [_triple(s["pendingSeconds"]) for s in sums]),
    ]
    for r in resources:
        rows.append(
            (
                f"{r} allocated mean / peak",
                [f"{fmt_share(s['utilization'][r]['mean'])} / {fmt_share(s['utilization'][r]['peak'])}" for s in sums],
            )
        )
    for r in resources:
        rows.append(
            (
                f"{r} stranded mean / peak",
                [
                    f"{fmt_share(s['fragmentation'][r]['mean'])} / {fmt_share(s['fragmentation'][r]['peak'])}"
                    for s in sums
                ],
            )
        )
    rows += [
        ("over-commits", [str(s["overcommits"]) for s in sums]),
        ("end time (s)", [fmt_seconds(s["endTime"]) for s in sums]),
    ]
    return rows


def summary_table(runs: Sequence[ReplayRun], title: str = "") -> Any:
    """A rich Table of summary_rows."""
    from rich.table import Table

    table = Table(title=title or None)
    table.add_column("", no_wrap=True)
    for r in runs:
        table.add_column(r.label, justify="right", no_wrap=True)
    for name, values in summary_rows([r.summary() for r in runs], runs[0].resources):
        table.add_row(name, *values)
    return table
