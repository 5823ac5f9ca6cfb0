"""Running a grid's cells: in processes on this machine, or as Ray tasks on a cluster; the same results either way.

Each cell is an independent run (`run.run`), fully determined by the trace's
rows, the policy, the seed and the tune ratio: every random draw comes from a
generator seeded with the seed, and nothing depends on which process or
machine runs it, nor when. So the results are the same wherever they ran; they
are put back in the grid's order, whatever order they finished in.

The driver reads each trace once. Locally the rows reach each worker process
once (the pool's initializer); on Ray they are put in the object store once
per trace and every task of that trace takes the reference (`ray.put`), so a
cluster's nodes need kubesched installed but not the trace files. A task
returns the curve (131 points) and the run's counts, not its per-pod events.

A run that raises is a `CellFailure` (the cell, the error, its traceback),
as is a worker that dies; the other cells' results are kept.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from kubesched.errors import InputError

from .grid import Cell, TraceData
from .pool import process_pool
from .run import run

SWEEP_EXTRA = "pip install 'kubesched[sweep]'"
# `--ray local`: start a Ray instance in this process (on this machine) instead of joining a cluster.
RAY_LOCAL = "local"


@dataclass(frozen=True, slots=True)
class CellResult:
    """What one run reports: its allocation curve and counts (`seconds` is the only part that varies)."""

    cell: Cell
    curve: dict[int, float]
    pods: int
    scheduled: int
    unschedulable: int
    gpus: int
    seconds: float


@dataclass(frozen=True, slots=True)
class CellFailure:
    cell: Cell
    error: str
    detail: str = ""


@dataclass
class SweepResult:
    """The cells' results and failures, each in the grid's order; `where` says what ran them."""

    results: list[CellResult] = field(default_factory=list)
    failures: list[CellFailure] = field(default_factory=list)
    seconds: float = 0.0
    where: str = ""


Outcome = CellResult | CellFailure


def cpus() -> int:
    """The CPUs this process may use (its affinity, which a container or taskset narrows), the default --jobs."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


OnDone = Callable[[Outcome, int, int], None]


def run_cell(cell: Cell, trace: TraceData) -> Outcome:
    """One cell; its exceptions come back as a CellFailure, so that one bad run does not lose the others."""
    started = time.perf_counter()
    try:
        r = run(trace.nodes, trace.pods, cell.policy, cell.seed, cell.tune)
        curve = r.curve().points
    except Exception as err:  # noqa: BLE001 - any run's error is reported with its cell, the sweep goes on
        return CellFailure(cell, f"{type(err).__name__}: {err}", traceback.format_exc())
    return CellResult(cell, curve, len(r.arrived), r.scheduled, r.failed, r.total_gpus, time.perf_counter() - started)


def run_cells(
    cells: list[Cell],
    traces: dict[str, TraceData],
    jobs: int | None = None,
    ray: str | None = None,
    runtime_env: dict[str, Any] | None = None,
    on_done: OnDone | None = None,
) -> SweepResult:
    """Every cell: on Ray when `ray` names a cluster (`auto`, an address, or `local`), else in `jobs` processes."""
    started = time.perf_counter()
    outcomes: dict[int, Outcome] = {}

    def done(o: Outcome) -> None:
        outcomes[o.cell.index] = o
        if on_done is not None:
            on_done(o, len(outcomes), len(cells))

    if ray is not None:
        where = _run_ray(cells, traces, ray, jobs, runtime_env, done)
    else:
        where = _run_local(cells, traces, jobs or cpus(), done)
    ordered = [outcomes[c.index] for c in cells]
    return SweepResult(
        [o for o in ordered if isinstance(o, CellResult)],
        [o for o in ordered if isinstance(o, CellFailure)],
        time.perf_counter() - started,
        where,
    )


# The traces, in a local worker process (set once by the pool's initializer).
_TRACES: dict[str, TraceData] = {}


def _init_worker(traces: dict[str, TraceData]) -> None:
    _TRACES.clear()
    _TRACES.update(traces)


def _run_in_worker(cell: Cell) -> Outcome:
    return run_cell(cell, _TRACES[cell.trace])


def _run_local(cells: list[Cell], traces: dict[str, TraceData], jobs: int, done: Callable[[Outcome], None]) -> str:
    workers = max(1, min(jobs, len(cells)))
    if workers == 1:
        for cell in cells:
            done(run_cell(cell, traces[cell.trace]))
        return "1 process"
    with process_pool(workers, initializer=_init_worker, initargs=(traces,)) as pool:
        pending: dict[Future[Outcome], Cell] = {pool.submit(_run_in_worker, c): c for c in cells}
        try:
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for f in finished:
                    cell = pending.pop(f)
                    try:
                        done(f.result())
                    except BrokenProcessPool as err:
                        done(CellFailure(cell, f"its worker process died ({err or 'killed'})"))
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return f"{workers} processes"


# What importing and starting Ray changes in this process (its log record factory, sys.excepthook, its SIGTERM
# handler), as it was before: put back when the Ray this module started shuts down, so that a program (or a test
# suite) that swept on Ray logs and exits as before.
_BEFORE_RAY: list[tuple[Any, Any, Any]] = []


def _process_state() -> tuple[Any, Any, Any]:
    return logging.getLogRecordFactory(), sys.excepthook, signal.getsignal(signal.SIGTERM)


def _restore_process_state() -> None:
    if not _BEFORE_RAY:
        return
    factory, hook, sigterm = _BEFORE_RAY[0]
    logging.setLogRecordFactory(factory)
    sys.excepthook = hook
    with contextlib.suppress(ValueError, TypeError):  # not the main thread; a handler not set from Python
        signal.signal(signal.SIGTERM, sigterm)


def import_ray() -> Any:
    """Ray, or an InputError saying what to install (the local mode needs neither ray nor pyarrow)."""
    if "ray" not in sys.modules and not _BEFORE_RAY:
        _BEFORE_RAY.append(_process_state())
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise InputError("--ray", f"Ray is not installed: {SWEEP_EXTRA} (or pip install ray)") from None


def _run_ray(
    cells: list[Cell],
    traces: dict[str, TraceData],
    address: str,
    jobs: int | None,
    runtime_env: dict[str, Any] | None,
    done: Callable[[Outcome], None],
) -> str:
    ray = import_ray()
    ours = not ray.is_initialized()
    if ours:
        if not _BEFORE_RAY:
            _BEFORE_RAY.append(_process_state())
        kwargs: dict[str, Any] = {"include_dashboard": False, "runtime_env": runtime_env or None}
        kwargs["address"] = address
        if address == RAY_LOCAL:  # a new instance, even where `ray start` runs one or RAY_ADDRESS names one
            kwargs["num_cpus"] = jobs or cpus()
        try:
            ray.init(**kwargs)
        except (ConnectionError, RuntimeError, ValueError) as err:
            _restore_process_state()
            hint = " (start one with `ray start --head`, or use --ray local)" if address == "auto" else ""
            raise InputError("--ray", f"cannot connect to Ray at {address}: {err}{hint}") from None
    try:
        cluster_cpus = int(ray.cluster_resources().get("CPU", 0))
        refs = {name: ray.put(data) for name, data in traces.items()}
        # One CPU per task: a run is single-threaded. Errors of the run itself come back as CellFailure;
        # a worker or node that dies is retried (the run is deterministic, so a retry gives the same result).
        task = ray.remote(num_cpus=1)(run_cell)
        pending = {task.remote(c, refs[c.trace]): c for c in cells}
        while pending:
            finished, _ = ray.wait(list(pending), num_returns=1)
            for ref in finished:
                cell = pending.pop(ref)
                try:
                    done(ray.get(ref))
                except Exception as err:  # noqa: BLE001 - a task Ray could not run is reported with its cell
                    done(CellFailure(cell, f"Ray: {type(err).__name__}: {_first_line(err)}", str(err)))
    finally:
        if ours:
            ray.shutdown()
            _restore_process_state()
    return f"Ray ({address}, {cluster_cpus} CPUs)"


def _first_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return lines[0] if lines else ""
