"""The whole-snapshot fast paths decide exactly as the per-node reference methods, on random clusters."""

from __future__ import annotations

import pytest

from kubesched.simulate.generate import Shape, random_scenario, to_scenario
from kubesched.simulate.output import to_dict
from kubesched.simulate.runner import Simulation


def simulate(seed: int, shape: Shape, vector: bool) -> dict:
    sim = Simulation(to_scenario(random_scenario(shape, seed)), seed=seed)
    for fw in sim.scheduler.profiles.values():
        fw.use_vector_paths = vector
    return to_dict(sim.run())


SHAPES = {
    "small": Shape(),
    "priorities": Shape(nodes=8, running_pods=25, pending_pods=25, priorities=(0, 100, 1000)),
    "many-nodes": Shape(nodes=130, zones=4, running_pods=150, pending_pods=60),
    "batch": Shape(nodes=10, pending_pods=40, priorities=(0, 50, 500), mode="batch"),
    # More extended resources than one packed failure key holds (30): reasons and preemption verdicts.
    "many-extended": Shape(nodes=8, running_pods=20, pending_pods=20, priorities=(0, 100), extended_resources=34),
    # Local WaitForFirstConsumer PVs, zonal and CSI-limited bound PVs, ReadWriteOncePod, missing claims.
    "volumes": Shape(nodes=8, running_pods=16, pending_pods=25, priorities=(0, 100, 1000), volumes=True),
    # Devices through ResourceSlices: claims, claim templates, selectors, counts, allocationMode All.
    "dra": Shape(nodes=8, running_pods=12, pending_pods=25, priorities=(0, 100, 1000), dra=True),
    "volumes-dra-batch": Shape(
        nodes=8, running_pods=16, pending_pods=25, priorities=(0, 100), volumes=True, dra=True, mode="batch"
    ),
    # A random scoring configuration (strategy, weights, disabled score plugins, plugin args).
    "config": Shape(nodes=8, running_pods=16, pending_pods=25, config=True),
}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_fast_path_decides_like_reference(shape: str, seed: int) -> None:
    fast = simulate(seed, SHAPES[shape], vector=True)
    reference = simulate(seed, SHAPES[shape], vector=False)
    assert fast == reference
    # The scenario is not trivial: some pods landed, with scores; the add-ons were at work.
    assert any(r["status"] == "Scheduled" for r in fast["results"])
    messages = " ".join(r.get("message") or "" for r in fast["results"])
    if SHAPES[shape].volumes:
        assert "volume" in messages
    if SHAPES[shape].dra:
        assert fast.get("claims")
