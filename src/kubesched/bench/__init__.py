"""`kubesched bench`: scheduler_perf's workloads on the embedded cluster, in pods per second.

- workloads.py: the nodes and pods of each workload shape.
- run.py: one timed run and repetitions of it (pods/s, attempt latency, peak RSS).
"""

from kubesched.bench.run import BenchResult, RunResult, bench, prepare, run_once
from kubesched.bench.workloads import WORKLOADS

__all__ = ["WORKLOADS", "BenchResult", "RunResult", "bench", "prepare", "run_once"]
