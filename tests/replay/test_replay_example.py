"""The example replay (examples/replay): pods are conserved, no node is ever over-committed, configs differ."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from typing import Any

import pytest
from replay_helpers import EXAMPLES

from kubesched.api.resources import parse_resource_list, pod_requests, to_amounts
from kubesched.cluster.store import ADDED, DELETED, MODIFIED
from kubesched.config import load_config_file
from kubesched.replay import Replay, ReplayRun, load_inputs
from kubesched.replay.metrics import PREEMPTED


class CommitChecker:
    """Sums the requests of the bound, non-terminal pods per node at every pod event, on its own books."""

    def __init__(self, replay: Replay) -> None:
        self.store = replay.cluster.store
        self.allocatable: dict[str, dict[str, int]] = {}
        for n in self.store.list("Node"):
            self.allocatable[n.metadata.name] = to_amounts(
                parse_resource_list(n.status.allocatable or n.status.capacity)
            )
        self.on_node: dict[str, tuple[str, dict[str, int]]] = {}
        self.events = 0
        self.violations: list[str] = []
        self.peak: dict[str, dict[str, int]] = {}
        self.store.subscribe("Pod", self.handle)

    def handle(self, etype: str, old: Any, new: Any) -> None:
        self.events += 1
        pod = new if etype != DELETED else old
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        if etype in (ADDED, MODIFIED) and new.spec.node_name and new.status.phase not in ("Succeeded", "Failed"):
            reqs = to_amounts(pod_requests(new))
            reqs["pods"] = 1
            self.on_node[key] = (new.spec.node_name, reqs)
        else:
            self.on_node.pop(key, None)
        sums: dict[str, Counter[str]] = {}
        for node, reqs in self.on_node.values():
            sums.setdefault(node, Counter()).update(reqs)
        for node, total in sums.items():
            peak = self.peak.setdefault(node, {})
            for r, v in total.items():
                peak[r] = max(peak.get(r, 0), v)
                if v > self.allocatable[node].get(r, 0):
                    self.violations.append(f"{node} {r} {v} > {self.allocatable[node].get(r, 0)} after {key}")


@pytest.fixture(scope="module")
def example_runs() -> dict[str, tuple[ReplayRun, CommitChecker]]:
    scenario, trace = load_inputs(EXAMPLES / "cluster.yaml", EXAMPLES / "trace.csv")
    out = {}
    for name in ("least-allocated", "most-allocated"):
        cfg = load_config_file(EXAMPLES / f"{name}.yaml")
        replay = Replay(scenario, trace, cfg, label=name)
        checker = CommitChecker(replay)
        out[name] = (replay.run(), checker)
    return out


@pytest.mark.parametrize("name", ["least-allocated", "most-allocated"])
def test_pods_are_conserved_at_every_sample(example_runs: dict[str, Any], name: str) -> None:
    run, _ = example_runs[name]
    s = run.samples
    assert len(s) > 50
    for i in range(len(s)):
        assert s.arrived[i] == s.finished[i] + s.running[i] + s.pending[i] + s.preempted[i], f"sample {i}"
    assert s.arrived[-1] == len(run.pods) == 100
    c = run.counts()
    assert (s.finished[-1], s.running[-1], s.pending[-1], s.preempted[-1]) == (
        c["finished"],
        c["running"],
        c["pending"],
        c["preempted"],
    )
    # Times never go back; arrivals and ends only ever accumulate.
    assert all(a <= b for a, b in pairwise(s.time))
    for series in (s.arrived, s.finished, s.preempted):
        assert all(a <= b for a, b in pairwise(series))


@pytest.mark.parametrize("name", ["least-allocated", "most-allocated"])
def test_no_node_is_ever_over_committed(example_runs: dict[str, Any], name: str) -> None:
    run, checker = example_runs[name]
    assert checker.events > 200
    assert checker.violations == []
    assert run.overcommits == []
    # The workload does fill nodes: some node reaches its full cpu at some point.
    assert any(peak["cpu"] == checker.allocatable[n]["cpu"] for n, peak in checker.peak.items())


def test_example_has_queueing_preemption_and_an_unschedulable_pod(example_runs: dict[str, Any]) -> None:
    for run, _ in example_runs.values():
        s = run.summary()
        assert s["preempted"] >= 5
        assert s["pending"] == 1  # oversized-0 fits no node
        assert s["latencySeconds"]["p90"] > 60
        victims = [p for p in run.pods if p.state == PREEMPTED]
        assert all(p.bound is not None and p.end is not None and p.end >= p.bound for p in victims)
        assert {p.key for p in run.pods if p.state == "pending"} == {"default/oversized-0"}


def test_most_allocated_differs_from_least_allocated_on_the_example(example_runs: dict[str, Any]) -> None:
    least, _ = example_runs["least-allocated"]
    most, _ = example_runs["most-allocated"]
    placed_l = {p.key: p.node for p in least.pods}
    placed_m = {p.key: p.node for p in most.pods}
    differ = [k for k in placed_l if placed_l[k] != placed_m[k]]
    assert len(differ) > 20
    # Bin packing leaves whole nodes for the big pods: less cpu stranded on average.
    assert most.summary()["fragmentation"]["cpu"]["mean"] < least.summary()["fragmentation"]["cpu"]["mean"]
    # At the very start both put the first pod on an empty node; packing keeps the next ones there.
    first_l = least.pods[0].node
    assert sum(1 for p in most.pods[:8] if p.node == most.pods[0].node) > sum(
        1 for p in least.pods[:8] if p.node == first_l
    )
