"""docs/explain.md's `-o json` example says what `kubesched explain examples/cluster.yaml huge -o json` prints.

The example is abridged ("..." stands for left-out items), so its scalar members
are compared: every `"key": value` of its `sampling` object and of its `outcome`
whose value is not abridged, and the top-level members it lists in order.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kubesched.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "explain.md").read_text()
SCALAR = re.compile(r'"(\w+)": (null|true|false|-?\d+|"[^"]*")')


def _example() -> str:
    start = DOC.index("### JSON (`-o json`)")
    return DOC[DOC.index("```json", start) + len("```json") : DOC.index("```\n", start + 30)]


def _object(text: str, key: str) -> str:
    """The text of the object member `key` (balanced braces)."""
    at = text.index(f'"{key}": {{') + len(key) + 4
    depth = 0
    for i in range(at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[at : i + 1]
    raise AssertionError(f"{key} is not closed")


@pytest.fixture(scope="module")
def printed() -> dict[str, object]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["explain", str(ROOT / "examples" / "cluster.yaml"), "huge", "-o", "json"]) == 0
    return json.loads(out.getvalue())


@pytest.mark.parametrize("member", ["sampling", "outcome"])
def test_scalars_are_what_the_program_prints(member: str, printed: dict[str, object]) -> None:
    shown = {k: json.loads(v) for k, v in SCALAR.findall(_object(_example(), member))}
    assert shown, member
    got = printed[member]
    assert isinstance(got, dict)
    for key, value in shown.items():
        if value != "..." and not (isinstance(value, str) and value.endswith("...")):
            assert got[key] == value, f"{member}.{key}: docs say {value!r}, explain prints {got[key]!r}"


def test_top_level_members_in_order(printed: dict[str, object]) -> None:
    top = re.findall(r'^  "(\w+)":', _example(), re.M)
    assert top == [k for k in printed if k in top]
    assert set(top) <= set(printed)
