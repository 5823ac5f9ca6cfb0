"""The GPU allocation curve (Fig. 9(a)): allocated GPU share at each percent of arrived workload.

As the reference's analysis computes it (experiments/analysis/merge_alloc_discrete_0920.py
over the `[Alloc]` lines simulator.go's ClusterGpuFragReport logs after every
pod, scheduled or not): each event's arrived and allocated GPU milli as percents
of the cluster's GPUs, the arrived one rounded to a whole percent and the
allocated one to two decimals (Python's round, half to even); at each whole
percent 0..130 the mean of the events that round to it (those within one
percent when none does), rounded to two decimals.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAX_PERCENT = 130


@dataclass(frozen=True, slots=True)
class Curve:
    """Allocation percent by arrived-workload percent (percents without events are absent)."""

    points: dict[int, float]

    def at(self, percent: int) -> float | None:
        return self.points.get(percent)


def allocation_curve(arrived: Sequence[int], allocated: Sequence[int], total_gpus: int) -> Curve:
    """The reference's discretization of the per-event (arrived, allocated) GPU milli."""
    arrive = np.array([round(a / total_gpus / 10, 0) for a in arrived])
    alloc = np.array([round(u / total_gpus / 10, 2) for u in allocated])
    points: dict[int, float] = {}
    for pct in range(MAX_PERCENT + 1):
        sel = alloc[arrive == pct]
        if len(sel) == 0:
            sel = alloc[(arrive >= pct - 1) & (arrive <= pct + 1)]
            if len(sel) == 0:
                continue
        points[pct] = round(float(np.round(sel.mean(), 2)), 2)
    return Curve(points)


def write_curves(path: str | Path, curves: dict[str, Curve]) -> None:
    """One CSV: arrived_percent, then one allocated-percent column per run (empty where absent)."""
    pcts = sorted({p for c in curves.values() for p in c.points})
    with Path(path).open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["arrived_percent", *curves])
        for p in pcts:
            w.writerow([p, *("" if c.at(p) is None else f"{c.at(p):.2f}" for c in curves.values())])
