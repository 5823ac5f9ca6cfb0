"""`kubesched research run`: the openb trace under FGD-paper policies and seeds, to an allocation curve.

    kubesched research run --trace openb --policy fgd --seed 42 --out curve.csv [--report out.html]

`--policy all` runs the six policies; `--seeds 42-51` the paper's ten seeds.
Runs are independent processes (`--jobs`, two by default: one per core here).
The curve CSV has a column per run; the HTML report plots them.
"""

from __future__ import annotations

import argparse
import sys
import time

from kubesched.errors import InputError

from .curve import write_curves
from .openb import NodeRow, PodRow, default_paths, read_nodes, read_pods
from .policies import POLICIES
from .pool import process_pool
from .reference import PUBLISHED
from .run import RunResult, policy, run

TRACES = ("openb",)


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="research_command", required=True)
    r = sub.add_parser("run", help="replay a trace under policies and seeds; write the GPU allocation curve")
    r.add_argument("--trace", default="openb", help="the trace (openb)")
    r.add_argument("--trace-dir", help="the directory holding the trace's CSV files (default: ../shared/traces/openb)")
    r.add_argument(
        "--pods", default="default", help="the pod list: openb_pod_list_<PODS>.csv (default, gpushare40, ...)"
    )
    r.add_argument("--pod-file", help="a pod list CSV to use instead of --pods")
    r.add_argument("--node-file", help="a node list CSV (default: the GPU nodes, as the experiments use)")
    r.add_argument(
        "--policy",
        default="fgd",
        help=f"a policy ({', '.join(POLICIES)}; or the paper's names), several separated by commas, or all",
    )
    r.add_argument("--seed", default="42", help="a seed, several separated by commas, or a range (42-51)")
    r.add_argument("--ratio", type=float, default=1.3, help="workload inflation: total GPU requests / capacity (1.3)")
    r.add_argument("--no-shuffle", action="store_true", help="keep the pod list's order (the reference sorts by name)")
    r.add_argument("--out", required=True, help="the curve CSV to write")
    r.add_argument("--report", help="also write an HTML report (needs plotly: pip install 'kubesched[report]')")
    r.add_argument("--jobs", type=int, default=2, help="runs at once, one process each (2)")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    r.set_defaults(func=cmd_run)


def _seeds(raw: str) -> list[int]:
    out: list[int] = []
    try:
        for part in raw.split(","):
            lo, sep, hi = part.strip().partition("-")
            out.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
    except ValueError:
        raise InputError("--seed", f"{raw!r}: give seeds as 42, 42,43 or 42-51") from None
    if not out:
        raise InputError("--seed", "no seed")
    return out


def _policies(raw: str) -> list[str]:
    names = list(POLICIES) if raw.strip().lower() == "all" else [x.strip() for x in raw.split(",") if x.strip()]
    try:
        return [policy(n).title for n in names]
    except ValueError as err:
        raise InputError("--policy", str(err)) from None


def _one(job: tuple[list[NodeRow], list[PodRow], str, int, float, bool]) -> RunResult:
    nodes, pods, name, seed, ratio, shuffle = job
    return run(nodes, pods, name, seed, ratio, shuffle)


def cmd_run(args: argparse.Namespace) -> int:
    if args.trace not in TRACES:
        raise InputError("--trace", f"unknown trace {args.trace!r} (known: {', '.join(TRACES)})")
    node_path, pod_path = default_paths(args.trace_dir, args.pods)
    nodes = read_nodes(args.node_file or node_path)
    pods = read_pods(args.pod_file or pod_path)
    policies, seeds = _policies(args.policy), _seeds(args.seed)
    if args.report:
        from .report import require_plotly

        require_plotly()
    jobs = [(nodes, pods, p, s, args.ratio, not args.no_shuffle) for p in policies for s in seeds]
    started = time.perf_counter()
    results: list[RunResult] = []
    workers = max(1, min(args.jobs, len(jobs)))
    if workers == 1:
        for job in jobs:
            results.append(_one(job))
            _progress(args, results[-1])
    else:
        with process_pool(workers) as pool:
            for result in pool.map(_one, jobs):
                results.append(result)
                _progress(args, result)
    wall = time.perf_counter() - started
    curves = {r.label: r.curve() for r in results}
    write_curves(args.out, curves)
    _print_table(results, wall)
    if args.report:
        from .report import write_report

        write_report(args.report, results, str(pod_path if not args.pod_file else args.pod_file), args.ratio)
    return 0


def _progress(args: argparse.Namespace, r: RunResult) -> None:
    if not args.quiet:
        print(f"{r.label}: {len(r.arrived)} pods, {r.failed} unschedulable, {r.seconds:.1f} s", file=sys.stderr)


def _print_table(results: list[RunResult], wall: float) -> None:
    heads = ("PODS", "FAILED", "ALLOC@100", "ALLOC@130", "PAPER@100", "PAPER@130")
    print(f"{'POLICY':<14} {'SEED':>5} " + " ".join(f"{h:>9}" for h in heads) + f" {'SECONDS':>7}")
    for r in results:
        c = r.curve()
        paper = PUBLISHED.get(r.policy)
        cells = [_pct(c.at(100)), _pct(c.at(130)), _pct(paper[0] if paper else None), _pct(paper[1] if paper else None)]
        print(
            f"{r.policy:<14} {r.seed:>5} {len(r.arrived):>9} {r.failed:>9} "
            + " ".join(f"{x:>9}" for x in cells)
            + f" {r.seconds:>7.1f}"
        )
    print(f"{len(results)} run(s) in {wall:.1f} s; PAPER: the published simulator's mean over seeds 42-51")


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"
