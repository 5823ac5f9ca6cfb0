"""Building profiles (start-up step 3) on the golden config cases: kubesched refuses what kube-scheduler does."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kubesched.configcheck import check_config

CASES = Path(__file__).parent / "cases"


def _cases() -> list[Path]:
    return sorted(CASES.glob("*.yaml"))


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.stem)
def test_check_config_matches_reference(case: Path) -> None:
    expected = json.loads(case.with_name(case.stem + ".expected.json").read_text())
    got = check_config(case.read_text(), case.name)
    assert got["valid"] == expected["valid"]
    assert got["stage"] == expected["stage"]
    assert Counter(got["errors"]) == Counter(expected["errors"])
    if expected["stage"] != "decode":
        assert got["message"] == expected["message"]
    if expected["valid"]:
        assert got["defaulted"] == expected["defaulted"]
