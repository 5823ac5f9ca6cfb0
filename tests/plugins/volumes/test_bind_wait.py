"""PreBind of VolumeBinding: Bind follows the claims' binding a second later (upstream polls once a second).

The second is virtual time in a simulation, but it decides which backoff window failed pods are in when a
later event requeues them; the expected files come from kube-scheduler v1.34.1 (stable over repeated runs).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.oracle_cases import assert_as_upstream

from kubesched.scenario import load_scenario
from kubesched.simulate import runner
from kubesched.simulate.runner import Simulation

CASES = sorted((Path(__file__).parent / "bind_wait").glob("*.yaml"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_a_pod_whose_backoff_ended_during_volume_binds_is_tried_before_the_preemptor(case: Path) -> None:
    assert_as_upstream(case)


def test_each_pod_with_claims_to_bind_takes_a_second_to_bind(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the binds' seconds: no time between one sequential pod settling and the next one's creation.
    monkeypatch.setattr(runner, "SETTLED_BOUND_GAP", 0.0)
    monkeypatch.setattr(runner, "SETTLED_PENDING_GAP", 0.0)
    sim = Simulation(load_scenario(Path(__file__).parent / "bind_wait" / "volume-bind-wait.yaml"), seed=0)
    sim.run()
    # Two pods bound claims (a second each); the others bound at once.
    assert sim.cluster.clock.now() == 2.0


ORDER_CASES = sorted((Path(__file__).parent / "prebind_order").glob("*.yaml"))


@pytest.mark.parametrize("case", ORDER_CASES, ids=[c.stem for c in ORDER_CASES])
def test_prebind_plugins_after_volume_binding_run_once_its_wait_is_over(case: Path) -> None:
    assert_as_upstream(case)
