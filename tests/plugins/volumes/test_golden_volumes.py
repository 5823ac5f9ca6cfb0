"""The volumes golden cases (kube-scheduler v1.34.1), simulated in process, plus the volume state they leave."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubesched.scenario import load_scenario
from kubesched.simulate.output import to_dict
from kubesched.simulate.runner import Simulation

CASES = Path(__file__).parents[2] / "conformance" / "cases" / "volumes"


def _compare(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """check.py's rules: status, node (or one of tiedNodes), message, scores."""
    problems = []
    got = {r["pod"]: r for r in actual["results"]}
    for want in expected["results"]:
        have = got.get(want["pod"], {})
        for field in ("status", "message"):
            if want.get(field) is not None and have.get(field) != want[field]:
                problems.append(f"{want['pod']}: {field} {have.get(field)!r}, expected {want[field]!r}")
        tied = want.get("tiedNodes")
        if (have.get("node") not in tied) if tied else (have.get("node") != want["node"]):
            problems.append(f"{want['pod']}: node {have.get('node')!r}, expected {want['node']!r}")
        for node, score in (want.get("scores") or {}).items():
            if (have.get("scores") or {}).get(node) != score:
                problems.append(f"{want['pod']}: score on {node} {(have.get('scores') or {}).get(node)}, want {score}")
    return problems


def _run(name: str) -> tuple[Simulation, dict[str, Any]]:
    sim = Simulation(load_scenario(CASES / f"{name}.yaml"), seed=0)
    return sim, to_dict(sim.run())


@pytest.mark.parametrize("name", sorted(p.name.removesuffix(".yaml") for p in CASES.glob("*.yaml")))
def test_golden_case(name: str) -> None:
    expected = json.loads((CASES / f"{name}.expected.json").read_text())
    _, actual = _run(name)
    problems = _compare(expected, actual)
    assert not problems, "\n".join(problems)


def test_local_pv_wffc_leaves_claims_bound_to_the_chosen_pvs() -> None:
    sim, _ = _run("local-pv-wffc")
    store = sim.cluster.store
    bound = {}
    for pv in store.list("PersistentVolume"):
        ref = pv.spec.claim_ref
        bound[pv.metadata.name] = (ref.name if ref else None, pv.status.phase)
    assert bound == {
        "pv-1-small": (None, "Available"),
        "pv-2-big": ("data-a", "Bound"),
        "pv-3-mid": ("data-b", "Bound"),
    }
    claims = {c.metadata.name: (c.spec.volume_name, c.status.phase) for c in store.list("PersistentVolumeClaim")}
    assert claims == {
        "data-a": ("pv-2-big", "Bound"),
        "data-b": ("pv-3-mid", "Bound"),
        "data-c": ("", "Pending"),
        "data-d": ("", "Pending"),
    }
