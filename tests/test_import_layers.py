"""kubesched's import layering: no cycles, gocompat at the bottom, a light plugin API.

Import cycles are found statically: every module's imports are read with `ast`
(module level only: imports inside functions and under `if TYPE_CHECKING:`
run later or never, so they cannot make an import fail halfway).
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

import kubesched

PACKAGE_DIR = Path(kubesched.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in PACKAGE_DIR.rglob("*.py")}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is imported (not in functions or TYPE_CHECKING)."""
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            todo.extend(node.orelse)
            if not _is_type_checking(node.test):
                todo.extend(node.body)
        elif isinstance(node, ast.Try):
            todo.extend([*node.body, *node.orelse, *node.finalbody])
            for handler in node.handlers:
                todo.extend(handler.body)
        elif isinstance(node, (ast.With, ast.For, ast.While, ast.ClassDef)):
            todo.extend(node.body)


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The kubesched modules an import statement loads (a `from pkg import sub` names the submodule)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".")
            if MODULES[module].name != "__init__.py":
                package.pop()
            package = package[: len(package) - (node.level - 1)]
            base = ".".join([*package, base] if base else package)
        names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name:
            yield name


@functools.cache
def _import_graph() -> dict[str, frozenset[str]]:
    """module -> the kubesched modules it imports at module level."""
    graph: dict[str, frozenset[str]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        imported = {t for node in _module_level_imports(tree) for t in _targets(module, node)}
        graph[module] = frozenset(imported - {module})
    return graph


def _top_level(module: str) -> str:
    """kubesched.api.labels -> kubesched.api; kubesched.cli -> kubesched.cli."""
    return ".".join(module.split(".")[:2])


def _cycles(graph: Mapping[str, Collection[str]]) -> list[list[str]]:
    """The strongly connected components with more than one member (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _explain(cycles: list[list[str]], graph: Mapping[str, Collection[str]], group: Mapping[str, str]) -> str:
    """Which module imports which, for each edge inside a cycle."""
    lines = []
    for members in cycles:
        lines.append("cycle: " + " <-> ".join(members))
        inside = set(members)
        for module in sorted(graph):
            for target in sorted(graph[module]):
                a, b = group[module], group[target]
                if a != b and a in inside and b in inside:
                    lines.append(f"  {module} imports {target}")
    return "\n".join(lines)


def test_no_import_cycle_between_top_level_packages() -> None:
    graph = _import_graph()
    group = {m: _top_level(m) for m in graph}
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        packages.setdefault(group[module], set()).update(group[t] for t in targets if group[t] != group[module])
    cycles = _cycles(packages)
    assert not cycles, _explain(cycles, graph, group)


def test_no_import_cycle_between_modules() -> None:
    """Also inside a package, e.g. api.decode <-> api.resource or a package's __init__ and its modules."""
    graph = _import_graph()
    cycles = _cycles(graph)
    assert not cycles, _explain(cycles, graph, {m: m for m in graph})


def test_gocompat_imports_nothing_else_from_kubesched() -> None:
    """gocompat is the bottom layer: anything may import it, so it may import nothing above it."""
    graph = _import_graph()
    upward = {
        f"{module} imports {target}"
        for module, targets in graph.items()
        if _top_level(module) == "kubesched.gocompat"
        for target in targets
        if _top_level(target) != "kubesched.gocompat"
    }
    assert not upward


def test_the_graph_sees_known_imports() -> None:
    """A guard for the tests above: the parser does find imports, relative ones and submodules included."""
    graph = _import_graph()
    assert "kubesched.gocompat.strconv" in graph["kubesched.api.labels"]
    assert "kubesched.api.validation.apps" in graph["kubesched.api.validation"]
    assert all(m.startswith("kubesched") for targets in graph.values() for m in targets)


def test_plugin_api_does_not_load_the_config_validator() -> None:
    """An out-of-tree plugin imports kubesched.plugin_api; that must not drag in configuration validation."""
    code = "import sys, kubesched.plugin_api; print('\\n'.join(m for m in sys.modules if m.startswith('kubesched')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "kubesched.plugin_api" in out
    assert "kubesched.config.validation" not in out


def test_plugin_api_loads_the_live_resource_table_only_when_asked() -> None:
    """register_watched and APIResource come from `kubesched run`'s table; a simulation's plugin never loads it."""
    code = (
        "import sys, kubesched.plugin_api as api\n"
        "print(any(m.startswith('kubesched.live') for m in sys.modules))\n"
        "from kubesched.plugin_api import APIResource, register_watched\n"
        "import kubesched.live.resources as r\n"
        "print(APIResource is r.Resource, register_watched is r.register_watched)\n"
        "print(sorted(n for n in api.__all__ if not hasattr(api, n)), set(api.__all__) <= set(dir(api)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:3] == ["False", "True True", "[] True"]
