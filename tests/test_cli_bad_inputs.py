"""Every bad input of the corpus, through every command that reads manifests.

The corpus (tests/api/validation/corpus/GROUP/*.yaml|json, one defect each) comes with what a real
kube-apiserver v1.34.1 said about each file (expected.json: `apiserver`, recorded with
tools/apiserver_verdict.py) and the line we print. For each file and command: exit status 2,
nothing on stdout, exactly one line on stderr naming the file, the object and the field, no
traceback, the API server's own words where it has them, and no output file clobbered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubesched.cli import main

CORPUS = Path(__file__).parent / "api" / "validation" / "corpus"
EXAMPLES = Path(__file__).parents[1] / "examples"


def _cases() -> list[tuple[Path, dict[str, Any]]]:
    cases = []
    for expected in sorted(CORPUS.glob("*/expected.json")):
        for name, entry in sorted(json.loads(expected.read_text()).items()):
            cases.append((expected.parent / name, entry))
    return cases


CASES = _cases()
IDS = [f"{path.parent.name}/{path.name}" for path, _ in CASES]


def test_the_corpus_is_large_and_every_file_has_an_expectation() -> None:
    files = {p for p in CORPUS.glob("*/*") if p.name != "expected.json"}
    assert files == {path for path, _ in CASES}
    assert len(CASES) >= 100


def expected_line(path: Path, entry: dict[str, Any]) -> str:
    where = [str(path), entry["object"]] if entry["object"] else [str(path)]
    # Upstream's message may span lines (CEL's caret diagram): the command prints it on one.
    return "error: " + " ".join(": ".join([*where, entry["error"]]).splitlines())


@pytest.mark.parametrize(("path", "entry"), CASES, ids=IDS)
def test_upstream_words(path: Path, entry: dict[str, Any]) -> None:
    """The expectation is the API server's: what we must say is in what it said."""
    if entry.get("upstream"):
        assert entry["upstream"] in entry["error"]
        if entry.get("apiserver"):
            assert entry["upstream"] in entry["apiserver"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("path", "entry"), CASES, ids=IDS)
def test_simulate(path: Path, entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "simulate", str(path), "-o", "json")
    assert (code, out) == (2, "")
    assert "Traceback" not in err
    assert err.splitlines() == [expected_line(path, entry)]


@pytest.mark.parametrize(("path", "entry"), CASES[::3], ids=IDS[::3])
def test_explain_capacity_and_replay_refuse_it_the_same_way(
    path: Path, entry: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = expected_line(path, entry)
    assert run(capsys, "explain", str(path), "some-pod") == (2, "", line + "\n")
    pod = EXAMPLES / "pod.yaml"
    assert run(capsys, "capacity", str(path), "--pod", str(pod)) == (2, "", line + "\n")
    # As a capacity --pod file, or a replay cluster, with an output file that must survive.
    report = tmp_path / "report.json"
    report.write_text("earlier run\n")
    trace = EXAMPLES / "replay" / "trace.csv"
    assert run(capsys, "replay", str(path), str(trace), "--json", str(report), "-q") == (2, "", line + "\n")
    assert report.read_text() == "earlier run\n"


@pytest.mark.parametrize(("path", "entry"), CASES[1::3], ids=IDS[1::3])
def test_capacity_pod_file(path: Path, entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """A bad --pod file is refused as a bad cluster file is (unless the defect is a missing second object)."""
    code, out, err = run(capsys, "capacity", str(EXAMPLES / "cluster.yaml"), "--pod", str(path))
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and err.startswith(f"error: {path}: ") and "Traceback" not in err
