"""The victims of a preemption, in kube-scheduler's own order (recorded by tools/oracle_victims.py).

Upstream orders a node's lower-priority pods with Go's unstable sort.Slice by
MoreImportantPod, where two pods without a start time are each "more
important" than the other; the pods evicted are the ones that come last. The
cases hold 4 to 120 such pods (insertion sort up to 12, pdqsort above, with
and without pattern breaking), some bound before the scheduler starts (they
reach its cache in the API server's list order), some with start times, in
one or two priorities. Both the arithmetic dry run and the one that re-runs
the filters must give upstream's victims in upstream's order.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from kubesched.api.gosort import sort_slice
from kubesched.framework.types import PodInfo
from kubesched.scenario import load_scenario
from kubesched.simulate.runner import Simulation

CASES = sorted((Path(__file__).parent / "victim_order").glob("*.yaml"))


def _first_preemption(case: Path, vector: bool) -> list[str]:
    sim = Simulation(load_scenario(case), seed=0)
    seen: list[tuple[str, str]] = []

    def record(victim: PodInfo, preemptor: PodInfo, node: str) -> None:
        seen.append((preemptor.key, victim.key))

    for fw in sim.scheduler.profiles.values():
        fw.use_vector_paths = vector
        fw.plugins_by_name["DefaultPreemption"].evaluator.on_victim = record  # type: ignore[attr-defined]
    sim.run()
    first = seen[0][0]
    out = []
    for preemptor, victim in seen:
        if preemptor != first:
            break
        out.append(victim)
    return out


@pytest.mark.parametrize("vector", [True, False], ids=["arithmetic", "filters"])
@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_first_preemption_evicts_upstreams_victims_in_upstreams_order(case: Path, vector: bool) -> None:
    want = json.loads(case.with_suffix(".victims.json").read_text())["victims"]
    got = _first_preemption(case, vector)
    assert got[: len(want)] == want


def test_cases_cover_both_sides_of_go_insertion_sort_limit() -> None:
    sizes = [len(json.loads(c.with_suffix(".victims.json").read_text())["victims"]) for c in CASES]
    assert min(sizes) <= 12 < max(sizes)


@pytest.mark.parametrize("n", [0, 1, 2, 12, 13, 49, 50, 51, 300])
def test_sort_slice_sorts_with_a_consistent_order(n: int) -> None:
    rng = random.Random(n)
    for _ in range(30):
        values = [rng.randrange(max(1, n // 3)) for _ in range(n)]
        if rng.random() < 0.3:
            values.sort(reverse=rng.random() < 0.5)
        v = list(values)
        sort_slice(v, lambda a, b: a < b)
        assert v == sorted(values)


def test_sort_slice_with_always_true_comparison_reverses_up_to_12_and_not_above() -> None:
    """Go's insertion sort moves each element in front of all 'equal' ones; pdqsort does something else."""
    for n in range(2, 13):
        v = list(range(n))
        sort_slice(v, lambda a, b: True)
        assert v == list(reversed(range(n)))
    v = list(range(13))
    sort_slice(v, lambda a, b: True)
    assert sorted(v) == list(range(13)) and v != list(reversed(range(13)))
