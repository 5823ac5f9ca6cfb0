"""`kubesched sweep`: a grid of traces x tune ratios x policies x seeds, in parallel, to one table and its figures.

    kubesched sweep [GRID.yaml] [--trace default,gpushare40] [--policy all] [--seed 42-51] [--tune 1.3]
                    --out table.csv|.parquet [--report sweep.html] [--png DIR] [--jobs N] [--ray auto|ADDRESS|local]

With no grid and no axis flags it is the FGD paper's study: the openb default
trace, the six policies, seeds 42-51, tune 1.3. Runs go to `--jobs` processes
(one per CPU by default), or to a Ray cluster with `--ray`. A failed run is
named with its cell and error and the exit status is 1; the others' results
are written all the same.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from kubesched.cliargs import add_progress_arguments, check_output, int_at_least
from kubesched.errors import InputError
from kubesched.progress import progress_display

from .grid import load
from .reference import PUBLISHED
from .sweep import CellFailure, Outcome, SweepResult, cpus, import_ray, run_cells
from .sweep_report import PAPER_TRACE, PAPER_TUNE, POINTS
from .table import bands, import_pyarrow, is_parquet, read_table, write_table

EXIT_FAILED_RUNS = 1
FROM_TABLE = "--from"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("grid", nargs="?", help="a grid file (YAML: trace, policy, seed, tune, traceDir, nodeFile)")
    p.add_argument("--trace", help="openb pod lists, comma-separated: default, gpushare40, multigpu50, ... (default)")
    p.add_argument(
        "--policy",
        help="policies: random, dotprod, clustering, packing, bestfit, fgd, a plugin's "
        "module:Class, comma-separated, or all (all)",
    )
    p.add_argument("--seed", help="seeds: 42, 42,43 or 42-51 (42-51)")
    p.add_argument("--tune", help="workload inflation ratios, comma-separated: GPU requests / capacity (1.3)")
    p.add_argument("--trace-dir", help="the openb trace's directory (default: ../shared/traces/openb)")
    p.add_argument("--node-file", help="the node list (default: the trace's GPU nodes, as the paper's experiments)")
    p.add_argument("--out", help="the table: a .parquet file (needs pyarrow) or CSV")
    p.add_argument(
        "--from",
        dest="from_table",
        metavar="TABLE",
        help="run nothing: the figures and summary of a table written before (with --report and/or --png)",
    )
    p.add_argument("--report", help="an HTML report with a figure per trace (needs plotly)")
    p.add_argument("--png", metavar="DIR", help="also one PNG per trace into DIR (needs matplotlib)")
    p.add_argument("--jobs", type=int_at_least(1), default=cpus(), help="runs at once, one process each (CPUs)")
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run on Ray: auto (the cluster `ray start` runs here), an address (ray://host:10001), "
        "or local (start one here with --jobs CPUs); needs pip install 'kubesched[sweep]'",
    )
    p.add_argument("--ray-runtime-env", metavar="FILE", help="a Ray runtime_env (YAML/JSON) for the tasks")
    add_progress_arguments(p)
    p.set_defaults(func=cmd_sweep)


def _runtime_env(path: str | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        env = yaml.safe_load(Path(path).read_text())  # JSON is YAML
    except OSError as err:
        raise InputError(path, err.strerror or str(err)) from None
    except yaml.YAMLError as err:
        raise InputError(path, f"not YAML or JSON: {' '.join(str(err).split())}") from None
    if not isinstance(env, dict):
        raise InputError(path, "a runtime_env is a mapping (py_modules, working_dir, pip, env_vars, ...)")
    return env


def cmd_sweep(args: argparse.Namespace) -> int:
    if (args.out is None) == (args.from_table is None):
        raise InputError("--out", "give --out TABLE to run the grid, or --from TABLE to draw a table's figures")
    for path in (args.out, args.report):
        if path:
            check_output(path)
    if args.from_table is not None:
        return _replot(args)
    overrides = {
        "trace": args.trace,
        "policy": args.policy,
        "seed": args.seed,
        "tune": args.tune,
        "traceDir": args.trace_dir,
        "nodeFile": args.node_file,
    }
    grid = load(args.grid, overrides)
    # Everything optional is checked before the first run, not after the last.
    if is_parquet(args.out):
        import_pyarrow()
    if args.report:
        from kubesched.replay.report.html import require_plotly

        require_plotly()
    if args.png:
        from .sweep_report import require_matplotlib

        require_matplotlib()
    runtime_env = _runtime_env(args.ray_runtime_env)
    if args.ray is not None:
        import_ray()
    elif runtime_env is not None:
        raise InputError("--ray-runtime-env", "is for Ray only (give --ray too)")
    traces = grid.read()
    cells = grid.cells()
    with progress_display(args) as progress:
        stage = progress.stage("sweep", len(cells), "runs")

        def on_done(o: Outcome, done: int, total: int) -> None:
            if isinstance(o, CellFailure):
                print(f"error: run {o.cell}: {o.error}", file=sys.stderr, flush=True)
            stage.update(done)

        result = run_cells(cells, traces, args.jobs, args.ray, runtime_env, on_done)
        stage.finish()
    write_table(args.out, result.results)
    _figures(args, result)
    _print_summary(result, args.out)
    if result.failures:
        print(f"{len(result.failures)} of {len(cells)} run(s) failed:", file=sys.stderr)
        for f in result.failures:
            print(f"  {f.cell}: {f.error}", file=sys.stderr)
        return EXIT_FAILED_RUNS
    return 0


def _figures(args: argparse.Namespace, result: SweepResult) -> None:
    if args.report:
        from .sweep_report import write_report

        write_report(args.report, result)
    if args.png:
        from .sweep_report import write_pngs

        write_pngs(args.png, result)


def _replot(args: argparse.Namespace) -> int:
    """--from: a table's figures and summary, nothing run (the grid's flags are not used)."""
    if args.report:
        from kubesched.replay.report.html import require_plotly

        require_plotly()
    if args.png:
        from .sweep_report import require_matplotlib

        require_matplotlib()
    result = SweepResult(read_table(args.from_table), where=FROM_TABLE)
    _figures(args, result)
    _print_summary(result, args.from_table)
    return 0


def _print_summary(result: SweepResult, out: str) -> None:
    """Per (trace, tune, policy): the mean and sd over seeds at 100% and 130% arrived, and the paper's."""
    heads = ("SEEDS", "MEAN@100", "SD@100", "MEAN@130", "SD@130", "PAPER@100", "PAPER@130")
    print(f"{'TRACE':<14} {'TUNE':>5} {'POLICY':<14} " + " ".join(f"{h:>9}" for h in heads))
    for b in bands(result.results):
        paper = PUBLISHED.get(b.policy) if (b.trace, b.tune) == (PAPER_TRACE, PAPER_TUNE) else None
        cells: list[str] = [str(b.seeds)]
        for p in POINTS:
            at = b.at(p)
            cells += [f"{at[0]:.2f}", f"{at[1]:.2f}"] if at else ["-", "-"]
        cells += [f"{v:.2f}" for v in paper] if paper else ["-", "-"]
        print(f"{b.trace:<14} {b.tune:>5g} {b.policy:<14} " + " ".join(f"{c:>9}" for c in cells))
    runs = len(result.results) + len(result.failures)
    failed = f", {len(result.failures)} failed" if result.failures else ""
    if result.where == FROM_TABLE:
        print(f"{runs} run(s) read from {out}")
    else:
        print(f"{runs} run(s){failed} in {result.seconds:.1f} s on {result.where}; table: {out}")
