"""The dry run's batch loop stops where the one-by-one loop would (dry_run_preemption)."""

from __future__ import annotations

import random

import pytest

from kubesched.preemption.candidates import Candidate, Victims
from kubesched.preemption.evaluator import _take_until_enough


def one_by_one(
    cands: list[Candidate], non_violating: list[Candidate], num_violating: int, num_candidates: int
) -> tuple[bool, list[Candidate]]:
    nv, total = len(non_violating), len(non_violating) + num_violating
    for i, c in enumerate(cands):
        total += 1
        nv += c.victims.num_pdb_violations == 0
        if nv and total >= num_candidates:
            return True, cands[: i + 1]
    return False, cands


@pytest.mark.parametrize("seed", range(200))
def test_stops_where_the_one_by_one_loop_stops(seed: int) -> None:
    rng = random.Random(seed)
    make = [Candidate(f"n{i}", Victims([], rng.choice([0, 0, 1, 2]))) for i in range(rng.randint(0, 20))]
    before = [Candidate("b", Victims([], 0))] * rng.choice([0, 0, 1, 3])
    num_violating = rng.randint(0, 8)
    num = rng.randint(1, 25)
    assert _take_until_enough(make, before, num_violating, num) == one_by_one(make, before, num_violating, num)
