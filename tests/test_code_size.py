"""Issue 18's limits on the scheduling path: modules a reader can hold, functions made of named steps.

The scheduling path's packages keep modules under MAX_MODULE_LINES (plugins/ excepted: one module per
upstream plugin) and functions under MAX_FUNCTION_LINES (plugins included).
"""

from __future__ import annotations

import ast
from pathlib import Path

import kubesched

PACKAGE_DIR = Path(kubesched.__file__).parent
SCHEDULING_PATH = ("scheduler", "framework", "queue", "cache", "preemption")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _modules(*packages: str) -> list[Path]:
    return sorted(p for package in packages for p in (PACKAGE_DIR / package).rglob("*.py"))


def test_scheduling_path_modules_stay_under_the_size_limit() -> None:
    too_long = {
        str(p.relative_to(PACKAGE_DIR)): n
        for p in _modules(*SCHEDULING_PATH)
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert too_long == {}


def test_scheduling_path_functions_stay_under_the_size_limit() -> None:
    too_long: dict[str, int] = {}
    for p in _modules(*SCHEDULING_PATH, "plugins"):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"), str(p))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    too_long[f"{p.relative_to(PACKAGE_DIR)}:{node.lineno} {node.name}"] = n
    assert too_long == {}
