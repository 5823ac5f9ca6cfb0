"""Instructions per pod of a benchmark row's measured phase, under callgrind: a figure noise does not move.

Wall-clock rates on a shared 2-core machine vary by 10-30 % from run to run;
a change worth 2 % can only be judged by counting instructions. This runs
`kubesched.bench.run.run_once` for N and for 2N measured pods under valgrind's
callgrind and prints (I(2N) - I(N)) / N: what one more pod costs, set-up and
imports cancelled out. Repeatable to ~0.01 % because the run is pinned: one
OpenBLAS thread (its idle workers spin, and their spinning counts),
PYTHONHASHSEED=0, address-space randomisation off (setarch -R), sources
byte-compiled first.

    .venv/bin/python benchmarks/instructions_per_pod.py basic 500 500 500
    .venv/bin/python benchmarks/instructions_per_pod.py preemption 500 2000 250 --src /path/to/other/checkout/src

Needs valgrind (Debian: valgrind) and setarch (util-linux). Each row takes
about a minute.
"""

from __future__ import annotations

import argparse
import compileall
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PINNED = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
COLLECTED = re.compile(r"Collected : (\d+)")


def instructions(src: Path, workload: str, nodes: int, init_pods: int, pods: int) -> int:
    """Instructions callgrind counts for one run_once of this shape (the whole process)."""
    code = f"from kubesched.bench import run as r; r.run_once({workload!r}, {nodes}, {init_pods}, {pods})"
    with tempfile.TemporaryDirectory() as tmp:
        cmd = ["setarch", platform.machine(), "-R", "valgrind", "--tool=callgrind"]
        cmd += [f"--callgrind-out-file={tmp}/out", sys.executable, "-c", code]
        env = {**os.environ, **PINNED, "PYTHONPATH": str(src)}
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    m = COLLECTED.search(proc.stderr)
    if proc.returncode != 0 or m is None:
        raise SystemExit(f"callgrind run failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return int(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workload", choices=("basic", "podaffinity", "antiaffinity", "spread", "preemption"))
    ap.add_argument("nodes", type=int)
    ap.add_argument("init_pods", type=int)
    ap.add_argument("pods", type=int, help="N: the runs measure N and 2N pods")
    ap.add_argument("--src", type=Path, default=SRC, help="the kubesched sources to measure (default: this checkout)")
    args = ap.parse_args()
    missing = [tool for tool in ("valgrind", "setarch") if shutil.which(tool) is None]
    if missing:
        print(f"needs {' and '.join(missing)} on PATH", file=sys.stderr)
        return 2
    compileall.compile_dir(args.src, quiet=1)
    one = instructions(args.src, args.workload, args.nodes, args.init_pods, args.pods)
    two = instructions(args.src, args.workload, args.nodes, args.init_pods, 2 * args.pods)
    per_pod = (two - one) / args.pods
    print(f"{args.workload} {args.nodes}/{args.init_pods}/{args.pods}: {per_pod / 1e6:.4f}M instructions per pod")
    return 0


if __name__ == "__main__":
    sys.exit(main())
