"""DefaultPreemption's batch dry run: the pick keys it works out for all candidates at once are the ones
read from each candidate's victims, and its candidates and pick are those of the per-node reference."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kubesched.preemption.candidates import Candidate, Victims, _criteria, _earliest_top_start
from kubesched.preemption.evaluator import Evaluator
from kubesched.simulate.generate import to_scenario
from kubesched.simulate.runner import Simulation


def cluster(seed: int) -> list[dict[str, Any]]:
    """Nodes with up to 16 lower-priority pods (both sides of Go's insertion-sort limit), of a few
    priorities, some started (at few distinct times, so that starts tie) and some not, some under a PDB."""
    rng = random.Random(seed)
    docs: list[dict[str, Any]] = [{"kind": "Scenario", "mode": "sequential"}]
    for value in (0, 5, 10, 100):
        docs.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"p{value}"},
                "value": value,
            }
        )
    docs.append(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "guard"},
            "spec": {"maxUnavailable": rng.randint(0, 2), "selector": {"matchLabels": {"guarded": "yes"}}},
        }
    )
    for i in range(rng.randint(3, 8)):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i}"},
                "status": {"capacity": {"cpu": "16", "memory": "64Gi", "pods": "40"}},
            }
        )
        for j in range(rng.randint(1, 16)):
            meta: dict[str, Any] = {"name": f"run-{i}-{j}"}
            if rng.random() < 0.3:
                meta["labels"] = {"guarded": "yes"}
            status: dict[str, Any] = {"phase": "Running"}
            if rng.random() < 0.6:
                status["startTime"] = f"2025-01-01T00:0{rng.randrange(3)}:00Z"
            cpu = rng.choice(["500m", "500m", "1"])
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": meta,
                    "spec": {
                        "nodeName": f"n{i}",
                        "priorityClassName": f"p{rng.choice([0, 0, 5])}",
                        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
                    },
                    "status": status,
                }
            )
    for k in range(rng.randint(2, 6)):
        cpu = rng.choice(["8", "12", "15"])
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"new-{k}"},
                "spec": {
                    "priorityClassName": "p100",
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
                },
            }
        )
    return docs


def picks(seed: int, vector: bool) -> tuple[list[tuple[str, list[tuple[str, list[str], int]]]], int]:
    """Per preemption the node picked and the candidates (node, victims, PDB violations); and how many
    candidates came with a precomputed key, each checked against the key read from its victims."""
    sim = Simulation(to_scenario(cluster(seed)), seed=seed)
    seen: list[tuple[str, list[tuple[str, list[str], int]]]] = []
    precomputed = 0

    for fw in sim.scheduler.profiles.values():
        fw.use_vector_paths = vector
        ev: Evaluator = fw.plugins_by_name["DefaultPreemption"].evaluator  # type: ignore[attr-defined]
        original = ev.select_candidate

        def select(cands: list[Candidate], original: Any = original) -> Candidate | None:
            nonlocal precomputed
            for c in cands:
                v = c.victims
                if v.pick is not None:
                    precomputed += 1
                    plain = Victims(v.pods, v.num_pdb_violations)
                    assert v.pick == (_criteria(plain), _earliest_top_start(v.pods))
            best = original(cands)
            assert best is not None
            listed = [(c.name, [p.key for p in c.victims.pods], c.victims.num_pdb_violations) for c in cands]
            seen.append((best.name, listed))
            return best

        ev.select_candidate = select  # type: ignore[method-assign]
    sim.run()
    return seen, precomputed


@pytest.mark.parametrize("seed", range(24))
def test_batch_pick_keys_match_the_victims_and_the_reference(seed: int) -> None:
    fast, precomputed = picks(seed, vector=True)
    reference, none = picks(seed, vector=False)
    assert fast == reference
    assert none == 0
    assert precomputed or not fast
