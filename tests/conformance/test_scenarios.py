"""Golden cases produced by kube-scheduler v1.34.1 (copied from ../shared/conformance into cases/).

Each case is simulated in process and compared with the reference exactly as
../shared/conformance/check.py compares: status, node (or one of tiedNodes),
nominated node, message, every listed score, and the preemption victims.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubesched.scenario import load_scenario
from kubesched.simulate.output import to_dict
from kubesched.simulate.runner import Simulation

CASES = Path(__file__).parent / "cases"

# Families checked elsewhere: the extender cases need the reference extender servers running,
# which tests/extender/test_golden.py starts around each case.
ELSEWHERE: dict[str, str] = {
    "extender": "run with their extender servers in tests/extender/test_golden.py",
}


def _cases() -> list[Any]:
    out = []
    for expected in sorted(CASES.glob("*/*.expected.json")):
        data = json.loads(expected.read_text())
        if "results" not in data:
            continue
        family = expected.parent.name
        case = expected.with_name(expected.name.replace(".expected.json", ".yaml"))
        marks = []
        if family in ELSEWHERE:
            marks.append(pytest.mark.skip(reason=ELSEWHERE[family]))
        out.append(pytest.param(case, data, id=f"{family}/{case.stem}", marks=marks))
    return out


def compare(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """check.py's rules."""
    problems: list[str] = []
    got = {r.get("pod"): r for r in actual.get("results", [])}
    for want in expected.get("results", []):
        key = want["pod"]
        have = got.get(key)
        if have is None:
            problems.append(f"{key}: missing from output")
            continue
        if have.get("status") != want.get("status"):
            problems.append(f"{key}: status {have.get('status')!r}, expected {want.get('status')!r}")
        tied = want.get("tiedNodes")
        if tied and want.get("node") is not None:
            if have.get("node") not in tied:
                problems.append(f"{key}: node {have.get('node')!r}, expected one of {tied}")
        elif have.get("node") != want.get("node"):
            problems.append(f"{key}: node {have.get('node')!r}, expected {want.get('node')!r}")
        if "nominatedNode" in want and have.get("nominatedNode") != want["nominatedNode"]:
            problems.append(f"{key}: nominatedNode {have.get('nominatedNode')!r}, expected {want['nominatedNode']!r}")
        if want.get("message") and have.get("message") != want["message"]:
            problems.append(f"{key}: message {have.get('message')!r}, expected {want['message']!r}")
        if want.get("scores"):
            theirs = have.get("scores") or {}
            for node, score in want["scores"].items():
                if theirs.get(node) != score:
                    problems.append(f"{key}: score on {node} {theirs.get(node)!r}, expected {score}")
    if sorted(actual.get("deleted", [])) != sorted(expected.get("deleted", [])):
        problems.append(f"deleted {actual.get('deleted', [])}, expected {expected.get('deleted', [])}")
    return problems


@pytest.mark.parametrize(("case", "expected"), _cases())
def test_case_matches_reference(case: Path, expected: dict[str, Any]) -> None:
    result = Simulation(load_scenario(case), seed=0).run()
    problems = compare(expected, to_dict(result))
    assert not problems, "\n".join(problems)


def test_every_family_is_present() -> None:
    families = {p.parent.name for p in CASES.glob("*/*.expected.json")}
    assert {"resources", "nodeaffinity", "taints", "ports", "images", "scoring-config", "gates"} <= families
