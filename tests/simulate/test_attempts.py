"""The attempt recorder keeps per-node scores only for the pods a report prints them for."""

from __future__ import annotations

from pathlib import Path

from kubesched.scenario import load_scenario
from kubesched.simulate.runner import Simulation

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"


def _scored(sim: Simulation) -> set[str]:
    return {k for k, a in sim.attempts.items() if a.scores}


def test_all_none_or_some_pods_keep_their_scores() -> None:
    scenario = load_scenario(EXAMPLE)
    every = Simulation(scenario, seed=0)
    every.run()
    scored = _scored(every)
    assert len(scored) >= 3
    nothing = Simulation(scenario, seed=0, keep_scores=False)
    nothing.run()
    assert _scored(nothing) == set()
    one = sorted(scored)[0]
    some = Simulation(scenario, seed=0, keep_scores={one})
    some.run()
    assert _scored(some) == {one}
    assert some.attempts[one].plugin_scores == every.attempts[one].plugin_scores


def test_without_scores_the_chosen_score_and_attempts_stay() -> None:
    scenario = load_scenario(EXAMPLE)
    with_scores = {o.key: o for o in Simulation(scenario, seed=0).run().results}
    lean = {o.key: o for o in Simulation(scenario, seed=0, keep_scores=False).run().results}
    for key, o in with_scores.items():
        assert lean[key].scores is None
        assert lean[key].attempts == o.attempts >= (1 if o.status != "Pending" else 0)
        assert lean[key].score == (max(o.scores.values()) if o.scores else None), key
    assert any(o.attempts > 1 for o in lean.values())


def test_spooled_scores_read_back_as_kept_ones() -> None:
    scenario = load_scenario(EXAMPLE)
    kept = Simulation(scenario, seed=0)
    kept.run()
    spooled = Simulation(scenario, seed=0, spool_scores=True)
    spooled.run()
    assert _scored(kept) == _scored(spooled)
    for key in _scored(kept):
        assert spooled.attempts[key].scores == kept.attempts[key].scores
        assert spooled.attempts[key].tied == kept.attempts[key].tied
