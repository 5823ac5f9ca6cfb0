"""A sweep's results as one tidy table, and its means and spreads over seeds.

One row per (trace, tune, policy, seed, arrived_percent), in the grid's order:

    trace, tune, policy, seed, arrived_percent, alloc_percent, pods, scheduled, unschedulable, gpus

`alloc_percent` is the curve's point (the reference's discretization, two
decimals); the last four are the run's: pods arrived (the tuned workload),
placed, unschedulable (deleted, never retried), and the cluster's GPUs. The
table holds nothing that varies between two runs of the same cell (no
timings), so the same grid gives the same file, locally or on Ray.

CSV needs nothing; `.parquet` needs pyarrow (`pip install 'kubesched[sweep]'`).
"""

from __future__ import annotations

import csv
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kubesched.errors import InputError

from .grid import Cell
from .policies import Policy
from .sweep import SWEEP_EXTRA, CellResult

COLUMNS = (
    "trace",
    "tune",
    "policy",
    "seed",
    "arrived_percent",
    "alloc_percent",
    "pods",
    "scheduled",
    "unschedulable",
    "gpus",
)


def rows(results: list[CellResult]) -> Iterator[tuple[str, float, str, int, int, float, int, int, int, int]]:
    for r in results:
        c = r.cell
        for pct in sorted(r.curve):
            yield (
                c.trace,
                c.tune,
                c.policy.title,
                c.seed,
                pct,
                r.curve[pct],
                r.pods,
                r.scheduled,
                r.unschedulable,
                r.gpus,
            )


def is_parquet(path: str | Path) -> bool:
    return str(path).lower().endswith((".parquet", ".pq"))


def import_pyarrow() -> Any:
    """pyarrow (for .parquet), or an InputError saying what to install."""
    try:
        return importlib.import_module("pyarrow")
    except ImportError:
        raise InputError("--out", f"writing Parquet needs pyarrow: {SWEEP_EXTRA} (or name a .csv file)") from None


def write_table(path: str | Path, results: list[CellResult]) -> None:
    """The table, as Parquet when the name ends in .parquet, else as CSV."""
    if is_parquet(path):
        _write_parquet(path, results)
        return
    with Path(path).open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for t, tune, p, s, pct, alloc, *counts in rows(results):
            w.writerow([t, f"{tune:g}", p, s, pct, f"{alloc:.2f}", *counts])


def _write_parquet(path: str | Path, results: list[CellResult]) -> None:
    pa = import_pyarrow()
    pq = importlib.import_module("pyarrow.parquet")
    columns = list(zip(*rows(results), strict=True)) or [() for _ in COLUMNS]
    types = [pa.string(), pa.float64(), pa.string(), pa.int64(), pa.int64(), pa.float64()] + [pa.int64()] * 4
    schema = pa.schema(list(zip(COLUMNS, types, strict=True)))
    table = pa.table([pa.array(col, type=ty) for col, ty in zip(columns, types, strict=True)], schema=schema)
    pq.write_table(table, str(path))


def read_table(path: str | Path) -> list[CellResult]:
    """A table written by write_table, back as the runs' results (for figures without running again).

    The policies come back by name only (their plugins are not in the table); `seconds` is 0.
    """
    if is_parquet(path):
        import_pyarrow()
        pq = importlib.import_module("pyarrow.parquet")
        data = pq.read_table(str(path)).to_pydict()
        missing = [c for c in COLUMNS if c not in data]
        records = list(zip(*(data[c] for c in COLUMNS), strict=True)) if not missing else []
    else:
        try:
            with Path(path).open(newline="") as f:
                reader = csv.reader(f)
                header = next(reader, [])
                missing = [c for c in COLUMNS if c not in header]
                records = [tuple(r[header.index(c)] for c in COLUMNS) for r in reader] if not missing else []
        except OSError as err:
            raise InputError(str(path), err.strerror or str(err)) from None
    if missing:
        raise InputError(str(path), f"not a sweep table: no column(s) {', '.join(missing)}")
    runs: dict[tuple[str, float, str, int], CellResult] = {}
    for line, record in enumerate(records, 2):
        try:
            trace, tune, policy, seed, pct, alloc, pods, sched, unsched, gpus = record
            key = (str(trace), float(tune), str(policy), int(seed))
            if key not in runs:
                cell = Cell(len(runs), key[0], key[1], Policy(key[2], "", ""), key[3])
                runs[key] = CellResult(cell, {}, int(pods), int(sched), int(unsched), int(gpus), 0.0)
            runs[key].curve[int(pct)] = float(alloc)
        except (TypeError, ValueError) as err:
            raise InputError(str(path), f"row {line}: {err}") from None
    return list(runs.values())


@dataclass(frozen=True, slots=True)
class Band:
    """A policy's curve over seeds: at each arrived percent, the mean, sd (n-1; 0 for one seed), min, max."""

    trace: str
    tune: float
    policy: str
    percents: list[int]
    mean: list[float]
    sd: list[float]
    low: list[float]
    high: list[float]
    seeds: int

    def at(self, percent: int) -> tuple[float, float, float, float] | None:
        """(mean, sd, min, max) at `percent`, None where no seed's curve has it."""
        if percent not in self.percents:
            return None
        i = self.percents.index(percent)
        return self.mean[i], self.sd[i], self.low[i], self.high[i]


def bands(results: list[CellResult]) -> list[Band]:
    """One Band per (trace, tune, policy), in the grid's order."""
    groups: dict[tuple[str, float, str], list[CellResult]] = {}
    for r in results:
        groups.setdefault((r.cell.trace, r.cell.tune, r.cell.policy.title), []).append(r)
    out = []
    for (trace, tune, policy), runs in groups.items():
        pcts = sorted({p for r in runs for p in r.curve})
        mean, sd, low, high = [], [], [], []
        for p in pcts:
            v = np.array([r.curve[p] for r in runs if p in r.curve])
            mean.append(round(float(v.mean()), 4))
            sd.append(round(float(v.std(ddof=1)), 4) if len(v) > 1 else 0.0)
            low.append(float(v.min()))
            high.append(float(v.max()))
        out.append(Band(trace, tune, policy, pcts, mean, sd, low, high, len(runs)))
    return out
