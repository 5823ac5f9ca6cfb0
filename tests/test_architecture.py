"""kubesched's architecture, enforced: the import contracts of `[tool.importlinter]` and mypy's `[tool.mypy]`.

The contracts (docs/architecture.md draws the layers) are checked by import-linter's `lint-imports`,
over every import of the package: module level, inside functions and under TYPE_CHECKING alike.
tests/test_import_layers.py adds what import-linter does not say: no import cycle between modules.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    """A console script of the test extra, installed beside this interpreter (the virtualenv's bin/)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        pytest.fail(f"{name} is not installed beside {sys.executable}: pip install -e '.[test]'")
    return str(path)


def test_import_contracts_are_kept() -> None:
    """The layers (nothing imports upward), the framework's runtime above its contract, plugins through their
    Handle only, plugin_api re-exporting the contract only. A broken contract prints the offending imports."""
    proc = subprocess.run(
        [_tool("lint-imports"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout, proc.stdout


def test_types_check() -> None:
    """mypy over the package as `[tool.mypy]` configures it (the strict flags on framework/ and queue/);
    its report is the failure. The cache lives in the checkout's .mypy_cache (cold in CI: ~20 s)."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
