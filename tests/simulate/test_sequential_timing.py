"""Sequential mode lets time pass between pods, as the reference's harness does.

Each pending pod is created after the previous one has settled; upstream's clock
runs meanwhile (0.01 s after a bind, 0.11 s after an unschedulable verdict in the
harness that produced the golden cases). That decides which one-second backoff
windows the pods' retries fall in, and so which of them is retried first after an
event requeues them all: a low-priority pod that failed over a second before a
higher-priority one is retried before it. The expected files were produced by
kube-scheduler v1.34.1 (the oracle; the same in 5 of 5 runs).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.oracle_cases import assert_as_upstream

from kubesched.scenario import load_scenario
from kubesched.simulate.runner import SETTLED_BOUND_GAP, SETTLED_PENDING_GAP, Simulation

CASES = sorted((Path(__file__).parent / "sequential_timing").glob("*.yaml"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_retries_follow_the_backoff_windows_of_real_time(case: Path) -> None:
    assert_as_upstream(case)


def test_the_clock_advances_between_pods_by_how_the_previous_one_settled(tmp_path: Path) -> None:
    text = """kind: Scenario
mode: sequential
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "2", memory: 4Gi, pods: "110"}
  capacity: {cpu: "2", memory: 4Gi, pods: "110"}
"""
    for name, cpu in (("fits", "1"), ("too-big", "8"), ("last", "1")):
        text += f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  containers:
  - {{name: c, image: registry.k8s.io/pause:3.10, resources: {{requests: {{cpu: "{cpu}"}}}}}}
"""
    path = tmp_path / "s.yaml"
    path.write_text(text)
    sim = Simulation(load_scenario(path), seed=0)
    sim.run()
    # `fits` bound, then `too-big` unschedulable, then `last`: two gaps before the last pod's creation.
    assert sim.cluster.clock.now() == pytest.approx(SETTLED_BOUND_GAP + SETTLED_PENDING_GAP)
    created = {p.metadata.name: p.metadata.creation_timestamp for p in sim.cluster.store.iter("Pod")}
    assert created["fits"] < created["too-big"] < created["last"]
