"""The README's first command installs kubesched without extras: simulate, explain and capacity must work then.

The extras (`live`: aiohttp, orjson, kubernetes; `report`: plotly) are made unimportable in a child process,
as they are after `pip install -e .`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("aiohttp", "orjson", "kubernetes", "plotly")

_CHILD = """
import sys
for name in {extras!r}:
    sys.modules[name] = None  # import raises ImportError, as when the package is not installed
from kubesched.cli import main
sys.exit(main({argv!r}))
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "examples/cluster.yaml"],
        ["explain", "examples/cluster.yaml", "web-1"],
        ["capacity", "examples/cluster.yaml", "--pod", "examples/pod.yaml"],
    ],
    ids=lambda a: a[0],
)
def test_commands_that_read_manifests_need_no_extra(argv: list[str]) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD.format(extras=EXTRAS, argv=argv)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert out.stdout.strip()
