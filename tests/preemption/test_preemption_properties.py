"""Properties preemption must keep whatever the cluster: never evict an equal or higher priority pod,
prefer candidates that violate no PodDisruptionBudget, never leave a node over its allocatable."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.preemption.evaluator import Candidate, Evaluator
from kubesched.simulate.generate import to_scenario
from kubesched.simulate.runner import Simulation

PRIORITIES = (10, 100, 1000)


def cluster(seed: int, nodes: int, running: int, pending: int, with_pdb: bool) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    docs: list[dict[str, Any]] = [{"kind": "Scenario", "mode": rng.choice(["sequential", "batch"])}]
    for p in PRIORITIES:
        docs.append(
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"p{p}"}, "value": p}
        )
    for i in range(nodes):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i}"},
                "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "10"}},
            }
        )
    if with_pdb:
        docs.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "guard"},
                "spec": {"minAvailable": rng.randint(1, 3), "selector": {"matchLabels": {"guarded": "yes"}}},
            }
        )

    def pod(name: str, node: str | None) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "priorityClassName": f"p{rng.choice(PRIORITIES)}",
            "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": rng.choice(["500m", "1", "2", "3"])}}}
            ],
        }
        meta: dict[str, Any] = {"name": name}
        if rng.random() < 0.4:
            meta["labels"] = {"guarded": "yes"}
        doc: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        if node is not None:
            spec["nodeName"] = node
            doc["status"] = {"phase": "Running", "startTime": f"2025-01-01T00:{rng.randrange(60):02d}:00Z"}
        return doc

    used = [0.0] * nodes
    for i in range(running):
        d = pod(f"run-{i}", None)
        cpu = d["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        need = float(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu)
        fits = [j for j in range(nodes) if used[j] + need <= 4]
        if not fits:
            continue
        j = rng.choice(fits)
        used[j] += need
        d["spec"]["nodeName"] = f"n{j}"
        d["status"] = {"phase": "Running", "startTime": f"2025-01-01T00:{rng.randrange(60):02d}:00Z"}
        docs.append(d)
    for i in range(pending):
        docs.append(pod(f"new-{i}", None))
    return docs


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    nodes=st.integers(1, 4),
    running=st.integers(0, 14),
    pending=st.integers(1, 6),
    with_pdb=st.booleans(),
)
def test_preemption_invariants(seed: int, nodes: int, running: int, pending: int, with_pdb: bool) -> None:
    sim = Simulation(to_scenario(cluster(seed, nodes, running, pending, with_pdb)), seed=seed)
    evictions: list[tuple[int, int]] = []
    choices: list[tuple[Candidate, list[Candidate]]] = []

    def on_victim(victim: Any, preemptor: Any, _node: str) -> None:
        evictions.append((victim.priority, preemptor.priority))

    for fw in sim.scheduler.profiles.values():
        ev: Evaluator = fw.plugins_by_name["DefaultPreemption"].evaluator  # type: ignore[attr-defined]
        ev.on_victim = on_victim
        original = ev.select_candidate

        def select(cands: list[Candidate], original: Any = original) -> Candidate | None:
            best = original(cands)
            if best is not None:
                choices.append((best, list(cands)))
            return best

        ev.select_candidate = select  # type: ignore[method-assign]

    sim.run()
    # 1. Only strictly lower priorities are ever evicted.
    assert all(v < p for v, p in evictions)
    # 2. A candidate violating a PDB is chosen only when every candidate violates one.
    for best, cands in choices:
        assert best.victims.num_pdb_violations == min(c.victims.num_pdb_violations for c in cands)
    # 3. No node ends over its allocatable.
    for ni in sim.scheduler.snapshot.nodes:
        sim.scheduler.cache.update_snapshot(sim.scheduler.snapshot)
        assert ni.requested.milli_cpu <= ni.allocatable.milli_cpu
        assert len(ni.pods) <= ni.allocatable.allowed_pod_number
