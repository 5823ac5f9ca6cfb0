"""The example plugins are written against kubesched.plugin_api alone, as docs/plugins.md promises.

Anything else of kubesched they imported would be an internal module a plugin
author cannot rely on; the example shows what the public module lacks instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import kubesched.plugin_api

MODULES = sorted((Path(__file__).resolve().parents[2] / "examples" / "plugins" / "kubesched_examples").glob("*.py"))


def kubesched_imports(source: str) -> list[tuple[str, list[str]]]:
    """(module, names) of every import of a kubesched module, at any depth (functions, TYPE_CHECKING)."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.split(".")[0] == "kubesched"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "kubesched":
            found.append((node.module or "", [a.name for a in node.names]))
    return found


@pytest.mark.parametrize("path", MODULES, ids=[p.name for p in MODULES])
def test_example_imports_nothing_of_kubesched_but_the_plugin_api(path: Path) -> None:
    imports = kubesched_imports(path.read_text(encoding="utf-8"))
    assert [module for module, _ in imports if module != "kubesched.plugin_api"] == []
    # Every name it takes from there is one the plugin API exports.
    names = {name for _, taken in imports for name in taken}
    assert names <= set(kubesched.plugin_api.__all__)


def test_the_check_sees_internal_imports_wherever_they_are() -> None:
    source = (
        "import kubesched.api.quantity\n"
        "from kubesched.plugin_api import Status\n"
        "from kubesched import testing\n"
        "def f():\n    from kubesched.live.resources import Resource\n"
    )
    assert [m for m, _ in kubesched_imports(source)] == [
        "kubesched.api.quantity",
        "kubesched.plugin_api",
        "kubesched",
        "kubesched.live.resources",
    ]


def test_modules_found() -> None:
    assert {p.name for p in MODULES} >= {"coscheduling.py", "gpu_packing.py", "podgroup.py"}
