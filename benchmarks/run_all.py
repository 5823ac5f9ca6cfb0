"""Run every row of ../shared/benchmarks/WORKLOADS.md against kube-scheduler v1.34.1 and write benchmarks/README.md.

For each row, each repetition runs `kubesched bench --reps 1` and then the
oracle's `oracle bench --reps 1` (kube-scheduler v1.34.1 in-process with a fake
client, ../shared/oracle/README.md), each in a fresh process, alternating, so
that both see the same machine at nearly the same moment. The table puts our
min / median / max pods/s beside kube-scheduler's and gives the ratio of the
medians; no stored reference figure is used.

    .venv/bin/python benchmarks/run_all.py            # all rows, rewrite the README table
    .venv/bin/python benchmarks/run_all.py --only basic --reps 1
    .venv/bin/python benchmarks/run_all.py --no-oracle   # ours only (the README is left alone)

The oracle binary is taken from --oracle, else ~/.cache/oracle, else unpacked
there from ../shared/oracle/oracle.xz.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import platform
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
README = HERE / "README.md"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
ORACLE_XZ = HERE.parent.parent / "shared" / "oracle" / "oracle.xz"
ORACLE_CACHE = Path.home() / ".cache" / "oracle"


@dataclass(frozen=True)
class Row:
    """One shape of WORKLOADS.md."""

    workload: str
    nodes: int
    init_pods: int
    pods: int


ROWS = (
    Row("basic", 500, 500, 1000),
    Row("basic", 5000, 1000, 10000),
    Row("podaffinity", 500, 500, 1000),
    Row("podaffinity", 5000, 5000, 5000),
    Row("antiaffinity", 500, 100, 400),
    Row("antiaffinity", 5000, 1000, 2000),
    Row("spread", 500, 1000, 1000),
    Row("spread", 5000, 5000, 5000),
    Row("preemption", 500, 2000, 500),
    Row("preemption", 1000, 4000, 1000),
)


@dataclass
class Measured:
    """One row's repetitions: ours and kube-scheduler's, in the order they ran."""

    ours: list[float] = field(default_factory=list)
    theirs: list[float] = field(default_factory=list)
    latency_p50: list[float] = field(default_factory=list)
    latency_p99: list[float] = field(default_factory=list)
    our_rss: list[float] = field(default_factory=list)
    their_rss: list[float] = field(default_factory=list)


def _shape_args(row: Row) -> list[str]:
    return [
        "--workload",
        row.workload,
        "--nodes",
        str(row.nodes),
        "--init-pods",
        str(row.init_pods),
        "--pods",
        str(row.pods),
        "--reps",
        "1",
    ]


def run_ours(row: Row) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "kubesched.cli", "bench", *_shape_args(row), "-o", "json"]
    result: dict[str, Any] = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return result


def run_oracle(oracle: Path, row: Row) -> dict[str, Any]:
    proc = subprocess.run([str(oracle), "bench", *_shape_args(row)], check=True, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    result: dict[str, Any] = json.loads(lines[-1])
    if result["bound"] != row.pods:
        raise SystemExit(f"oracle bound {result['bound']} of {row.pods} pods on {row}")
    return result


def measure(row: Row, reps: int, oracle: Path | None) -> Measured:
    m = Measured()
    for _ in range(reps):
        ours = run_ours(row)
        if ours["scheduled"] != [row.pods]:
            raise SystemExit(f"kubesched bound {ours['scheduled']} of {row.pods} pods on {row}")
        m.ours.append(ours["podsPerSecond"]["median"])
        m.latency_p50.append(ours["attemptLatencyMs"]["p50"])
        m.latency_p99.append(ours["attemptLatencyMs"]["p99"])
        m.our_rss.append(ours["peakRssMB"])
        if oracle is not None:
            theirs = run_oracle(oracle, row)
            m.theirs.append(theirs["pods_per_s"])
            m.their_rss.append(theirs["peak_rss_mb"])
    return m


def _spread(values: list[float]) -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return " / ".join(f"{v:.3g}" if v < 100 else f"{v:.0f}" for v in (low, mid, high))


def table(results: list[tuple[Row, Measured]]) -> str:
    lines = [
        "| workload | nodes | initial | measured | ours min / median / max (pods/s) "
        "| kube-scheduler min / median / max | median ratio | our attempt p50 / p99 (ms) "
        "| peak RSS ours / kube-scheduler (MB) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row, m in results:
        theirs = _spread(m.theirs) if m.theirs else "-"
        ratio = f"{statistics.median(m.ours) / statistics.median(m.theirs):.2f}x" if m.theirs else "-"
        their_rss = f"{max(m.their_rss):.0f}" if m.their_rss else "-"
        lines.append(
            f"| {row.workload} | {row.nodes} | {row.init_pods} | {row.pods} | {_spread(m.ours)} | {theirs} | {ratio} "
            f"| {statistics.median(m.latency_p50):.2f} / {statistics.median(m.latency_p99):.2f} "
            f"| {max(m.our_rss):.0f} / {their_rss} |"
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
        "scores kept (kube-scheduler on 5,000 / 150,000, `oracle bench --large`, one run on this kind of "
        f"machine: 276 s, 5.6 GB):\n\n{body}"
    )


def find_oracle(given: str | None) -> Path:
    if given:
        return Path(given)
    if not ORACLE_CACHE.exists():
        if not ORACLE_XZ.exists():
            raise SystemExit(f"no oracle: neither {ORACLE_CACHE} nor {ORACLE_XZ}; give --oracle or --no-oracle")
        ORACLE_CACHE.parent.mkdir(parents=True, exist_ok=True)
        with lzma.open(ORACLE_XZ) as src, open(ORACLE_CACHE, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.chmod(ORACLE_CACHE, 0o755)
    return ORACLE_CACHE


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=3, help="repetitions per row, ours and kube-scheduler's alternating")
    p.add_argument("--only", help="run only this workload (the README is left alone)")
    p.add_argument("--nodes", type=int, help="run only the rows with this many nodes (the README is left alone)")
    p.add_argument("--no-large", action="store_true", help="skip the large simulations")
    p.add_argument("--oracle", help="the oracle binary (default ~/.cache/oracle, unpacked from ../shared/oracle)")
    p.add_argument("--no-oracle", action="store_true", help="ours only (the README is left alone)")
    args = p.parse_args(argv)
    rows = [r for r in ROWS if args.only in (None, r.workload) and args.nodes in (None, r.nodes)]
    oracle = None if args.no_oracle else find_oracle(args.oracle)
    results = []
    for row in rows:
        m = measure(row, args.reps, oracle)
        results.append((row, m))
        theirs = f", kube-scheduler {statistics.median(m.theirs):.0f}" if m.theirs else ""
        print(f"{row.workload} {row.nodes}: ours {statistics.median(m.ours):.0f} pods/s{theirs}", file=sys.stderr)
    whole = args.only is None and args.nodes is None and oracle is not None
    body = table(results)
    if whole and not args.no_large:
        body += "\n\n" + run_large()
    print(body)
    if whole:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d")
        machine = f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}"
        write_readme(
            f"Measured {stamp} on {machine}: {args.reps} runs per row, ours and kube-scheduler v1.34.1's "
            f"(`oracle bench`, both cores) alternating.\n\n{body}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
