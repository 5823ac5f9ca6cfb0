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


# Shapes where the score totals can be summed without per-plugin arrays for many pods (no images on nodes, no
# PreferNoSchedule taints, no existing pod with affinity terms), and two where they mostly cannot (the cycles
# fall back to every plugin's scores).
TOTALS_SHAPES = {
    "no-images": Shape(images=0, taint_fraction=0.0, pod_affinity_fraction=0.0, spread_fraction=0.0),
    "no-images-batch": Shape(
        nodes=20, images=0, taint_fraction=0.0, pod_affinity_fraction=0.0, pending_pods=40, mode="batch"
    ),
    "priorities": Shape(
        nodes=8, images=0, taint_fraction=0.0, pod_affinity_fraction=0.0, running_pods=25, priorities=(0, 100)
    ),
    "extended": Shape(nodes=8, images=0, taint_fraction=0.0, pod_affinity_fraction=0.0, extended_resources=3),
    "config": Shape(nodes=8, images=0, taint_fraction=0.0, pod_affinity_fraction=0.0, config=True),
    "prefer-no-schedule": Shape(images=0, taint_fraction=0.5),
    "images": Shape(images=4, taint_fraction=0.0, spread_fraction=0.0),
}
FALLING_BACK = ("prefer-no-schedule", "images")


def _summed_cycles(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the cycles whose totals were summed without per-plugin scores (run_score_totals answered)."""
    from kubesched.framework.runtime.score_passes import ScorePasses

    seen = [0]
    original = ScorePasses.run_score_totals

    def counted(self: ScorePasses, *args: object) -> object:
        totals = original(self, *args)  # type: ignore[arg-type]
        seen[0] += totals is not None
        return totals

    monkeypatch.setattr(ScorePasses, "run_score_totals", counted)
    return seen


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape", TOTALS_SHAPES, ids=str)
def test_score_totals_alone_decide_like_every_plugins_scores(
    shape: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report that reads no per-plugin scores (the table) lets the cycle sum the totals row by row: the same
    placements, messages, attempts and chosen totals as when every plugin's scores are made (-o json)."""
    from kubesched.simulate.output import plain_table

    def run(keep_scores: bool) -> tuple[dict, list[str]]:
        sim = Simulation(to_scenario(random_scenario(TOTALS_SHAPES[shape], seed)), seed=seed, keep_scores=keep_scores)
        result = sim.run()
        return to_dict(result), list(plain_table(result, wide=True))

    summed = _summed_cycles(monkeypatch)
    totals_only, wide = run(keep_scores=False)
    used = summed[0]
    every, wide_every = run(keep_scores=True)
    assert summed[0] == used, "with every plugin's scores kept, no cycle sums the totals alone"
    for r in every["results"]:
        r.pop("scores", None)
        r.pop("tiedNodes", None)
    assert totals_only == every
    assert wide == wide_every
    if shape not in FALLING_BACK:
        assert used > 0
