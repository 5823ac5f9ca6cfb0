"""Small scenarios with expected files produced by kube-scheduler v1.34.1 (the oracle), compared field by field."""

from __future__ import annotations

import json
from pathlib import Path

from kubesched.scenario import load_scenario
from kubesched.simulate.output import to_dict
from kubesched.simulate.runner import Simulation

FIELDS = ("pod", "node", "status", "nominatedNode", "message")


def assert_as_upstream(case: Path) -> None:
    """kubesched's placements, nominations, messages and evictions are the oracle's (CASE.expected.json)."""
    want = json.loads(case.with_name(case.stem + ".expected.json").read_text())
    got = to_dict(Simulation(load_scenario(case), seed=0).run())
    assert [{f: r.get(f) for f in FIELDS} for r in got["results"]] == [
        {f: r.get(f) for f in FIELDS} for r in want["results"]
    ]
    # The set of evicted pods (the order of their deletions is a race between upstream's goroutines).
    assert sorted(got["deleted"]) == sorted(want["deleted"])
