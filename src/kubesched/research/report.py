"""The HTML report of research runs: the allocation curves (Fig. 9(a)) and a summary table.

One self-contained file with plotly.js inline, laid out as the replay report is
(src/kubesched/replay/report/html.py): each figure a `<div class="figure" id=...>`
followed by its plotly spec in `<script type="application/json" id="<id>-spec">`.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from kubesched.replay.report.html import figure_block, plotly_page, require_plotly

from .reference import PUBLISHED
from .run import RunResult

__all__ = ["render", "require_plotly", "write_report"]

_CSS = (
    "body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}"
    "table{border-collapse:collapse}td,th{padding:.2em .8em;border-bottom:1px solid #ddd}"
    ".num{text-align:right;font-variant-numeric:tabular-nums}.meta{color:#555}"
)


def figure(results: list[RunResult]) -> Any:
    """Allocated GPU % against arrived workload %, one line per run, the paper's means as markers."""
    go, _ = require_plotly()
    fig = go.Figure()
    for r in results:
        c = r.curve()
        xs = sorted(c.points)
        fig.add_trace(go.Scatter(x=xs, y=[c.points[x] for x in xs], mode="lines", name=r.label))
    titles = sorted({r.policy for r in results if r.policy in PUBLISHED})
    if titles:
        fig.add_trace(
            go.Scatter(
                x=[x for t in titles for x in (100, 130)],
                y=[y for t in titles for y in PUBLISHED[t]],
                text=[f"{t} (paper)" for t in titles for _ in (0, 1)],
                mode="markers",
                marker={"symbol": "x", "size": 9, "color": "black"},
                name="published mean (seeds 42-51)",
            )
        )
    fig.update_layout(
        template="plotly_white",
        xaxis_title="arrived workload (% of GPU capacity)",
        yaxis_title="GPU allocation (%)",
        legend_title="policy/seed",
        height=560,
    )
    return fig


def _table(results: list[RunResult]) -> str:
    head = ["policy", "seed", "pods", "unschedulable", "alloc @100%", "alloc @130%", "paper @100%", "paper @130%"]
    rows = ["<table id='summary'><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"]
    for r in results:
        c = r.curve()
        paper = PUBLISHED.get(r.policy, (None, None))
        cells = [r.policy, r.seed, len(r.arrived), r.failed, c.at(100), c.at(130), *paper]
        rows.append("<tr>" + "".join(f"<td class='num'>{html.escape(_cell(v))}</td>" for v in cells) + "</tr>")
    rows.append("</tbody></table>")
    return "\n".join(rows)


def _cell(v: object) -> str:
    return "-" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)


def render(results: list[RunResult], trace: str, ratio: float) -> str:
    """The report page."""
    gpus = results[0].total_gpus if results else 0
    body = [
        f"<p class='meta'>{gpus} GPUs; workload inflated to {ratio:g} x their capacity; "
        "allocation = GPU milli requested by the scheduled pods over the cluster's.</p>",
        "<h2>Summary</h2>",
        _table(results),
        "<h2>GPU allocation against arrived workload</h2>",
        *figure_block("fig-allocation", figure(results)),
    ]
    return plotly_page(f"kubesched research: GPU allocation on {trace}", _CSS, body)


def write_report(path: str | Path, results: list[RunResult], trace: str, ratio: float) -> None:
    Path(path).write_text(render(results, trace, ratio))
