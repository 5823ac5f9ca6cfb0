"""The README's `simulate`, `explain` and `capacity` examples print what the README shows: on a terminal of 100
columns, or piped (`| cat`)."""

from __future__ import annotations

import io
import os
import re
import sys
from pathlib import Path

import pytest
from tests.terminal import Terminal

from kubesched.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = re.compile(
    r"    \.venv/bin/kubesched ((?:simulate|explain|capacity) examples/[^\n]*)\n\n```\n(.*?)```\n", re.S
)


def _examples() -> list[tuple[str, str]]:
    return EXAMPLE.findall((ROOT / "README.md").read_text())


def test_the_readme_has_the_examples() -> None:
    commands = [c for c, _ in _examples()]
    assert commands == [
        "simulate examples/cluster.yaml | cat",
        "simulate examples/cluster.yaml -o wide --no-headers | cat",
        "explain examples/cluster.yaml huge",
        "explain examples/cluster.yaml web-1",
        "capacity examples/cluster.yaml --pod examples/pod.yaml",
        "simulate examples/dra/cluster.yaml",
        "explain examples/dra/cluster.yaml train-huge",
        "explain examples/dra/cluster.yaml infer-1",
    ]


@pytest.mark.parametrize(("command", "block"), _examples(), ids=lambda v: v.split("\n")[0][:40])
def test_readme_output(command: str, block: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.chdir(ROOT)
    # The README shows what a person sees: a terminal 100 columns wide, or a pipe's plain lines after "| cat".
    argv = command.removesuffix(" | cat").split()
    stdout = io.StringIO() if command.endswith(" | cat") else Terminal()
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(argv) == 0
    out = stdout.text().splitlines() if isinstance(stdout, Terminal) else stdout.getvalue().splitlines()
    shown = block.splitlines()
    # The README may leave out the first lines of the output, never anything in between.
    start = out.index(shown[0])
    assert out[start : start + len(shown)] == shown
    assert start + len(shown) == len(out), os.linesep.join(out[start + len(shown) :])
