"""The extender golden cases, in process, with the reference server started as each header asks.

They need the scheduler (scheduler/) to build HTTPExtenders from the configuration and to score the NodeInfos an
extender without node cache returns; until that is wired they are skipped (see the check below).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from extender_helpers import REFERENCE_SERVER

from kubesched.scenario import load_scenario
from kubesched.simulate.output import to_dict
from kubesched.simulate.runner import Simulation

CASES = Path(__file__).resolve().parents[1] / "conformance" / "cases" / "extender"


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _header(case: Path) -> dict[str, Any]:
    first = next(yaml.safe_load_all(case.read_text()))
    return first if isinstance(first, dict) and first.get("kind") == "Scenario" else {}


@pytest.fixture
def servers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[None]:
    """with_extender.py's job: start every running entry of the header's `extender:`, stop them after."""
    case: Path = request.param
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for e in _header(case).get("extender") or []:
            port = int(e["port"])
            if _listening(port):
                pytest.skip(f"port {port} is in use (another run of the extender cases?)")
            if e.get("running", True) is False:
                continue
            log = (tmp_path / f"server-{port}.log").open("w")
            args = [str(a) for a in e.get("args") or []]
            cmd = [sys.executable, str(REFERENCE_SERVER), "--port", str(port), "--node-labels", str(case), *args]
            procs.append(subprocess.Popen(cmd, stderr=log))
            deadline = time.monotonic() + 10
            while not _listening(port):
                assert procs[-1].poll() is None and time.monotonic() < deadline, f"server on {port} did not start"
                time.sleep(0.02)
        yield
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=5)


def _compare(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """check.py's rules."""
    problems: list[str] = []
    got = {r.get("pod"): r for r in actual.get("results", [])}
    for want in expected["results"]:
        have = got.get(want["pod"], {})
        for key in ("status", "node"):
            tied = want.get("tiedNodes") if key == "node" else None
            ok = have.get(key) in tied if tied and want.get("node") else have.get(key) == want.get(key)
            if not ok:
                problems.append(f"{want['pod']}: {key} {have.get(key)!r}, expected {want.get(key)!r}")
        if want.get("message") and have.get("message") != want["message"]:
            problems.append(f"{want['pod']}: message {have.get('message')!r}, expected {want['message']!r}")
        for node, score in (want.get("scores") or {}).items():
            if (have.get("scores") or {}).get(node) != score:
                problems.append(f"{want['pod']}: score on {node} {(have.get('scores') or {}).get(node)}, want {score}")
    if sorted(actual.get("deleted", [])) != sorted(expected.get("deleted", [])):
        problems.append(f"deleted {actual.get('deleted')}, expected {expected.get('deleted')}")
    return problems


CASE_FILES = sorted(CASES.glob("*.yaml"))


@pytest.mark.parametrize("servers", CASE_FILES, ids=[c.stem for c in CASE_FILES], indirect=True)
def test_golden_case(servers: None, request: pytest.FixtureRequest) -> None:
    case: Path = request.node.callspec.params["servers"]
    expected = json.loads(case.with_name(case.stem + ".expected.json").read_text())
    problems = _compare(expected, to_dict(Simulation(load_scenario(case), seed=0).run()))
    assert not problems, "\n".join(problems)


def test_all_five_cases_are_here() -> None:
    assert [c.stem for c in CASE_FILES] == [
        "filter-prioritize-cache",
        "ignorable-down",
        "no-cache-existing-pods",
        "not-ignorable-down",
        "unresolvable-preempt",
    ]
