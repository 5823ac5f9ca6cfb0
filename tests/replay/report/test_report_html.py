"""The replay report on the example: the README's command and output, the JSON schema, the HTML figures."""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from kubesched.cli import main
from kubesched.replay.report.html import render_html

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"


class _Page(HTMLParser):
    """Figure divs, JSON scripts by id, the summary table's cells, and anything loaded from elsewhere."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: list[str] = []
        self.json_scripts: dict[str, str] = {}
        self.external: list[str] = []
        self.rows: list[list[str]] = []
        self._script_id: str | None = None
        self._script_text: list[str] = []
        self._in_summary = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "div" and a.get("class") == "figure":
            self.figures.append(a["id"] or "")
        if tag == "script":
            if a.get("src"):
                self.external.append(a["src"] or "")
            if a.get("type") == "application/json":
                self._script_id = a.get("id")
                self._script_text = []
        if tag == "link" and a.get("href"):
            self.external.append(a["href"] or "")
        if tag == "table" and a.get("id") == "summary":
            self._in_summary = True
        if self._in_summary and tag == "tr":
            self.rows.append([])
        if self._in_summary and tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script_id is not None:
            self.json_scripts[self._script_id] = "".join(self._script_text)
            self._script_id = None
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None
        if tag == "table":
            self._in_summary = False

    def handle_data(self, data: str) -> None:
        if self._script_id is not None:
            self._script_text.append(data)
        if self._cell is not None:
            self._cell.append(data)


@pytest.fixture(scope="module")
def example_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The README's replay command, run from the repository root as a user would."""
    out = tmp_path_factory.mktemp("report")
    readme = README.read_text(encoding="utf-8")
    m = re.search(r"\n    (\.venv/bin/kubesched replay .*?)\n\n```\n(.*?)```\n", readme, re.S)
    assert m is not None, "the README's replay section"
    argv = m.group(1).replace("\\\n", " ").split()[1:]
    argv = [str(out / a) if a.endswith((".html", ".json")) else a for a in argv]
    import contextlib
    import io

    buf = io.StringIO()
    cwd = os.getcwd()
    old_columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "120"
    try:
        os.chdir(ROOT)
        with contextlib.redirect_stdout(buf):
            code = main([*argv, "--quiet"])
    finally:
        os.chdir(cwd)
        if old_columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old_columns
    assert code == 0
    html_text = (out / "replay.html").read_text(encoding="utf-8")
    page = _Page()
    page.feed(html_text)
    return {
        "readme_output": m.group(2),
        "stdout": buf.getvalue(),
        "doc": json.loads((out / "replay.json").read_text(encoding="utf-8")),
        "html": html_text,
        "page": page,
    }


def test_readme_shows_what_the_command_prints(example_report: dict[str, Any]) -> None:
    assert example_report["stdout"] == example_report["readme_output"]


def test_json_schema(example_report: dict[str, Any]) -> None:
    doc = example_report["doc"]
    assert set(doc) == {
        "kind",
        "version",
        "cluster",
        "trace",
        "seed",
        "until",
        "resources",
        "units",
        "nodes",
        "allocatable",
        "runs",
    }
    assert (doc["kind"], doc["version"], doc["seed"], doc["until"]) == ("ReplayReport", 1, 0, None)
    assert doc["resources"] == ["cpu", "memory", "nvidia.com/gpu"]
    assert doc["units"] == {"cpu": "millicores", "memory": "bytes", "nvidia.com/gpu": "count"}
    assert len(doc["nodes"]) == 10 and doc["nodes"] == sorted(doc["nodes"])
    # 4 x 4 + 4 x 8 + 2 x 8 cpu; 4 x 16 + 4 x 32 + 2 x 64 Gi; 2 x 4 GPUs.
    assert doc["allocatable"] == {"cpu": 64000, "memory": 320 * 2**30, "nvidia.com/gpu": 8}
    assert [r["config"] for r in doc["runs"]] == ["least-allocated", "most-allocated"]
    for run in doc["runs"]:
        assert set(run) == {"config", "summary", "overcommits", "samples", "series", "heatmap", "pods"}
        s = run["summary"]
        assert set(s) == {
            "arrived",
            "scheduled",
            "running",
            "pending",
            "finished",
            "preempted",
            "initialPods",
            "initialPreempted",
            "schedulingAttempts",
            "endTime",
            "latencySeconds",
            "pendingSeconds",
            "utilization",
            "fragmentation",
            "overcommits",
        }
        assert set(s["latencySeconds"]) == {"count", "mean", "p50", "p90", "p99", "max"}
        assert set(s["utilization"]) == set(doc["resources"])
        assert set(s["fragmentation"]["cpu"]) == {"mean", "peak", "end"}
        pods = run["pods"]
        assert len(pods) == s["arrived"] == 100
        states = [p["state"] for p in pods]
        for state in ("pending", "running", "finished", "preempted"):
            assert states.count(state) == s[state]
        bound = [p for p in pods if p["bound"] is not None]
        assert len(bound) == s["scheduled"] == s["latencySeconds"]["count"]
        assert max(p["latency"] for p in bound) == s["latencySeconds"]["max"]
        for p in bound:
            assert p["latency"] == pytest.approx(p["bound"] - p["arrival"])
        series = run["series"]
        n = len(series["time"])
        assert n == run["samples"]  # under 2000: nothing thinned
        for key in ("arrived", "pending", "running", "finished", "preempted"):
            assert len(series[key]) == n
        for i in range(n):
            total = series["finished"][i] + series["running"][i] + series["pending"][i] + series["preempted"][i]
            assert series["arrived"][i] == total
        assert max(series["utilization"]["cpu"]) == s["utilization"]["cpu"]["peak"]
        # Trainers set only a GPU limit: admission copies it to requests, and the ledger counts it.
        assert s["utilization"]["nvidia.com/gpu"]["peak"] == 0.625
        hm = run["heatmap"]
        assert hm["nodes"] == doc["nodes"]
        assert len(hm["utilization"]["cpu"]) == 10
        assert all(len(row) == len(hm["time"]) for row in hm["utilization"]["cpu"])
        # GPU shares are null on the nodes without GPUs, numbers on the two that have them.
        gpu_rows = dict(zip(hm["nodes"], hm["utilization"]["nvidia.com/gpu"], strict=True))
        assert all(v is None for v in gpu_rows["small-1"])
        assert all(isinstance(v, float) for v in gpu_rows["gpu-1"])
        assert hm["time"][-1] == s["endTime"]


def test_html_has_the_figures_with_the_json_numbers(example_report: dict[str, Any]) -> None:
    page: _Page = example_report["page"]
    doc = example_report["doc"]
    expected = ["fig-utilization", "fig-pending", "fig-latency", "fig-fragmentation", "fig-heatmap-0", "fig-heatmap-1"]
    assert page.figures == expected
    assert sorted(page.json_scripts) == sorted(f"{f}-spec" for f in expected)
    assert page.external == []  # self-contained
    assert "Plotly.newPlot" in example_report["html"] and "plotly.js v" in example_report["html"]
    specs = {k[: -len("-spec")]: json.loads(v) for k, v in page.json_scripts.items()}
    least, most = doc["runs"]

    util = specs["fig-utilization"]["data"]
    assert len(util) == 2 * 3  # two configurations x three resources
    assert util[0]["name"] == "least-allocated" and util[0]["y"] == least["series"]["utilization"]["cpu"]
    assert util[0]["x"] == least["series"]["time"]
    assert util[5]["name"] == "most-allocated" and util[5]["y"] == most["series"]["utilization"]["nvidia.com/gpu"]

    pending = {t["name"]: t["y"] for t in specs["fig-pending"]["data"]}
    assert pending["least-allocated pending"] == least["series"]["pending"]
    assert pending["most-allocated running"] == most["series"]["running"]

    lat = specs["fig-latency"]["data"]
    assert lat[0]["x"] == sorted(p["latency"] for p in least["pods"] if p["latency"] is not None)
    assert lat[0]["y"][-1] == 1.0 and len(lat[0]["y"]) == least["summary"]["scheduled"]
    assert lat[1]["x"] == sorted(p["pendingSeconds"] for p in least["pods"])

    frag = specs["fig-fragmentation"]["data"]
    assert frag[0]["y"] == least["series"]["fragmentation"]["cpu"]

    heat = specs["fig-heatmap-1"]["data"]
    assert [t["name"] for t in heat] == doc["resources"]
    assert heat[0]["z"] == most["heatmap"]["utilization"]["cpu"] and heat[0]["y"] == doc["nodes"]
    assert [t.get("visible") for t in heat] == [True, False, False]


def test_html_summary_table_matches_the_printed_one(example_report: dict[str, Any]) -> None:
    rows = {r[0]: r[1:] for r in example_report["page"].rows}
    assert rows[""] == ["least-allocated", "most-allocated"]
    printed = example_report["stdout"]
    for name in ("preempted", "latency p50 / p90 / p99 (s)", "cpu stranded mean / peak", "end time (s)"):
        line = next(x for x in printed.splitlines() if f" {name} " in x)
        cells = [c.strip() for c in line.strip("│ \n").split("│")]
        assert rows[name] == cells[1:], name
    s = example_report["doc"]["runs"][0]["summary"]
    assert rows["pods arrived"] == [str(s["arrived"])] * 2
    assert rows["preempted"][0] == str(s["preempted"])


def test_same_document_same_page(example_report: dict[str, Any]) -> None:
    assert render_html(example_report["doc"]) == example_report["html"]


def test_json_to_stdout_replaces_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ex = ROOT / "examples" / "replay"
    (tmp_path / "t.csv").write_text("time,name,template,duration\n0,w,web,5\n3,j,worker,10\n")
    assert main(["replay", str(ex / "cluster.yaml"), str(tmp_path / "t.csv"), "--json", "-", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (run,) = doc["runs"]
    assert run["config"] == "default"
    assert [(p["pod"], p["bound"], p["end"]) for p in run["pods"]] == [
        ("default/w", 0.0, 5.0),
        ("default/j", 3.0, 13.0),
    ]
    assert run["series"]["time"] == [0.0, 0.0, 3.0, 5.0, 13.0]
    assert run["series"]["running"] == [0, 1, 2, 1, 0]
    assert run["summary"]["utilization"]["cpu"]["peak"] == round(2.5 / 64, 6)  # 6 places in JSON
