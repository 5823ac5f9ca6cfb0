"""One run of a trace under one policy and seed: the reference simulator's flow on kubesched's Scheduler.

The nodes are created, then the workload's pods one at a time (openb.workload's
order); each is scheduled by the real scheduling cycle, with the profile the
experiments use (experiments/run_scripts, scripts/generate_config_and_run.py):
kube-scheduler's filters as they are (DefaultPreemption off: with every pod
at priority 0 it has no victims), GpuShare's Filter and Reserve, every score
plugin off but the policy's, all nodes scored. A pod the scheduler cannot
place is deleted, as simulator.go's assumePod does, so it is never retried.
After each pod the arrived and allocated GPU milli are recorded: the
allocation curve's events.

Equal top scores go to the node with the smallest name (ReferenceScheduler), as
in the Kubernetes fork the reference builds against; the nodes carry the
reference's seeded `%04d-` name prefixes (openb.node_names), so that order is a
per-seed random one. Everything random comes from one generator seeded with the
seed, in the reference's order: shuffle, tuning, node names, then the scheduler.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from kubesched.cluster.embedded import EmbeddedCluster
from kubesched.config import load_config_mapping
from kubesched.scheduler import Scheduler

from .curve import Curve, allocation_curve
from .openb import NodeRow, PodRow, make_node, make_pod, node_names, workload
from .policies import GPU_SHARE, POLICIES, Policy
from .policies.frag import TypicalPod, typical_pods
from .policies.gpushare import MILLI

if TYPE_CHECKING:
    from kubesched.scheduler.schedule_pod import FeasibleNames


def policy(name: str | Policy) -> Policy:
    """A policy by its key (fgd) or its paper name (FGD), case-insensitively, or a Score plugin of one's own by
    its import path (`mypolicies.spread:Spread`: named after its class, GPUs picked best-fit at Reserve);
    ValueError names the known ones."""
    if isinstance(name, Policy):
        return name
    for key, p in POLICIES.items():
        if name.lower() in (key, p.title.lower()):
            return p
    module, sep, cls = name.partition(":")
    if sep and module and cls:
        return Policy(cls, name, "best")
    raise ValueError(f"unknown policy {name!r} (known: {', '.join(POLICIES)}; or a plugin's module:Class)")


def scheduler_config(p: Policy, typical: list[TypicalPod]) -> dict[str, Any]:
    """The experiments' profile for policy `p` (weight 1: with one score plugin, the weight changes no choice)."""
    plugins: dict[str, Any] = {
        "multiPoint": {"enabled": [{"name": GPU_SHARE}, {"name": p.plugin}]},
        # Every pod has priority 0: preemption finds no victim anywhere, so its dry runs over every
        # node change no placement; they are left out.
        "postFilter": {"disabled": [{"name": "*"}]},
        "preScore": {"disabled": [{"name": "*"}]},
        "score": {"disabled": [{"name": "*"}], "enabled": [{"name": p.plugin, "weight": 1}]},
    }
    if p.plugin.endswith(":RandomScore"):
        plugins["preScore"]["enabled"] = [{"name": p.plugin}]
    args: list[dict[str, Any]] = [{"name": GPU_SHARE, "args": {"gpuSelMethod": p.gpu_sel_method}}]
    if p.plugin.endswith(":FGD"):
        pods = [{"cpu": t.cpu, "milli": t.milli, "num": t.num, "models": t.models, "freq": t.freq} for t in typical]
        args.append({"name": p.plugin, "args": {"typicalPods": pods}})
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 100,
        "profiles": [{"schedulerName": "default-scheduler", "plugins": plugins, "pluginConfig": args}],
    }


class ReferenceScheduler(Scheduler):
    """kubesched's Scheduler with the tie-break of the reference's Kubernetes (github.com/mental2008/kubernetes).

    Its v1.20.5 fork replaced selectHost's reservoir sampling by the smallest name among the
    top-scored nodes ("for reproducibility"); the simulator vendors it
    (vendor/k8s.io/kubernetes/pkg/scheduler/core/generic_scheduler.go). Which of several equal
    nodes gets a pod decides much: a fixed preference packs pods onto the same nodes, where a
    uniform draw spreads them.
    """

    def select_host(self, names: FeasibleNames, totals: np.ndarray) -> tuple[str, np.ndarray]:
        tied = np.flatnonzero(totals == totals.max())
        return min(names[tied].tolist()), tied


@dataclass
class RunResult:
    """A run's events (GPU milli arrived and allocated after each pod), each pod's node ("" if none) and counts."""

    policy: str
    seed: int
    ratio: float
    total_gpus: int
    arrived: list[int] = field(default_factory=list)
    allocated: list[int] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    scheduled: int = 0
    failed: int = 0
    seconds: float = 0.0

    @property
    def label(self) -> str:
        return f"{self.policy}/seed{self.seed}"

    def curve(self) -> Curve:
        return allocation_curve(self.arrived, self.allocated, self.total_gpus)


def run(
    nodes: list[NodeRow],
    pods: list[PodRow],
    policy_name: str | Policy,
    seed: int = 42,
    ratio: float = 1.3,
    shuffle: bool = True,
    on_pod: Callable[[int, int], None] | None = None,
) -> RunResult:
    """Run the workload of `pods` on `nodes` under one policy; `on_pod(done, total)` follows the progress."""
    p = policy(policy_name)
    typical = typical_pods(r.request for r in sorted(pods, key=lambda r: r.name))
    rng = random.Random(seed)
    arrivals = workload(pods, nodes, ratio, rng, shuffle)
    names = node_names(nodes, rng)
    cluster = EmbeddedCluster()
    # Created in name order, as the reference creates them (its node list sorted before renaming).
    for n in sorted(nodes, key=lambda n: n.name):
        cluster.client.create("Node", make_node(n, names[n.name]))
    config = load_config_mapping(scheduler_config(p, typical), f"<{p.title} profile>")
    sched = ReferenceScheduler(cluster, config, clock=cluster.clock.now, seed=rng.getrandbits(64))
    sched.sync()
    result = RunResult(p.title, seed, ratio, sum(n.gpus for n in nodes))
    started = time.perf_counter()
    templates: dict[str, Any] = {}
    arrived = allocated = 0
    for i, a in enumerate(arrivals):
        template = templates.get(a.row.name)
        if template is None:
            template = templates[a.row.name] = make_pod(a.row)
        pod = template if a.name == a.row.name else _renamed(template, a.name)
        cluster.client.create("Pod", pod)
        _drain(sched)
        arrived += a.row.request.total
        bound = cluster.store.get("Pod", f"{pod.metadata.namespace}/{a.name}")
        if bound.spec.node_name:
            allocated += a.row.request.total
            result.scheduled += 1
        else:
            result.failed += 1
            cluster.client.delete_pod(pod.metadata.namespace, a.name)
            _drain(sched)
        result.hosts.append(bound.spec.node_name or "")
        result.arrived.append(arrived)
        result.allocated.append(allocated)
        if on_pod is not None:
            on_pod(i + 1, len(arrivals))
    result.seconds = time.perf_counter() - started
    return result


def _renamed(pod: Any, name: str) -> Any:
    return msgspec.structs.replace(pod, metadata=msgspec.structs.replace(pod.metadata, name=name))


def _drain(sched: Scheduler) -> None:
    """Let the scheduler try every pod it can now (no time passes: nothing here waits)."""
    sched.sync()
    while sched.schedule_one() or (sched.has_parked() and sched.resume_parked()):
        pass


def gpu_milli(nodes: list[NodeRow]) -> int:
    return sum(n.gpus for n in nodes) * MILLI
