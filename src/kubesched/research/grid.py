"""A sweep's grid: traces x tune ratios x policies x seeds, from a YAML file and command-line shortcuts.

The axes are written the same way in the file and on the command line
(`--trace default,gpushare40`, `trace: [default, gpushare40]`), so a grid file
is the command line written down:

    trace: [default, gpushare40]   # openb pod lists (openb_pod_list_<name>.csv), or {name, podFile, nodeFile}
    policy: all                    # keys, paper names, module:Class plugins, or {name, plugin, gpuSelMethod}
    seed: 42-51
    tune: [1.3]
    traceDir: ../shared/traces/openb
    nodeFile: openb_node_list_gpu_node.csv

Paths in a file are relative to the file. Every cell is one run
(`run.run`); the cells are ordered trace, tune, policy, seed, which is also
the order of the table's rows.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubesched.errors import InputError

from .openb import NodeRow, PodRow, default_paths, read_nodes, read_pods
from .policies import POLICIES, Policy
from .run import policy as named_policy

KEYS = ("trace", "policy", "seed", "tune", "traceDir", "nodeFile")
TRACE_KEYS = ("name", "podFile", "nodeFile")
POLICY_KEYS = ("name", "plugin", "gpuSelMethod")
# The paper's study (Fig. 9(a)): what `kubesched sweep` runs when neither a file nor a flag says otherwise.
DEFAULTS: dict[str, Any] = {"trace": "default", "policy": "all", "seed": "42-51", "tune": "1.3"}


@dataclass(frozen=True, slots=True)
class TraceSpec:
    """A trace of the grid: its name in the table, and the two CSV files it is read from."""

    name: str
    pod_file: Path
    node_file: Path


@dataclass(frozen=True, slots=True)
class Cell:
    """One run of the sweep; `index` is its place in the grid's order (the table's order)."""

    index: int
    trace: str
    tune: float
    policy: Policy
    seed: int

    def __str__(self) -> str:
        return f"trace={self.trace} tune={self.tune:g} policy={self.policy.title} seed={self.seed}"


@dataclass(frozen=True, slots=True)
class TraceData:
    """A trace's rows, read once by the driver and shipped to the workers (a Ray object, or a process's global)."""

    nodes: list[NodeRow]
    pods: list[PodRow]


@dataclass
class Grid:
    traces: list[TraceSpec]
    policies: list[Policy]
    seeds: list[int]
    tunes: list[float]
    source: str = "<command line>"
    _cells: list[Cell] = field(default_factory=list, repr=False)

    def cells(self) -> list[Cell]:
        if not self._cells:
            combos = (
                (t.name, r, p, s) for t in self.traces for r in self.tunes for p in self.policies for s in self.seeds
            )
            self._cells = [Cell(i, *c) for i, c in enumerate(combos)]
        return self._cells

    def read(self) -> dict[str, TraceData]:
        """Every trace's rows (a bad file stops here, before any run, with its file, line and field)."""
        nodes_by_file: dict[Path, list[NodeRow]] = {}
        out: dict[str, TraceData] = {}
        for t in self.traces:
            if t.node_file not in nodes_by_file:
                nodes_by_file[t.node_file] = read_nodes(t.node_file)
            out[t.name] = TraceData(nodes_by_file[t.node_file], read_pods(t.pod_file))
        return out


def split(raw: Any) -> list[Any]:
    """A list from YAML or a comma-separated command-line value."""
    if raw is None:
        return []
    if isinstance(raw, list):
        return raw
    if isinstance(raw, str):
        return [x.strip() for x in raw.split(",") if x.strip()]
    return [raw]


def seeds(raw: Any, where: str = "seed") -> list[int]:
    """42, [42, 43], "42,43", "42-51" (a range, both ends included)."""
    out: list[int] = []
    for part in split(raw):
        try:
            if isinstance(part, int) and not isinstance(part, bool):
                out.append(part)
                continue
            lo, sep, hi = str(part).strip().partition("-")
            out.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
        except ValueError:
            raise InputError(where, f"{part!r}: give seeds as 42, 42,43 or 42-51") from None
    if not out:
        raise InputError(where, "no seed")
    return list(dict.fromkeys(out))


def tunes(raw: Any, where: str = "tune") -> list[float]:
    """Workload inflation ratios (total GPU requests / capacity, the reference's -tune): 1.3, [1.0, 1.3]."""
    out: list[float] = []
    for part in split(raw):
        try:
            value = float(part)
        except (TypeError, ValueError):
            raise InputError(where, f"{part!r} is not a number") from None
        if not 0 < value <= 10:
            raise InputError(where, f"{value:g} must be above 0 and at most 10")
        out.append(value)
    if not out:
        raise InputError(where, "no tune ratio")
    return list(dict.fromkeys(out))


def policies(raw: Any, where: str = "policy") -> list[Policy]:
    """Policies by key (fgd), paper name (FGD), `all`, a plugin's import path, or {name, plugin, gpuSelMethod}."""
    out: list[Policy] = []
    for item in split(raw):
        if isinstance(item, dict):
            out.append(_policy_mapping(item, where))
        elif str(item).lower() == "all":
            out.extend(POLICIES.values())
        else:
            try:
                out.append(named_policy(str(item)))
            except ValueError as err:
                raise InputError(where, str(err)) from None
    if not out:
        raise InputError(where, "no policy")
    for p in out:
        _check_importable(p, where)
    titles = [p.title for p in out]
    dup = sorted({t for t in titles if titles.count(t) > 1})
    if dup:
        raise InputError(where, f"policy {dup[0]} is named twice (give the plugins distinct names)")
    return out


def _policy_mapping(item: dict[str, Any], where: str) -> Policy:
    _known(item, POLICY_KEYS, f"{where}: a policy")
    plugin = str(item.get("plugin") or "")
    if ":" not in plugin:
        raise InputError(where, f"a policy's plugin is an import path, module:Class (got {plugin!r})")
    name = str(item.get("name") or plugin.rpartition(":")[2])
    return Policy(name, plugin, str(item.get("gpuSelMethod") or "best"))


def _check_importable(p: Policy, where: str) -> None:
    """A plugin of one's own that cannot be imported is a mistake in the grid: said now, not once per run."""
    for path in {p.plugin, p.gpu_sel_method} - {"best", "worst", "random"}:
        module, _, cls = path.partition(":")
        try:
            found = getattr(importlib.import_module(module), cls, None)
        except ImportError as err:
            raise InputError(where, f"{p.title}: cannot import {module}: {err} (is it on PYTHONPATH?)") from None
        if found is None:
            raise InputError(where, f"{p.title}: module {module} has no {cls}")


def _known(raw: dict[str, Any], keys: Iterable[str], where: str) -> None:
    keys = tuple(keys)
    unknown = [k for k in raw if k not in keys]
    if unknown:
        raise InputError(where, f"unknown key {unknown[0]!r} (known: {', '.join(keys)})")


def traces(
    raw: Any, trace_dir: Path | None, node_file: Path | None, base: Path, where: str = "trace"
) -> list[TraceSpec]:
    """openb pod-list names (default, gpushare40, ...) or {name, podFile, nodeFile} of one's own files."""
    default_nodes, _ = default_paths(trace_dir)
    out: list[TraceSpec] = []
    for item in split(raw):
        if isinstance(item, dict):
            _known(item, TRACE_KEYS, f"{where}: a trace")
            if not item.get("name") or not item.get("podFile"):
                raise InputError(where, "a trace given as a mapping needs a name and a podFile")
            nodes = _path(base, item["nodeFile"]) if item.get("nodeFile") else node_file or default_nodes
            out.append(TraceSpec(str(item["name"]), _path(base, item["podFile"]), nodes))
        else:
            _, pods = default_paths(trace_dir, str(item))
            out.append(TraceSpec(str(item), pods, node_file or default_nodes))
    if not out:
        raise InputError(where, "no trace")
    names = [t.name for t in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(where, f"trace {dup[0]} is named twice")
    return out


def _path(base: Path, raw: Any) -> Path:
    p = Path(str(raw)).expanduser()
    return p if p.is_absolute() else base / p


def load(path: str | None, overrides: dict[str, Any]) -> Grid:
    """The grid of a YAML file (or none), each axis replaced by its command-line value when one is given.

    `overrides` holds the command line's values (None when not given) under the file's keys; paths
    on the command line are relative to the working directory, those in the file to the file.
    """
    raw: dict[str, Any] = {}
    base = Path.cwd()
    if path is not None:
        try:
            text = Path(path).read_text()
        except OSError as err:
            raise InputError(path, err.strerror or str(err)) from None
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise InputError(path, f"not YAML: {' '.join(str(err).split())}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise InputError(path, "a grid is a mapping (trace, policy, seed, tune, traceDir, nodeFile)")
        _known(loaded, KEYS, path)
        base = Path(path).resolve().parent
        raw = {k: (_path(base, v) if k in ("traceDir", "nodeFile") and v else v) for k, v in loaded.items()}
    for k, v in overrides.items():
        if v is not None:
            raw[k] = _path(Path.cwd(), v) if k in ("traceDir", "nodeFile") else v
    merged = {**DEFAULTS, **{k: v for k, v in raw.items() if v is not None}}
    where = path or "grid"
    trace_dir = merged.get("traceDir")
    node_file = merged.get("nodeFile")
    return Grid(
        traces(merged["trace"], trace_dir, node_file, base, f"{where}: trace"),
        policies(merged["policy"], f"{where}: policy"),
        seeds(merged["seed"], f"{where}: seed"),
        tunes(merged["tune"], f"{where}: tune"),
        source=where,
    )
