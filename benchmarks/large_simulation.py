"""Large simulations end to end: `kubesched simulate` on a YAML file, wall time and peak memory.

Writes the basic-shape scenario (N nodes, no initial pods, M pending pods,
batch mode; kubesched.simulate.generate.basic_cluster) to a temporary file,
then times, each in its own process:

- `kubesched simulate <file>` with default flags (the table, piped to
  /dev/null), its wall time and peak RSS (os.wait4's rusage of that child);
- `load_scenario` alone (wall time and peak RSS, the forked YAML reader's included).

By default both shapes of the memory budget run: 2,000 nodes / 30,000 pods
(under 500 MB) and 5,000 nodes / 150,000 pods (under 1.5 GB); the script exits
with status 1 when a run goes over its budget.

    .venv/bin/python benchmarks/large_simulation.py
    .venv/bin/python benchmarks/large_simulation.py --nodes 500 --pods 15000 --output json --max-rss-mb 400

The YAML is what `to_yaml(basic_cluster(...))` writes, built from one dumped
node and one dumped pod with the names substituted (dumping 155,000 documents
takes longer than loading them); a small case is checked against to_yaml on
every run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from kubesched.scenario.yamlstream import second_core_idle
from kubesched.simulate.generate import basic_cluster, to_yaml

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_NAME = "NAME-PLACEHOLDER"

# Run in a child process: prints the load time and that process's peak RSS (with its forked reader's).
_LOAD = """
import json, resource, sys, time
from kubesched.scenario import load_scenario
t = time.perf_counter()
s = load_scenario(sys.argv[1])
wall = time.perf_counter() - t
peak = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
print(json.dumps({"wall": wall, "peak_kb": peak, "manifests": len(s.manifests)}))
"""


def _dump(doc: dict[str, Any]) -> str:
    return yaml.dump(doc, Dumper=_DUMPER, sort_keys=False)


def scenario_yaml(nodes: int, pods: int) -> str:
    """to_yaml(basic_cluster(nodes, 0, pods)), from templates."""
    docs = basic_cluster(1, 0, 1)
    header = dict(docs[0], description=f"basic {nodes} nodes")
    node_tpl = _dump(json.loads(json.dumps(docs[1]).replace("scheduler-perf-0", _NAME)))
    pod_tpl = _dump(json.loads(json.dumps(docs[2]).replace("pod-0", _NAME)))
    parts = [_dump(header)]
    parts += ["---\n" + node_tpl.replace(_NAME, f"scheduler-perf-{i}") for i in range(nodes)]
    parts += ["---\n" + pod_tpl.replace(_NAME, f"pod-{i}") for i in range(pods)]
    return "".join(parts)


def _peak_mb(kb: int) -> float:
    # ru_maxrss is in kilobytes on Linux, bytes on macOS.
    return kb / (1024 * 1024 if sys.platform == "darwin" else 1024)


# (nodes, pods, peak RSS budget in MB) of the default run: issue "long runs a person can live with".
BUDGETS = ((2000, 30_000, 500), (5000, 150_000, 1500))


def _await_idle_core(limit: float = 180.0) -> None:
    """Wait (up to `limit` s) until the load average shows an idle core: the YAML reader forks its second process
    only then (yamlstream.second_core_idle), and a run right after other benchmarks would otherwise time the
    one-process reading of a busy machine. (On one core there is nothing to wait for.)"""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    waited = 0.0
    while cpus >= 2 and not second_core_idle() and waited < limit:
        time.sleep(5)
        waited += 5
    if waited:
        print(f"(waited {waited:.0f} s for an idle core: load average {os.getloadavg()[0]:.2f})")


def _simulate(path: Path, output: str, no_scores: bool, timeout: float | None) -> tuple[float, float] | None:
    """`kubesched simulate` on `path`, stdout to /dev/null: (wall seconds, that child's peak RSS in MB)."""
    _await_idle_core()
    cmd = [sys.executable, "-m", "kubesched.cli", "simulate", str(path), "--quiet"]
    if output != "table":
        cmd += ["-o", output]
    if no_scores:
        cmd.append("--no-scores")
    t = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        timer = threading.Timer(timeout, proc.kill) if timeout else None
        if timer is not None:
            timer.start()
        # wait4: this child's own resource usage (RUSAGE_CHILDREN would be the maximum over every child).
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        if timer is not None:
            timer.cancel()
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code
        if code != 0:
            err.seek(0)
            print(f"simulate failed ({code}): {err.read().decode(errors='replace').strip()}")
            return None
    return wall, _peak_mb(usage.ru_maxrss)


def _run(nodes: int, pods: int, budget: float | None, args: argparse.Namespace) -> bool:
    """One shape: write it, simulate it, load it; False when the run failed or went over `budget` MB."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "large.yaml"
        t = time.perf_counter()
        path.write_text(scenario_yaml(nodes, pods))
        size = path.stat().st_size / 2**20
        print(f"scenario: {nodes} nodes, {pods} pods, {size:.0f} MB ({time.perf_counter() - t:.1f} s to write)")
        ok = True
        if not args.load_only:
            got = _simulate(path, args.output, args.no_scores, args.timeout)
            if got is None:
                return False
            wall, peak = got
            flags = [f"-o {args.output}"] if args.output != "table" else []
            flags += ["--no-scores"] if args.no_scores else []
            verdict = "" if budget is None else (f" (budget {budget:.0f} MB: " + ("ok)" if peak <= budget else "OVER)"))
            print(f"simulate {' '.join(flags) or '(default flags)'}: {wall:.2f} s, peak RSS {peak:.0f} MB{verdict}")
            ok = budget is None or peak <= budget
        _await_idle_core()
        load = subprocess.run([sys.executable, "-c", _LOAD, str(path)], capture_output=True, text=True)
        if load.returncode != 0:
            print(f"load_scenario failed: {load.stderr.strip()}")
            return False
        got_load = json.loads(load.stdout)
        print(f"load_scenario: {got_load['wall']:.2f} s, peak RSS {_peak_mb(got_load['peak_kb']):.0f} MB")
        return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, help="one run of this many nodes (with --pods) instead of both budgets")
    parser.add_argument("--pods", type=int)
    parser.add_argument("--max-rss-mb", type=float, help="the budget of that run (exit 1 above it)")
    parser.add_argument("--output", choices=("table", "wide", "json", "yaml"), default="table")
    parser.add_argument("--no-scores", action="store_true", help="pass --no-scores to kubesched simulate")
    parser.add_argument("--load-only", action="store_true", help="time load_scenario only")
    parser.add_argument("--timeout", type=float, default=None, help="give up on a simulation after this long (s)")
    args = parser.parse_args()

    if scenario_yaml(3, 4) != to_yaml(basic_cluster(3, 0, 4)):
        raise SystemExit("the YAML template no longer matches to_yaml(basic_cluster(...))")
    if (args.nodes is None) != (args.pods is None):
        parser.error("--nodes and --pods go together")
    runs = [(args.nodes, args.pods, args.max_rss_mb)] if args.nodes is not None else list(BUDGETS)
    ok = True
    for nodes, pods, budget in runs:
        ok = _run(nodes, pods, budget, args) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
