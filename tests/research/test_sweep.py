"""`kubesched sweep`: the grid (file and flags), the tidy table, the figures, failed runs kept apart, and the
same table from one process, several, and Ray (a local instance, when ray is installed)."""

from __future__ import annotations

import csv
import importlib
import logging
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kubesched.cli import main
from kubesched.errors import InputError
from kubesched.plugin_api import CycleState
from kubesched.research import grid as gridmod
from kubesched.research import run as runmod
from kubesched.research.grid import Cell, load
from kubesched.research.openb import default_paths
from kubesched.research.policies import POLICIES, Policy
from kubesched.research.sweep import CellResult, SweepResult, run_cells
from kubesched.research.table import COLUMNS, bands, read_table, write_table

from .helpers import bound, env, node, pod

NODE_CSV, POD_CSV = default_paths()
needs_trace = pytest.mark.skipif(not POD_CSV.exists(), reason=f"the openb trace is not at {POD_CSV.parent}")
FGD, BESTFIT = POLICIES["fgd"], POLICIES["bestfit"]


def _no_flags() -> dict[str, None]:
    return dict.fromkeys(gridmod.KEYS)


def _write_slice(d: Path) -> Path:
    """Every 40th GPU node and the first 300 pods of the default trace (about 240 pods after tuning), and a grid."""
    with NODE_CSV.open() as f:
        nodes = list(csv.reader(f))
    with POD_CSV.open() as f:
        pods = list(csv.reader(f))
    with (d / "nodes.csv").open("w", newline="") as f:
        csv.writer(f).writerows([nodes[0], *nodes[1::40]])
    with (d / "pods.csv").open("w", newline="") as f:
        csv.writer(f).writerows(pods[:301])
    grid = d / "grid.yaml"
    grid.write_text(
        textwrap.dedent("""\
            trace:
            - {name: slice, podFile: pods.csv, nodeFile: nodes.csv}
            policy: [fgd, bestfit]
            seed: 42-43
            """)
    )
    return grid


@pytest.fixture(scope="module")
def slice_dir(tmp_path_factory):
    if not POD_CSV.exists():
        pytest.skip(f"the openb trace is not at {POD_CSV.parent}")
    d = tmp_path_factory.mktemp("slice")
    _write_slice(d)
    return d


# --- the grid -------------------------------------------------------------------------------------------------


def test_no_file_no_flag_is_the_papers_study():
    g = load(None, _no_flags())
    assert [t.name for t in g.traces] == ["default"]
    assert g.traces[0].pod_file == POD_CSV and g.traces[0].node_file == NODE_CSV
    assert [p.title for p in g.policies] == ["Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"]
    assert g.seeds == list(range(42, 52)) and g.tunes == [1.3]
    assert len(g.cells()) == 60


def test_file_axes_flags_override_and_cell_order(tmp_path):
    f = tmp_path / "g.yaml"
    f.write_text("trace: [default, gpushare40]\npolicy: [fgd, Random]\nseed: [1, 2]\ntune: [1.0, 1.3]\ntraceDir: tr\n")
    g = load(str(f), _no_flags())
    assert [t.pod_file for t in g.traces] == [
        tmp_path / "tr" / "openb_pod_list_default.csv",
        tmp_path / "tr" / "openb_pod_list_gpushare40.csv",
    ]
    cells = g.cells()
    assert len(cells) == 2 * 2 * 2 * 2
    # trace, then tune, then policy, then seed: the table's order.
    assert [(c.trace, c.tune, c.policy.title, c.seed) for c in cells[:5]] == [
        ("default", 1.0, "FGD", 1),
        ("default", 1.0, "FGD", 2),
        ("default", 1.0, "Random", 1),
        ("default", 1.0, "Random", 2),
        ("default", 1.3, "FGD", 1),
    ]
    assert [c.index for c in cells] == list(range(16))
    flags = {**_no_flags(), "policy": "bestfit", "seed": "42-44", "tune": "1.3"}
    g = load(str(f), flags)
    assert [p.title for p in g.policies] == ["BestFit"] and g.seeds == [42, 43, 44] and g.tunes == [1.3]
    assert [t.name for t in g.traces] == ["default", "gpushare40"]  # not overridden: the file's


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("seeds: 42\n", "unknown key 'seeds' (known: trace, policy, seed, tune"),
        ("seed: 4x\n", "'4x': give seeds as 42, 42,43 or 42-51"),
        ("tune: [0]\n", "tune: 0 must be above 0"),
        ("policy: tetris\n", "unknown policy 'tetris'"),
        ("policy: [fgd, FGD]\n", "policy FGD is named twice"),
        ("policy: nosuch.module:Plugin\n", "cannot import nosuch.module"),
        ("policy: [{plugin: nocolon}]\n", "a policy's plugin is an import path"),
        ("trace: [default, default]\n", "trace default is named twice"),
        ("trace: [{name: x}]\n", "needs a name and a podFile"),
        ("- 1\n", "a grid is a mapping"),
    ],
)
def test_grid_mistakes_are_named(tmp_path, text, message):
    f = tmp_path / "g.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as err:
        load(str(f), _no_flags())
    assert message in str(err.value)


def test_a_plugin_of_ones_own_by_import_path():
    p = runmod.policy("kubesched.research.policies.best_fit:BestFit")
    assert p == Policy("BestFit", "kubesched.research.policies.best_fit:BestFit", "best")
    g = load(None, {**_no_flags(), "policy": [{"name": "Mine", "plugin": p.plugin, "gpuSelMethod": "worst"}]})
    assert g.policies == [Policy("Mine", p.plugin, "worst")]


# --- the table and its bands ----------------------------------------------------------------------------------


def _result(policy: Policy, seed: int, curve: dict[int, float], index: int = 0) -> CellResult:
    return CellResult(Cell(index, "default", 1.3, policy, seed), curve, 100, 90, 10, 8, 1.0)


def test_table_is_one_row_per_point_in_grid_order(tmp_path):
    results = [_result(FGD, 42, {0: 1.0, 100: 95.126}), _result(FGD, 43, {100: 94.5})]
    write_table(tmp_path / "t.csv", results)
    rows = list(csv.reader((tmp_path / "t.csv").open()))
    assert tuple(rows[0]) == COLUMNS
    assert rows[1:] == [
        ["default", "1.3", "FGD", "42", "0", "1.00", "100", "90", "10", "8"],
        ["default", "1.3", "FGD", "42", "100", "95.13", "100", "90", "10", "8"],
        ["default", "1.3", "FGD", "43", "100", "94.50", "100", "90", "10", "8"],
    ]


def test_parquet_table(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed (pip install 'kubesched[sweep]')")
    write_table(tmp_path / "t.parquet", [_result(FGD, 42, {99: 94.0, 100: 95.25})])
    t = pq.read_table(tmp_path / "t.parquet")
    assert t.column_names == list(COLUMNS)
    assert str(t.schema.field("seed").type) == "int64" and str(t.schema.field("alloc_percent").type) == "double"
    assert t.to_pydict()["alloc_percent"] == [94.0, 95.25]
    assert t.to_pydict()["trace"] == ["default", "default"]
    assert [r.curve for r in read_table(tmp_path / "t.parquet")] == [{99: 94.0, 100: 95.25}]


def test_a_table_reads_back_and_redraws(tmp_path, capsys):
    results = [_result(FGD, 42, {99: 94.0, 100: 95.25}), _result(BESTFIT, 42, {100: 93.0}, index=1)]
    write_table(tmp_path / "t.csv", results)
    back = read_table(tmp_path / "t.csv")
    assert [(r.cell.trace, r.cell.tune, r.cell.policy.title, r.cell.seed, r.curve) for r in back] == [
        ("default", 1.3, "FGD", 42, {99: 94.0, 100: 95.25}),
        ("default", 1.3, "BestFit", 42, {100: 93.0}),
    ]
    assert (back[0].pods, back[0].scheduled, back[0].unschedulable, back[0].gpus) == (100, 90, 10, 8)
    assert main(["sweep", "--from", str(tmp_path / "t.csv")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split() == ["default", "1.3", "FGD", "1", "95.25", "0.00", "-", "-", "95.23", "95.39"]
    assert out.splitlines()[-1] == f"2 run(s) read from {tmp_path / 't.csv'}"
    (tmp_path / "bad.csv").write_text("trace,tune\n")
    assert main(["sweep", "--from", str(tmp_path / "bad.csv")]) == 2
    assert "not a sweep table: no column(s) policy, seed" in capsys.readouterr().err
    assert main(["sweep"]) == 2
    assert "give --out TABLE to run the grid, or --from TABLE" in capsys.readouterr().err


def test_bands_mean_sd_min_max_over_seeds():
    results = [_result(FGD, 42, {100: 94.0, 130: 95.0}), _result(FGD, 43, {100: 96.0}), _result(BESTFIT, 42, {100: 1})]
    fgd, bestfit = bands(results)
    assert (fgd.policy, fgd.seeds, fgd.percents) == ("FGD", 2, [100, 130])
    assert fgd.at(100) == (95.0, pytest.approx(1.41421, abs=1e-4), 94.0, 96.0)
    assert fgd.at(130) == (95.0, 0.0, 95.0, 95.0)  # one seed reaches 130%: no spread
    assert fgd.at(50) is None
    assert bestfit.at(100) == (1.0, 0.0, 1.0, 1.0)


def test_report_has_a_figure_per_trace_and_names_failures(tmp_path):
    pytest.importorskip("plotly", reason="plotly is not installed (pip install 'kubesched[report]')")
    from kubesched.research.sweep import CellFailure
    from kubesched.research.sweep_report import render

    other = CellResult(Cell(2, "gpushare40", 1.3, FGD, 42), {100: 90.0}, 1, 1, 0, 8, 0.1)
    failed = CellFailure(Cell(3, "gpushare40", 1.3, BESTFIT, 42), "RuntimeError: boom")
    page = render(SweepResult([_result(FGD, 42, {100: 95.0}), other], [failed]))
    assert page.count('class="figure"') == 2
    assert "<h3>default, tune 1.3</h3>" in page and "<h3>gpushare40, tune 1.3</h3>" in page
    assert "published mean" in page  # the paper's cell: openb default at tune 1.3
    assert "trace=gpushare40 tune=1.3 policy=BestFit seed=42: RuntimeError: boom" in page


def test_png_figures(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install 'kubesched[sweep]')")
    from kubesched.research.sweep_report import write_pngs

    results = [_result(FGD, 42, {99: 94.0, 100: 95.0}), _result(FGD, 43, {99: 93.0, 100: 95.5})]
    (path,) = write_pngs(tmp_path / "png", SweepResult(results))
    assert path.name == "default-tune1.3.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --- running it -----------------------------------------------------------------------------------------------


def test_one_process_and_two_give_the_same_table_and_the_runs_curves(slice_dir, tmp_path):
    out1, out2 = tmp_path / "one.csv", tmp_path / "two.csv"
    grid = str(slice_dir / "grid.yaml")
    assert main(["sweep", grid, "--out", str(out1), "--jobs", "1", "-q"]) == 0
    assert main(["sweep", grid, "--out", str(out2), "--jobs", "2", "-q"]) == 0
    assert out1.read_bytes() == out2.read_bytes()
    rows = list(csv.DictReader(out1.open()))
    assert [(r["policy"], r["seed"]) for r in rows if r["arrived_percent"] == "100"] == [
        ("FGD", "42"),
        ("FGD", "43"),
        ("BestFit", "42"),
        ("BestFit", "43"),
    ]
    # A cell's rows are run.run's curve for that policy and seed.
    g = load(grid, _no_flags())
    data = g.read()["slice"]
    r = runmod.run(data.nodes, data.pods, "bestfit", seed=43, ratio=1.3)
    seed43 = [x for x in rows if x["policy"] == "BestFit" and x["seed"] == "43"]
    assert {int(x["arrived_percent"]): float(x["alloc_percent"]) for x in seed43} == r.curve().points
    assert {(x["pods"], x["unschedulable"]) for x in seed43} == {(str(len(r.arrived)), str(r.failed))}


BOOM = """
from kubesched.plugin_api import ScorePlugin


class Boom(ScorePlugin):
    name = "Boom"

    @classmethod
    def new(cls, args, handle):
        raise RuntimeError("no GPUs today")

    def score(self, state, pod, node_info):
        return 0, None
"""


def test_a_failed_run_is_named_and_the_others_are_kept(slice_dir, tmp_path, monkeypatch, capsys):
    (tmp_path / "boomplugins.py").write_text(BOOM)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "t.csv"
    grid = str(slice_dir / "grid.yaml")
    code = main(["sweep", grid, "--policy", "fgd,boomplugins:Boom", "--out", str(out), "--jobs", "2", "-q"])
    assert code == 1
    err = capsys.readouterr().err
    assert "2 of 4 run(s) failed:" in err
    for seed in (42, 43):
        # Said as it happens and again at the end: the cell, and why.
        lines = [x for x in err.splitlines() if f"trace=slice tune=1.3 policy=Boom seed={seed}: " in x]
        assert len(lines) == 2 and lines[0].startswith("error: run trace=slice"), err
        assert all('initializing plugin "boomplugins:Boom": no GPUs today' in x for x in lines)
    rows = list(csv.DictReader(out.open()))
    assert {(r["policy"], r["seed"]) for r in rows} == {("FGD", "42"), ("FGD", "43")}


def test_without_ray_or_pyarrow_the_command_says_what_to_install(tmp_path, monkeypatch, capsys):
    real = importlib.import_module

    def missing(name, *a, **k):
        if name.split(".")[0] in ("ray", "pyarrow"):
            raise ImportError(f"No module named {name!r}")
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", missing)
    assert main(["sweep", "--policy", "fgd", "--seed", "1", "--ray", "auto", "--out", str(tmp_path / "t.csv")]) == 2
    assert "error: --ray: Ray is not installed: pip install 'kubesched[sweep]'" in capsys.readouterr().err
    assert main(["sweep", "--policy", "fgd", "--seed", "1", "--out", str(tmp_path / "t.parquet")]) == 2
    assert "error: --out: writing Parquet needs pyarrow: pip install 'kubesched[sweep]'" in capsys.readouterr().err


def _process_state():
    return logging.getLogRecordFactory(), sys.excepthook, signal.getsignal(signal.SIGTERM)


@pytest.fixture(scope="module")
def local_ray():
    # Importing and starting Ray change the process's log records, excepthook and SIGTERM handler: put back after.
    before = _process_state()
    ray = pytest.importorskip("ray", reason="ray is not installed: pip install 'kubesched[sweep]'")
    ray.init(address="local", num_cpus=2, include_dashboard=False)  # a new instance, even beside `ray start`
    yield ray
    ray.shutdown()
    logging.setLogRecordFactory(before[0])
    sys.excepthook = before[1]
    signal.signal(signal.SIGTERM, before[2])


def test_ray_gives_the_local_table(slice_dir, tmp_path, local_ray, capsys):
    """The same grid on Ray (a local instance of 2 CPUs, one task per run) gives the local table, byte for byte."""
    local, on_ray = tmp_path / "local.csv", tmp_path / "ray.csv"
    grid = str(slice_dir / "grid.yaml")
    assert main(["sweep", grid, "--out", str(local), "--jobs", "2", "-q"]) == 0
    capsys.readouterr()
    assert main(["sweep", grid, "--out", str(on_ray), "--ray", "auto", "-q"]) == 0
    assert "4 run(s) in" in capsys.readouterr().out
    assert on_ray.read_bytes() == local.read_bytes()
    assert local_ray.is_initialized()  # a Ray it did not start is left running


def test_ray_tasks_report_their_failures(slice_dir, local_ray):
    g = load(str(slice_dir / "grid.yaml"), {**_no_flags(), "seed": "42"})
    traces = g.read()
    bad = Cell(len(g.cells()), "slice", 1.3, Policy("Nope", "kubesched.nosuch:Nope", "best"), 42)
    seen = []
    result = run_cells([*g.cells(), bad], traces, ray="auto", on_done=lambda o, done, total: seen.append(total))
    assert result.where.startswith("Ray") and seen == [3, 3, 3]
    assert [(r.cell.policy.title, r.cell.seed) for r in result.results] == [("FGD", 42), ("BestFit", 42)]
    (f,) = result.failures
    assert f.cell == bad and "kubesched.nosuch" in f.error


# --- docs/research.md's worked example ------------------------------------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs" / "research.md"
FENCE = re.compile(r"^```(?P<lang>\S*)\n(?P<body>.*?)^```$", re.S | re.M)


def _doc_files() -> dict[str, str]:
    """The page's code blocks that start with `# file: <path>`."""
    out = {}
    for m in FENCE.finditer(DOCS.read_text()):
        first, _, _ = m.group("body").partition("\n")
        if first.startswith("# file: "):
            out[first.removeprefix("# file: ").strip()] = m.group("body")
    return out


@pytest.fixture
def doc_files(tmp_path, monkeypatch):
    files = _doc_files()
    assert {"mypolicies/least_left.py", "mypolicies/__init__.py", "mine.yaml", "grid.yaml", "env.yaml"} <= set(files)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for mod in [m for m in sys.modules if m == "mypolicies" or m.startswith("mypolicies.")]:
        del sys.modules[mod]


def test_the_docs_policy_scores_as_it_says(doc_files):
    LeastLeft = importlib.import_module("mypolicies.least_left").LeastLeft
    e = env([node("used"), node("empty"), node("big", gpus=8)], [bound(pod("a", milli=500), "used", (1,))])
    p = e.pod_info(pod("p", milli=500))
    plugin, state = LeastLeft(), CycleState()
    per_node = {ni.name: plugin.score(state, p, ni)[0] for ni in e.snapshot.nodes}
    fast = plugin.score_all(state, p, e.snapshot, np.arange(len(e.snapshot.nodes))).tolist()
    # GPU milli left after the pod: used 1000 -> 100 - 12; empty 1500 -> 100 - 18; big 7500 -> 100 - 93.
    assert per_node == {"used": 88, "empty": 82, "big": 7}
    assert fast == [per_node[ni.name] for ni in e.snapshot.nodes]


def test_the_docs_grid_sweeps_the_docs_policy(doc_files, slice_dir, tmp_path, capsys):
    # The slice laid out as the openb directory, so that mine.yaml's trace (default) is the slice.
    trace_dir = tmp_path / "openb"
    trace_dir.mkdir()
    (trace_dir / "openb_node_list_gpu_node.csv").write_bytes((slice_dir / "nodes.csv").read_bytes())
    (trace_dir / "openb_pod_list_default.csv").write_bytes((slice_dir / "pods.csv").read_bytes())
    out = tmp_path / "mine.csv"
    argv = ["sweep", str(doc_files / "mine.yaml"), "--trace-dir", str(trace_dir), "--seed", "42", "--jobs", "2"]
    assert main([*argv, "--out", str(out), "-q"]) == 0
    assert [line.split()[2] for line in capsys.readouterr().out.splitlines()[1:4]] == ["BestFit", "FGD", "LeastLeft"]
    rows = [r for r in csv.DictReader(out.open()) if r["policy"] == "LeastLeft"]
    assert rows and int(rows[0]["scheduled"]) > 0
    assert {r["trace"] for r in rows} == {"default"}


_CHILD = """
import sys
for name in ("ray", "pyarrow", "matplotlib"):
    sys.modules[name] = None  # import raises ImportError, as when the package is not installed
from kubesched.cli import main
sys.exit(main({argv!r}))
"""


def test_the_local_mode_needs_no_extra(slice_dir, tmp_path):
    """Without ray, pyarrow and matplotlib (`pip install -e .`), a sweep runs locally and writes CSV."""
    out = tmp_path / "t.csv"
    argv = ["sweep", str(slice_dir / "grid.yaml"), "--seed", "42", "--jobs", "2", "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD.format(argv=argv)], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2 run(s) in" in proc.stdout
    assert len(list(csv.DictReader(out.open()))) > 100


_RAY_CHILD = """
import logging, signal, sys
before = (logging.getLogRecordFactory(), sys.excepthook, signal.getsignal(signal.SIGTERM))
from kubesched.cli import main
code = main({argv!r})
after = (logging.getLogRecordFactory(), sys.excepthook, signal.getsignal(signal.SIGTERM))
print("same process state:", before == after)
sys.exit(code)
"""


def test_ray_local_starts_its_own_and_leaves_the_process_as_it_was(slice_dir, tmp_path):
    """`--ray local` starts a Ray instance of --jobs CPUs for the sweep, and stops it; Ray's changes to the
    process (log records, excepthook, SIGTERM) are undone, so that a program sweeping on Ray logs as before."""
    pytest.importorskip("ray", reason="ray is not installed: pip install 'kubesched[sweep]'")
    local, on_ray = tmp_path / "local.csv", tmp_path / "ray.csv"
    grid = str(slice_dir / "grid.yaml")
    assert main(["sweep", grid, "--seed", "42", "--out", str(local), "--jobs", "1", "-q"]) == 0
    argv = ["sweep", grid, "--seed", "42", "--out", str(on_ray), "--ray", "local", "--jobs", "2", "-q"]
    proc = subprocess.run(
        [sys.executable, "-c", _RAY_CHILD.format(argv=argv)], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "on Ray (local, 2 CPUs)" in proc.stdout
    assert "same process state: True" in proc.stdout
    assert on_ray.read_bytes() == local.read_bytes()
