"""DefaultPreemption's batch dry run: the pick keys it works out for all candidates at once are the ones
read from each candidate's victims, and its candidates and pick are those of the per-node reference."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from kubesched.plugins.defaultpreemption import _KeptView
from kubesched.preemption.candidates import Candidate, Victims, _criteria, _earliest_top_start
from kubesched.preemption.evaluator import Evaluator
from kubesched.simulate.generate import to_scenario
from kubesched.simulate.runner import Simulation


def cluster(
    seed: int,
    mode: str = "sequential",
    preemptors: tuple[int, int] = (2, 6),
    nodes: tuple[int, int] = (3, 8),
    min_available: bool = False,
) -> list[dict[str, Any]]:
    """Nodes with up to 16 lower-priority pods (both sides of Go's insertion-sort limit), of a few
    priorities, some started (at few distinct times, so that starts tie) and some not, some under a PDB;
    preemptors of priority 100 (in batch mode also 5 and 10: nominated pods a later preemptor yields to).
    With `min_available`, the PDB allows fewer disruptions after each eviction of a guarded pod."""
    rng = random.Random(seed)
    docs: list[dict[str, Any]] = [{"kind": "Scenario", "mode": mode}]
    for value in (0, 5, 10, 100):
        docs.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"p{value}"},
                "value": value,
            }
        )
    budget = rng.randint(0, 2)
    pdb_spec: dict[str, Any] = {"maxUnavailable": budget, "selector": {"matchLabels": {"guarded": "yes"}}}
    docs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "guard"}})
    docs[-1]["spec"] = pdb_spec
    guarded = 0
    for i in range(rng.randint(*nodes)):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i}"},
                "status": {"capacity": {"cpu": "16", "memory": "64Gi", "pods": "40"}},
            }
        )
        # In batch mode every other node is full or nearly: small preemptors take a few pods there.
        full = mode == "batch" and i % 2 == 0
        for j in range(rng.randint(12, 16) if full else rng.randint(1, 16)):
            meta: dict[str, Any] = {"name": f"run-{i}-{j}"}
            if rng.random() < 0.3:
                meta["labels"] = {"guarded": "yes"}
                guarded += 1
            status: dict[str, Any] = {"phase": "Running"}
            if rng.random() < 0.6:
                status["startTime"] = f"2025-01-01T00:0{rng.randrange(3)}:00Z"
            cpu = rng.choice(["1", "1", "2"] if full else ["500m", "500m", "1"])
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
    if min_available:
        # A few disruptions allowed at first, then one fewer after each eviction of a guarded pod.
        del pdb_spec["maxUnavailable"]
        pdb_spec["minAvailable"] = max(guarded - 1 - budget, 0)
    for k in range(rng.randint(*preemptors)):
        priority = rng.choice([5, 10, 100, 100]) if mode == "batch" else 100
        # In batch mode some pods land without preempting: rows change, the pods preemption may take do not.
        cpu = rng.choice(["2", "3", "5", "8", "12"] if mode == "batch" else ["8", "12", "15"])
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"new-{k}"},
                "spec": {
                    "priorityClassName": f"p{priority}",
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
                },
            }
        )
    return docs


def picks(
    seed: int, vector: bool, docs: list[dict[str, Any]] | None = None
) -> tuple[list[tuple[str, list[tuple[str, list[str], int]]]], int]:
    """Per preemption the node picked and the candidates (node, victims, PDB violations); and how many
    candidates came with a precomputed key, each checked against the key read from its victims."""
    sim = Simulation(to_scenario(docs if docs is not None else cluster(seed)), seed=seed)
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


def _answer(v: Victims) -> tuple[list[str], int, Any]:
    return [p.key for p in v.pods], v.num_pdb_violations, v.pick


def test_kept_answers_are_those_worked_out_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """Preemptors of several priorities and sizes in one batch, on one cluster: between them rows change
    (victims go, pods land), nominations come and go, PDB statuses change. Every answer the dry run takes
    from what it kept is the one it works out anew, and each run decides as the per-node reference."""
    kept = 0
    # (an exception inside the scheduling cycle would become an Error status: differences are collected)
    differences: list[tuple[int, Any, Any]] = []
    original = _KeptView.answers

    def checked(
        self: _KeptView, row_gen: Any, idx: Any, positions: list[int], compute: Callable[..., Any]
    ) -> list[tuple[int, Candidate]]:
        nonlocal kept
        worked_out: list[int] = []

        def compute_some(missing: list[int]) -> Any:
            worked_out.extend(missing)
            return compute(missing)

        answers = original(self, row_gen, idx, positions, compute_some)
        anew = compute(positions)
        got = [(k, c.name, _answer(c.victims)) for k, c in answers]
        expected = [(k, c.name, _answer(c.victims)) for k, c in anew]
        if got != expected:
            differences.append((seed, got, expected))
        kept += len(positions) - len(worked_out)
        return answers

    for seed in range(16):
        docs = cluster(seed, mode="batch", preemptors=(10, 24), nodes=(12, 24), min_available=seed % 2 == 1)
        with monkeypatch.context() as m:
            m.setattr(_KeptView, "answers", checked)
            fast, _ = picks(seed, vector=True, docs=docs)
        reference, _ = picks(seed, vector=False, docs=docs)
        assert fast == reference, seed
    assert not differences
    # Answers were kept and used (they are not all worked out anew each time).
    assert kept > 50
