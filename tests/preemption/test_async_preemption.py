"""Asynchronous preemption: what the scheduling loop sees while a preemption's victims are being deleted.

kube-scheduler 1.34 deletes victims in a goroutine while it goes on scheduling: the
pods it pops meanwhile still see the victims on the node and the preemptor nominated
there, so they go where there is room now instead of taking the space being freed.
The expected files were produced by kube-scheduler v1.34.1 (the oracle; the outcomes
are the same in repeated runs).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kubesched.framework.types import PodInfo
from kubesched.preemption.evaluator import Victims, pick_one_node_for_preemption
from kubesched.simulate.output import to_dict
from kubesched.simulate.runner import Simulation
from kubesched.simulate.scenario import load_scenario
from kubesched.testing import make_pod

CASES = sorted((Path(__file__).parent / "async_batch").glob("*.yaml"))
FIELDS = ("pod", "node", "status", "nominatedNode", "message")


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_pods_popped_during_a_preemption_see_its_victims_still_running(case: Path) -> None:
    want = json.loads(case.with_name(case.stem + ".expected.json").read_text())
    got = to_dict(Simulation(load_scenario(case), seed=0).run())
    assert [{f: r.get(f) for f in FIELDS} for r in got["results"]] == [
        {f: r.get(f) for f in FIELDS} for r in want["results"]
    ]
    assert got["deleted"] == want["deleted"]


def _victim(name: str, priority: int, started: datetime | None = None) -> PodInfo:
    pod = make_pod(name, "1", priority=priority)
    if started is not None:
        pod.status.start_time = started
    return PodInfo(pod)


def test_of_nodes_whose_victims_never_started_the_last_looked_at_wins() -> None:
    # GetPodStartTime reads the clock for a pod without a start time, once per node in turn.
    victims = {n: Victims([_victim(f"v-{n}", 0)]) for n in ("node-a", "node-b", "node-c")}
    assert pick_one_node_for_preemption(["node-a", "node-b", "node-c"], victims, None) == "node-c"
    assert pick_one_node_for_preemption(["node-c", "node-a", "node-b"], victims, None) == "node-b"


def test_a_victim_that_never_started_counts_as_started_after_every_one_that_did() -> None:
    started = datetime(2025, 1, 1, tzinfo=UTC)
    victims = {
        "node-a": Victims([_victim("v-a", 0)]),
        "node-b": Victims([_victim("v-b", 0, started)]),
    }
    assert pick_one_node_for_preemption(["node-a", "node-b"], victims, None) == "node-a"
    # Among the highest-priority victims of a node, the earliest start counts: a started one wins.
    victims["node-a"] = Victims([_victim("v-a1", 0), _victim("v-a2", 0, datetime(2024, 1, 1, tzinfo=UTC))])
    assert pick_one_node_for_preemption(["node-a", "node-b"], victims, None) == "node-b"
