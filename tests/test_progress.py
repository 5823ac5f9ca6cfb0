"""Progress goes to stderr: shown on a terminal, silent in a pipe, plain lines when forced, never on stdout."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from kubesched.progress import SILENT, format_rate, progress_display
from kubesched.simulate.generate import basic_cluster, to_yaml


class _Args:
    def __init__(self, progress: bool = False, quiet: bool = False) -> None:
        self.progress = progress
        self.quiet = quiet


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Big enough that scheduling lasts a good part of a second (the display redraws ten times a second)."""
    path = tmp_path_factory.mktemp("progress") / "cluster.yaml"
    path.write_text(to_yaml(basic_cluster(300, 0, 4000)))
    return path


def _on_a_terminal(*argv: str) -> tuple[str, str]:
    """Run kubesched with stderr on a pseudo-terminal and stdout on a pipe: (stdout, what the terminal got)."""
    master, slave = pty.openpty()
    # stdout to a file: a pipe nobody reads while the terminal is read would fill up and stall the child.
    with tempfile.TemporaryFile() as stdout:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kubesched.cli", *argv],
            stdout=stdout,
            stderr=slave,
            env={**os.environ, "COLUMNS": "120", "TERM": "xterm"},
        )
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        os.close(master)
        assert proc.wait() == 0
        stdout.seek(0)
        return stdout.read().decode(), b"".join(chunks).decode(errors="replace")


def test_progress_shows_on_a_terminal_and_not_on_stdout(scenario: Path) -> None:
    out, terminal = _on_a_terminal("simulate", str(scenario))
    assert "scheduling" in terminal and "pods" in terminal
    assert "scheduling" not in out and "4000 pods: 4000 scheduled" in out


def test_quiet_silences_the_terminal(scenario: Path) -> None:
    _, terminal = _on_a_terminal("simulate", str(scenario), "--quiet")
    assert "scheduling" not in terminal


def test_a_pipe_gets_no_progress_unless_forced(scenario: Path) -> None:
    cmd = [sys.executable, "-m", "kubesched.cli", "simulate", str(scenario), "-o", "json", "--no-scores"]
    piped = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert piped.stderr == ""
    forced = subprocess.run([*cmd, "--progress"], capture_output=True, text=True, check=True)
    lines = forced.stderr.splitlines()
    assert lines[0].startswith(f"reading {scenario}: 4,301 objects in ")
    assert lines[-1].startswith("scheduling: 4,000 pods in ")
    assert forced.stdout == piped.stdout


def test_explain_reports_its_analysis() -> None:
    err = io.StringIO()
    with progress_display(_Args(progress=True), err) as progress:
        stage = progress.stage("analysing default/web-1, attempt 1", None, "nodes")
        stage.update(0, 5)
        stage.update(5)
        stage.finish()
    assert err.getvalue().startswith("analysing default/web-1, attempt 1: 5 nodes in ")


def test_quiet_wins_and_a_silent_display_takes_every_call() -> None:
    err = io.StringIO()
    with progress_display(_Args(progress=False, quiet=True), err) as progress:
        assert progress is SILENT
        stage = progress.stage("scheduling", 10, "pods")
        stage.update(3)
        stage.finish()
    assert err.getvalue() == ""


@pytest.mark.parametrize(
    ("rate", "unit", "text"),
    [
        (5123.4, "pods", "5,123 pods/s"),
        (12.0, "", "12/s"),
        (2.34, "runs", "2.3 runs/s"),
        (0.05, "runs", "3.0 runs/min"),
    ],
)
def test_rates_stay_readable_when_slow(rate: float, unit: str, text: str) -> None:
    # A sweep settles a run every few seconds: "0/s" said nothing.
    assert format_rate(rate, unit) == text
