"""The scheduling loop's timing in batch mode: when a binding's watch event reaches the queue.

kube-scheduler binds in a goroutine and pops the next pod at once, so a pod's binding
reaches the scheduling queue while the next pod is being scheduled: if that pod fails and
the event may help it, it is retried after its backoff instead of waiting in the
unschedulable pool. The expected files were produced by kube-scheduler v1.34.1 (the
oracle; the outcomes are the same in repeated runs).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.simulate.output import to_dict
from kubesched.simulate.runner import Simulation
from kubesched.simulate.scenario import load_scenario

CASES = sorted((Path(__file__).parent / "batch_timing").glob("*.yaml"))
FIELDS = ("pod", "node", "status", "nominatedNode", "message")


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_a_binding_is_seen_while_the_next_pod_is_scheduled(case: Path) -> None:
    want = json.loads(case.with_name(case.stem + ".expected.json").read_text())
    got = to_dict(Simulation(load_scenario(case), seed=0).run())
    assert [{f: r.get(f) for f in FIELDS} for r in got["results"]] == [
        {f: r.get(f) for f in FIELDS} for r in want["results"]
    ]
