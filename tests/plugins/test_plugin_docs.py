"""The plugin docs are run: docs/plugins.md's files are written and its commands run, as are the commands of
examples/plugins/README.md; each output must be the one the page shows."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from tests.terminal import Terminal

from kubesched.cli import main
from kubesched.testing import write_entry_points

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "plugins"
FENCE = re.compile(r"^```(?P<lang>\S*)\n(?P<body>.*?)^```$", re.S | re.M)
# Output the pages show was produced at this terminal width (tables wrap to it).
COLUMNS = "100"


def files_of(page: str) -> dict[str, str]:
    """The code blocks whose first line is `# file: <path>`, by path."""
    out = {}
    for m in FENCE.finditer(page):
        first, _, _ = m.group("body").partition("\n")
        if first.startswith("# file: "):
            out[first.removeprefix("# file: ").strip()] = m.group("body")
    return out


def sessions_of(page: str) -> list[tuple[str, str]]:
    """(command, expected output) for each `$ ` line of the console blocks."""
    out: list[tuple[str, str]] = []
    for m in FENCE.finditer(page):
        if m.group("lang") != "console":
            continue
        for chunk in re.split(r"^\$ ", m.group("body"), flags=re.M)[1:]:
            command, _, output = chunk.partition("\n")
            out.append((command, output))
    return out


def run(command: str, cwd: Path, capsys: pytest.CaptureFixture[str], pythonpath: list[Path]) -> str:
    """Run a documented command the way a user would see it: stdout and stderr together."""
    argv = shlex.split(command)
    while argv and "=" in argv[0]:
        argv.pop(0)  # environment assignments (PYTHONPATH=.): the paths are set up by the caller
    if argv[:3] == ["python", "-m", "pytest"]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in [*pythonpath, ROOT / "src"])}
        proc = subprocess.run(
            [sys.executable, *argv[1:], "-p", "no:cacheprovider"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return re.sub(r" in \d+\.\d+s", " in 0.20s", proc.stdout + proc.stderr)
    assert argv[0] == "kubesched", f"the docs may only run kubesched and pytest, not {command!r}"
    # What a person sees at a terminal: rich tables, as the pages show them (a pipe would get plain columns).
    screen = Terminal()
    with contextlib.redirect_stdout(screen):
        main(argv[1:])
    out, err = capsys.readouterr()
    shown = screen.text()
    return (shown + "\n" if shown else "") + out + err


def check(sessions: list[tuple[str, str]], cwd: Path, capsys: pytest.CaptureFixture[str], paths: list[Path]) -> None:
    assert sessions
    for command, expected in sessions:
        got = run(command, cwd, capsys, paths)
        assert _normal(got) == _normal(expected), command


def _normal(text: str) -> str:
    """Text as compared: no trailing blanks, pytest's progress column wherever the terminal put it."""
    text = re.sub(r" +\[100%\]", " [100%]", text)
    return "\n".join(line.rstrip() for line in text.splitlines())


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> pytest.CaptureFixture[str]:
    monkeypatch.setenv("COLUMNS", COLUMNS)
    capsys.readouterr()
    return capsys


def test_write_your_own_plugin_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, terminal: pytest.CaptureFixture[str]
) -> None:
    page = (ROOT / "docs" / "plugins.md").read_text()
    files = files_of(page)
    assert {"myplugins/prefer_label.py", "sched.yaml", "cluster.yaml", "test_prefer_label.py"} <= set(files)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        check(sessions_of(page), tmp_path, terminal, [tmp_path])
    finally:
        for mod in [m for m in sys.modules if m == "myplugins" or m.startswith("myplugins.")]:
            del sys.modules[mod]


def test_example_plugins_readme(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, terminal: pytest.CaptureFixture[str]
) -> None:
    # As after `pip install -e examples/plugins`: the package importable, its entry points installed.
    write_entry_points(
        tmp_path,
        {
            "Coscheduling": "kubesched_examples.coscheduling:Coscheduling",
            "GPUPacking": "kubesched_examples.gpu_packing:GPUPacking",
        },
        dist="kubesched-examples",
    )
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(ROOT)
    check(sessions_of((EXAMPLES / "README.md").read_text()), ROOT, terminal, [EXAMPLES, tmp_path])


def test_readme_points_to_the_plugin_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "(docs/plugins.md)" in readme and "(examples/plugins/README.md)" in readme
