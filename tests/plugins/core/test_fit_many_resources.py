"""NodeResourcesFit with more extended resources than one packed failure key holds (30).

The case (cases/many-extended-resources.yaml, expected file from kube-scheduler
v1.34.1) has pods asking for 34 extended resources: every failure reason must
be reported, and preemption must judge nodes as upstream does, on both the
whole-snapshot path and the per-node path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.scenario import load_scenario
from kubesched.simulate.output import to_dict
from kubesched.simulate.runner import Simulation

CASE = Path(__file__).parent / "cases" / "many-extended-resources.yaml"


@pytest.mark.parametrize("vector", [True, False], ids=["vector", "per-node"])
def test_many_extended_resources_match_kube_scheduler(vector: bool) -> None:
    expected = json.loads(CASE.with_suffix(".expected.json").read_text())
    sim = Simulation(load_scenario(CASE), seed=0)
    for fw in sim.scheduler.profiles.values():
        fw.use_vector_paths = vector
    got = {r["pod"]: r for r in to_dict(sim.run())["results"]}
    wide = 0
    for want in expected["results"]:
        have = got[want["pod"]]
        wide += (want["message"] or "").count("Insufficient example.com/") > 30
        if want.get("tiedNodes"):
            # Upstream chose among tied nodes at random: later pods depend on that choice.
            assert have["node"] in want["tiedNodes"]
            break
        for field in ("node", "status", "nominatedNode", "message"):
            assert have[field] == want[field], (want["pod"], field)
    assert wide, "no message names more than 30 insufficient resources"
