"""scheduler_perf-style benchmarks (../shared/benchmarks/WORKLOADS.md) on the embedded cluster.

Nodes and initial pods (already bound) are created before the clock starts.
The clock runs from the creation of the first measured pod to the last bind:
measured pods are created through the API (admission included) and the
scheduler runs until every one of them is bound. Reported: pods per second
(min / median / max over repetitions), scheduling-attempt latency p50 / p99,
and peak RSS of the process.
"""

from __future__ import annotations

import gc
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.decode import decode
from kubesched.bench.workloads import WORKLOADS, initial_pod, measured_pod, node
from kubesched.cluster.embedded import EmbeddedCluster
from kubesched.config import default_configuration
from kubesched.scheduler import Scheduler


@dataclass
class RunResult:
    pods_per_second: float
    seconds: float
    latencies: list[float] = field(default_factory=list)
    scheduled: int = 0


@dataclass
class BenchResult:
    workload: str
    nodes: int
    init_pods: int
    pods: int
    runs: list[RunResult]
    peak_rss_mb: float

    def summary(self) -> dict[str, Any]:
        rates = [r.pods_per_second for r in self.runs]
        lat = sorted(x for r in self.runs for x in r.latencies)
        return {
            "workload": self.workload,
            "nodes": self.nodes,
            "initPods": self.init_pods,
            "pods": self.pods,
            "podsPerSecond": {"min": min(rates), "median": statistics.median(rates), "max": max(rates)},
            "attemptLatencyMs": {"p50": _pct(lat, 0.50) * 1e3, "p99": _pct(lat, 0.99) * 1e3},
            "peakRssMB": self.peak_rss_mb,
            "scheduled": [r.scheduled for r in self.runs],
        }


def _pct(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    i = min(len(sorted_values) - 1, int(q * len(sorted_values)))
    return sorted_values[i]


def prepare(workload: str, nodes: int, init_pods: int, seed: int = 0) -> tuple[EmbeddedCluster, Scheduler]:
    cluster = EmbeddedCluster()
    client = cluster.client
    for ns in ("sched-0", "sched-1"):
        client.ensure_namespace(ns)
    for i in range(nodes):
        client.create("Node", decode("Node", node(i, workload)))
    for i in range(init_pods):
        client.create("Pod", decode("Pod", initial_pod(workload, i, nodes)))
    sched = Scheduler(cluster, default_configuration(), clock=cluster.clock.now, seed=seed)
    sched.sync()
    return cluster, sched


def run_once(workload: str, nodes: int, init_pods: int, pods: int, seed: int = 0) -> RunResult:
    cluster, sched = prepare(workload, nodes, init_pods, seed)
    manifests = [decode("Pod", measured_pod(workload, i)) for i in range(pods)]
    latencies: list[float] = []
    clock = time.perf_counter
    gc_was = gc.isenabled()
    gc.disable()
    try:
        start = clock()
        for m in manifests:
            cluster.client.create("Pod", m)
        while True:
            t0 = clock()
            if not sched.schedule_one():
                break
            latencies.append(clock() - t0)
        elapsed = clock() - start
    finally:
        if gc_was:
            gc.enable()
    bound = sum(1 for p in cluster.store.iter("Pod") if p.spec.node_name and p.metadata.name.startswith("pod-"))
    return RunResult(pods / elapsed if elapsed > 0 else 0.0, elapsed, latencies, bound)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def bench(
    workload: str,
    nodes: int,
    pods: int,
    init_pods: int,
    reps: int = 3,
    seed: int = 0,
    profile: str | None = None,
    progress: Callable[[int, RunResult], None] | None = None,
) -> BenchResult:
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r}: one of {', '.join(WORKLOADS)}")
    # Initial pods are spread over the nodes (i % nodes) and rates divide by the pods: none may be empty.
    for name, value, low in (("nodes", nodes, 1), ("pods", pods, 1), ("init_pods", init_pods, 0), ("reps", reps, 1)):
        if value < low:
            raise ValueError(f"{name} must be >= {low}, got {value}")
    runs = []
    for rep in range(reps):
        if profile and rep == 0:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
            r = run_once(workload, nodes, init_pods, pods, seed)
            prof.disable()
            prof.dump_stats(profile)
        else:
            r = run_once(workload, nodes, init_pods, pods, seed)
        runs.append(r)
        if progress is not None:
            progress(rep, r)
    return BenchResult(workload, nodes, init_pods, pods, runs, peak_rss_mb())
