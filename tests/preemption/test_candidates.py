"""pickOneNodeForPreemption with the keys a batch dry run precomputes: the same node as read from the victims."""

from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime

from kubesched.framework.types import PodInfo
from kubesched.preemption.candidates import Victims, _criteria, _earliest_top_start, pick_one_node_for_preemption
from kubesched.testing import make_pod


def _pod(name: str, priority: int, minute: int | None) -> PodInfo:
    pod = make_pod(name, "1", priority=priority)
    if minute is not None:
        pod.status.start_time = datetime(2025, 1, 1, 0, minute, tzinfo=UTC)
    return PodInfo(pod)


def _precomputed(v: Victims) -> Victims:
    return Victims(v.pods, v.num_pdb_violations, (_criteria(v), _earliest_top_start(v.pods)))


def test_precomputed_keys_pick_as_the_victims_do() -> None:
    # Equal first four criteria on most nodes; unstarted top victims (each node read "now", later than
    # any start), started ones, a PDB-violating node, a lower top priority.
    victims = {
        "a": Victims([_pod("a1", 5, None), _pod("a2", 1, 3)]),
        "b": Victims([_pod("b1", 5, 2), _pod("b2", 1, None)]),
        "c": Victims([_pod("c1", 5, None), _pod("c2", 1, 1)]),
        "d": Victims([_pod("d1", 5, 4), _pod("d2", 1, None)], 1),
        "e": Victims([_pod("e1", 5, 7), _pod("e2", 1, None)]),
        "f": Victims([_pod("f1", 5, 1), _pod("f2", 5, None)]),
    }
    assert _earliest_top_start(victims["a"].pods) == math.inf
    for names in itertools.permutations(victims, 4):
        order = list(names)
        want = pick_one_node_for_preemption(order, victims, None)
        for mask in itertools.product((False, True), repeat=len(order)):
            mixed = {n: _precomputed(victims[n]) if m else victims[n] for n, m in zip(order, mask, strict=True)}
            assert pick_one_node_for_preemption(order, mixed, None) == want
    # Of the nodes whose top victims never started, the last one looked at wins, over started ones.
    assert pick_one_node_for_preemption(["a", "b", "c", "e"], victims, None) == "c"
    assert pick_one_node_for_preemption(["b", "e", "d"], victims, None) == "e"
