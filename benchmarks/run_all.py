"""Run every row of the reference table (../shared/benchmarks/WORKLOADS.md) and write benchmarks/README.md.

Each row runs `kubesched bench` in its own process (so that peak memory is the
row's own) with three repetitions, and the table puts our min/median/max beside
kube-scheduler v1.34.1's, with the ratio of the medians.

    .venv/bin/python benchmarks/run_all.py            # all rows, rewrite the README table
    .venv/bin/python benchmarks/run_all.py --only basic --reps 1
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
README = HERE / "README.md"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


@dataclass(frozen=True)
class Row:
    """One row of WORKLOADS.md: the shape and kube-scheduler's pods/s (min, median, max)."""

    workload: str
    nodes: int
    init_pods: int
    pods: int
    reference: tuple[float, float, float]


ROWS = (
    Row("basic", 500, 500, 1000, (1569, 1601, 2003)),
    Row("basic", 5000, 1000, 10000, (643, 741, 796)),
    Row("podaffinity", 500, 500, 1000, (389, 434, 503)),
    Row("podaffinity", 5000, 5000, 5000, (62.8, 64.6, 70.5)),
    Row("antiaffinity", 500, 100, 400, (803, 853, 960)),
    Row("antiaffinity", 5000, 1000, 2000, (182, 220, 245)),
    Row("spread", 500, 1000, 1000, (1172, 1222, 1279)),
    Row("spread", 5000, 5000, 5000, (203, 223, 228)),
    Row("preemption", 500, 2000, 500, (189, 206, 207)),
    Row("preemption", 1000, 4000, 1000, (88.9, 99.8, 116)),
)


def run_row(row: Row, reps: int) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "kubesched.cli",
        "bench",
        "--workload",
        row.workload,
        "--nodes",
        str(row.nodes),
        "--init-pods",
        str(row.init_pods),
        "--pods",
        str(row.pods),
        "--reps",
        str(reps),
        "-o",
        "json",
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def table(results: list[tuple[Row, dict]]) -> str:
    lines = [
        "| workload | nodes | initial | measured | ours min / median / max (pods/s) "
        "| kube-scheduler min / median / max | median ratio | attempt p50 / p99 (ms) | peak RSS (MB) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row, r in results:
        pps = r["podsPerSecond"]
        lat = r["attemptLatencyMs"]
        ref = row.reference
        lines.append(
            f"| {row.workload} | {row.nodes} | {row.init_pods} | {row.pods} "
            f"| {pps['min']:.0f} / {pps['median']:.0f} / {pps['max']:.0f} "
            f"| {ref[0]:g} / {ref[1]:g} / {ref[2]:g} | {pps['median'] / ref[1]:.2f}x "
            f"| {lat['p50']:.2f} / {lat['p99']:.2f} | {r['peakRssMB']:.0f} |"
        )
    return "\n".join(lines)


def write_readme(body: str) -> None:
    text = README.read_text() if README.exists() else f"# Benchmarks\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text or END not in text:
        text += f"\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{BEGIN}\n{body}\n{END}{tail}")


def run_large() -> str:
    """The large simulations from YAML with default flags (benchmarks/large_simulation.py: 2,000 nodes / 30,000
    pods and 5,000 / 150,000, each with its memory budget), a line each."""
    cmd = [sys.executable, str(HERE / "large_simulation.py")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode not in (0, 1):  # 1: a run over its budget, which the lines say
        raise SystemExit(f"large_simulation.py failed: {proc.stdout}{proc.stderr}")
    lines: list[str] = []
    for ln in proc.stdout.splitlines():
        if ln.startswith("scenario:"):
            shape = ", ".join(ln.removeprefix("scenario: ").split(", ")[:2])  # "2000 nodes, 30000 pods"
            lines.append(f"- {shape}")
        elif ln.startswith(("simulate", "load_scenario:")):
            lines[-1] += f"; {ln}"
    body = "\n".join(lines)
    return (
        "Large: `kubesched simulate` from YAML (batch, basic shape), default flags: the table, no per-node "
        f"scores kept (kube-scheduler on 5,000 / 150,000: 276 s, 5.6 GB):\n\n{body}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--only", help="run only this workload (the README is left alone)")
    p.add_argument("--no-large", action="store_true", help="skip the 150,000-pod simulation")
    args = p.parse_args(argv)
    rows = [r for r in ROWS if args.only in (None, r.workload)]
    results = []
    for row in rows:
        r = run_row(row, args.reps)
        results.append((row, r))
        print(f"{row.workload} {row.nodes}: median {r['podsPerSecond']['median']:.0f} pods/s", file=sys.stderr)
    body = table(results)
    if args.only is None and not args.no_large:
        body += "\n\n" + run_large()
    print(body)
    if args.only is None:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d")
        machine = f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}"
        write_readme(f"Measured {stamp} on {machine}, {args.reps} runs per row.\n\n{body}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
