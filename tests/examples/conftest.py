"""The example plugins (examples/plugins) importable as `kubesched_examples`, and installable by name."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kubesched.testing import write_entry_points

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plugins"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

# What examples/plugins/pyproject.toml declares.
ENTRY_POINTS = {
    "Coscheduling": "kubesched_examples.coscheduling:Coscheduling",
    "GPUPacking": "kubesched_examples.gpu_packing:GPUPacking",
}


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The examples as `pip install examples/plugins` leaves them: entry points by name (returns the directory)."""
    site = tmp_path / "site"
    write_entry_points(site, ENTRY_POINTS, dist="kubesched-examples")
    monkeypatch.syspath_prepend(str(site))
    return site
