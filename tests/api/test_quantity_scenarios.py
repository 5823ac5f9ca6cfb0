"""Scenarios with quantities past int64, checked against what kube-scheduler v1.34.1 did (cases/README.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.conformance.test_scenarios import compare

from kubesched.cli import main
from kubesched.scenario import load_scenario
from kubesched.simulate.output import to_dict
from kubesched.simulate.runner import Simulation

CASES = Path(__file__).parent / "cases"


@pytest.fixture(autouse=True)
def unvalidated(monkeypatch: pytest.MonkeyPatch) -> None:
    """Some probes hold what kube-apiserver refuses (negative capacities and requests), which the
    oracle's fake client let through to kube-scheduler: they test its arithmetic, not our intake, so
    validation is left out here (decoding and strict fields still apply)."""
    monkeypatch.setattr("kubesched.api.intake.validate", lambda kind, obj: [])


KNOWN_DIFFERENCES = {
    "yaml-plain-exponent": (
        "the scenario loader resolves plain YAML scalars as PyYAML does: 1e20 and 1.5e20 stay strings "
        "(int64Amounts, Value 0), where go-yaml reads floats that reach Go as 100000000000000000000 (inf.Decs)"
    ),
    "pod-level-dec-with-overhead": (
        "Go's PodRequests grows a pod-level inf.Dec request by the overhead on every call (shared pointer); "
        "kubesched computes a pod's requests once, as if the spec did not change"
    ),
}


def _cases() -> list[Any]:
    out = []
    for expected in sorted(CASES.glob("quantities*/*.expected.json")):
        name = expected.name.removesuffix(".expected.json")
        marks = []
        if name in KNOWN_DIFFERENCES:
            marks.append(pytest.mark.xfail(reason=KNOWN_DIFFERENCES[name], strict=True))
        out.append(pytest.param(expected.with_name(f"{name}.yaml"), expected, id=name, marks=marks))
    return out


@pytest.mark.parametrize(("case", "expected"), _cases())
def test_case_matches_reference(case: Path, expected: Path) -> None:
    result = Simulation(load_scenario(case), seed=0).run()
    problems = compare(json.loads(expected.read_text()), to_dict(result))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("case", sorted(CASES.glob("quantities/*.yaml")), ids=lambda p: p.stem)
def test_fast_paths_decide_like_reference(case: Path) -> None:
    """The columns' wrapping arithmetic (numpy) and the per-node reference (Python ints) agree."""

    def run(vector: bool) -> dict[str, Any]:
        sim = Simulation(load_scenario(case), seed=0)
        for fw in sim.scheduler.profiles.values():
            fw.use_vector_paths = vector
        return to_dict(sim.run())

    assert run(True) == run(False)


def test_every_known_difference_has_a_case() -> None:
    names = {p.name.removesuffix(".yaml") for p in CASES.glob("quantities*/*.yaml")}
    assert set(KNOWN_DIFFERENCES) <= names


SCENARIO = """\
apiVersion: v1
kind: Node
metadata: {name: big}
status:
  capacity: {cpu: 1e30, memory: 8Gi, pods: 9223372036854775808, example.com/foo: "1e20"}
---
apiVersion: v1
kind: Node
metadata: {name: small}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]
"""


def test_simulate_reads_huge_capacities_without_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The user's report: these crashed with OverflowError; the API server accepts all of them."""
    f = tmp_path / "scenario.yaml"
    f.write_text(SCENARIO)
    code = main(["simulate", str(f), "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Traceback" not in err
    (result,) = json.loads(out)["results"]
    assert (result["status"], result["node"]) == ("Scheduled", "small")
