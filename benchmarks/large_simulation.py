"""The large scenario of ../shared/benchmarks/WORKLOADS.md, end to end: `kubesched simulate` on a YAML file.

Writes the basic-shape scenario (5,000 nodes, no initial pods, 150,000 pending
pods, batch mode; kubesched.simulate.generate.basic_cluster) to a temporary
file, then times, each in its own process:

- `load_scenario` alone (wall time and peak RSS, the forked YAML reader's included);
- `kubesched simulate <file> -o json`, output to /dev/null (wall time and the
  child's peak RSS from getrusage(RUSAGE_CHILDREN)).

    .venv/bin/python benchmarks/large_simulation.py
    .venv/bin/python benchmarks/large_simulation.py --nodes 500 --pods 15000 --no-scores

The YAML is what `to_yaml(basic_cluster(...))` writes, built from one dumped
node and one dumped pod with the names substituted (dumping 155,000 documents
takes longer than loading them); a small case is checked against to_yaml on
every run.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from kubesched.simulate.generate import basic_cluster, to_yaml

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_NAME = "NAME-PLACEHOLDER"

# Run in a child process: prints the load time and that process's peak RSS (with its forked reader's).
_LOAD = """
import json, resource, sys, time
from kubesched.simulate.scenario import load_scenario
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


def _simulate(path: Path, no_scores: bool, timeout: float | None) -> bool:
    cmd = [sys.executable, "-m", "kubesched.cli", "simulate", str(path), "-o", "json"]
    if no_scores:
        cmd.append("--no-scores")
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"simulate: still running after {timeout:.0f} s, stopped")
        return False
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        print(f"simulate failed ({proc.returncode}): {proc.stderr.decode(errors='replace').strip()}")
        return False
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"simulate: {wall:.2f} s, peak RSS {_peak_mb(peak):.0f} MB")
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--no-scores", action="store_true", help="pass --no-scores to kubesched simulate")
    parser.add_argument("--load-only", action="store_true", help="time load_scenario only")
    parser.add_argument("--timeout", type=float, default=None, help="give up on the simulation after this long (s)")
    args = parser.parse_args()

    if scenario_yaml(3, 4) != to_yaml(basic_cluster(3, 0, 4)):
        raise SystemExit("the YAML template no longer matches to_yaml(basic_cluster(...))")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "large.yaml"
        t = time.perf_counter()
        path.write_text(scenario_yaml(args.nodes, args.pods))
        size = path.stat().st_size / 2**20
        print(
            f"scenario: {args.nodes} nodes, {args.pods} pods, {size:.0f} MB ({time.perf_counter() - t:.1f} s to write)"
        )

        # The simulation first: RUSAGE_CHILDREN keeps the largest peak of any child waited for so far.
        if not args.load_only and not _simulate(path, args.no_scores, args.timeout):
            return 1
        load = subprocess.run([sys.executable, "-c", _LOAD, str(path)], capture_output=True, text=True)
        if load.returncode != 0:
            print(f"load_scenario failed: {load.stderr.strip()}")
            return 1
        got = json.loads(load.stdout)
        print(f"load_scenario: {got['wall']:.2f} s, peak RSS {_peak_mb(got['peak_kb']):.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
