"""`kubesched simulate -o json --no-scores`: the same placements, statuses and messages as without the flag,
only without each pod's per-node scores and tied nodes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kubesched.cli import main
from kubesched.simulate.generate import Shape, random_scenario, to_yaml

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"
SCORE_KEYS = ("scores", "tiedNodes")


def _simulate(capsys: pytest.CaptureFixture[str], path: Path, *flags: str) -> dict[str, Any]:
    code = main(["simulate", str(path), "-o", "json", *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _without_scores(result: dict[str, Any]) -> dict[str, Any]:
    return {
        **result,
        "results": [{k: v for k, v in r.items() if k not in SCORE_KEYS} for r in result["results"]],
    }


def _check_same_but_scores(full: dict[str, Any], lean: dict[str, Any]) -> None:
    for r in lean["results"]:
        assert not set(r) & set(SCORE_KEYS), r["pod"]
        assert set(r) - {"workload"} == {"pod", "node", "status", "nominatedNode", "message"}
    assert lean == _without_scores(full)


def test_example_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    full = _simulate(capsys, EXAMPLE)
    lean = _simulate(capsys, EXAMPLE, "--no-scores")
    _check_same_but_scores(full, lean)
    # The comparison means something: the full run has scores, an unschedulable pod and a preemption.
    assert any("scores" in r for r in full["results"])
    assert any(r["status"] == "Unschedulable" and r["message"] for r in full["results"])
    assert any(r["nominatedNode"] for r in full["results"])
    assert lean["deleted"]


SCENARIOS = {
    "priorities-seed3": (Shape(nodes=8, running_pods=10, pending_pods=20, priorities=(0, 100, 1000)), 3),
    "default-seed3": (Shape(), 3),
    "default-seed5": (Shape(), 5),
    "batch-seed1": (Shape(nodes=10, pending_pods=25, priorities=(0, 50, 500), mode="batch"), 1),
}


def _generated(tmp_path: Path, name: str) -> Path:
    shape, seed = SCENARIOS[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(to_yaml(random_scenario(shape, seed)))
    return path


@pytest.mark.parametrize("name", SCENARIOS)
def test_generated_scenario(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _generated(tmp_path, name)
    full = _simulate(capsys, path)
    lean = _simulate(capsys, path, "--no-scores")
    _check_same_but_scores(full, lean)
    assert any("scores" in r for r in full["results"])
    assert any(r["status"] == "Scheduled" for r in lean["results"])


def test_tied_nodes_are_left_out_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with_ties = 0
    for name in SCENARIOS:
        path = _generated(tmp_path, name)
        full = _simulate(capsys, path)
        if any("tiedNodes" in r for r in full["results"]):
            with_ties += 1
            lean = _simulate(capsys, path, "--no-scores")
            _check_same_but_scores(full, lean)
    assert with_ties  # some generated scenario had ties to leave out


def test_the_installed_entry_point(tmp_path: Path) -> None:
    """The same through `python -m kubesched.cli`, as a user runs it."""

    def run(*flags: str) -> dict[str, Any]:
        proc = subprocess.run(
            [sys.executable, "-m", "kubesched.cli", "simulate", str(EXAMPLE), "-o", "json", *flags],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    full, lean = run(), run("--no-scores")
    _check_same_but_scores(full, lean)
    assert '"scores"' not in json.dumps(lean)
