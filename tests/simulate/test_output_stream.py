"""`simulate -o json|yaml` streams: the same text as the whole document dumped at once, scores from the spool.

The writer prints one pod at a time and reads each pod's per-node totals back
from the spool (a temporary file) instead of memory; what it prints must not
differ by a byte from json.dumps / yaml.safe_dump of the whole result, for
scenarios with preemption (Deleted pods, victims), ties, DRA claims (the
`claims` member after `deleted`) and none at all.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kubesched.cli import main
from kubesched.scenario import load_scenario, parse_scenario
from kubesched.simulate import output
from kubesched.simulate.runner import Simulation

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "conformance" / "cases"
SCENARIOS = [
    ROOT / "examples" / "cluster.yaml",
    ROOT / "examples" / "dra" / "cluster.yaml",
    *sorted(CASES.glob("preemption-edge/*.yaml")),
    *sorted(CASES.glob("preemption/*.yaml"))[:6],
    *sorted(CASES.glob("spread/*.yaml"))[:3],
    CASES / "scoring-config" / "balanced-allocation-only.yaml",
]
SCENARIOS = [p for p in SCENARIOS if not p.name.endswith(".expected.yaml")]

NODE_ONLY = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
"""


def _streamed(path: Path, fmt: str) -> str:
    sim = Simulation(load_scenario(path), seed=0, spool_scores=True)
    sim.settle()
    out = io.StringIO()
    output.write_results(sim, out, fmt)
    return out.getvalue()


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_streamed_json_is_the_whole_document(path: Path) -> None:
    whole = output.to_json(Simulation(load_scenario(path), seed=0).run()) + "\n"
    assert _streamed(path, "json") == whole


@pytest.mark.parametrize("path", SCENARIOS[:4], ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_streamed_yaml_is_the_whole_document(path: Path) -> None:
    whole = output.to_yaml(Simulation(load_scenario(path), seed=0).run())
    assert _streamed(path, "yaml") == whole


def test_the_examples_exercise_what_the_stream_must_get_right() -> None:
    doc = json.loads(_streamed(ROOT / "examples" / "cluster.yaml", "json"))
    assert doc["deleted"] and any(r["nominatedNode"] for r in doc["results"])
    assert any(r.get("scores") for r in doc["results"])
    tied = json.loads(_streamed(CASES / "scoring-config" / "balanced-allocation-only.yaml", "json"))
    assert any(r.get("tiedNodes") for r in tied["results"])
    evicted = json.loads(_streamed(CASES / "preemption-edge" / "deleted-pod-scores.yaml", "json"))
    assert any(r["status"] == "Deleted" and r.get("scores") for r in evicted["results"])
    assert "claims" in json.loads(_streamed(ROOT / "examples" / "dra" / "cluster.yaml", "json"))


def test_no_pods_to_schedule() -> None:
    sim = Simulation(parse_scenario(NODE_ONLY, "nodes.yaml"))
    sim.settle()
    for fmt, whole in (("json", '{\n  "results": [],\n  "deleted": []\n}\n'), ("yaml", "results: []\ndeleted: []\n")):
        out = io.StringIO()
        output.write_results(sim, out, fmt)
        assert out.getvalue() == whole


def test_cli_json_carries_scores_and_no_scores_drops_them(capsys: pytest.CaptureFixture[str]) -> None:
    example = str(ROOT / "examples" / "cluster.yaml")
    assert main(["simulate", example, "-o", "json"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert main(["simulate", example, "-o", "json", "--no-scores"]) == 0
    lean = json.loads(capsys.readouterr().out)
    scored = [r for r in full["results"] if "scores" in r]
    assert scored and all(len(r["scores"]) >= 2 for r in scored)
    assert not any("scores" in r or "tiedNodes" in r for r in lean["results"])
