"""The HTML replay report: one self-contained file (plotly.js inline), readable offline, diffable.

It is drawn from the JSON document (report.data), so the pictures and `--json`
show the same numbers. Each figure is a ``<div class="figure" id="fig-...">``
followed by its plotly spec in ``<script type="application/json"
id="fig-...-spec">``: a browser draws it, and a test or a tool reads it back
with any HTML parser. No random ids, no timestamps: the same replay gives the
same bytes.

Needs plotly (``pip install 'kubesched[report]'``), imported only here.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from typing import Any

from kubesched.errors import InputError
from kubesched.replay.report.table import summary_rows

TEMPLATE = "plotly_white"


def require_plotly() -> Any:
    """plotly's graph objects and make_subplots, or an error saying how to install them."""
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError:
        raise InputError("--report", "the HTML report needs plotly: pip install 'kubesched[report]'") from None
    return go, make_subplots


def _colors(n: int) -> list[str]:
    import plotly.colors

    palette = plotly.colors.qualitative.Plotly
    return [palette[i % len(palette)] for i in range(n)]


def _ecdf(values: Sequence[float]) -> tuple[list[float], list[float]]:
    xs = sorted(values)
    n = len(xs)
    return xs, [(i + 1) / n for i in range(n)]


def figures(doc: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(id, heading, plotly Figure) for every figure of the report, in page order."""
    go, make_subplots = require_plotly()
    runs = doc["runs"]
    resources: list[str] = doc["resources"]
    colors = _colors(len(runs))
    out: list[tuple[str, str, Any]] = []

    # Allocation (requested / allocatable) over time, one panel per resource.
    fig = _per_resource_panels(
        (go, make_subplots),
        runs,
        resources,
        colors,
        "utilization",
        220,
        lambda config, r: f"{config}<br>t=%{{x}} s<br>{r}: %{{y:.1%}}",
    )
    out.append(("fig-utilization", "Cluster allocation over time (requested / allocatable)", fig))

    # Pending (solid) and running (dotted) pods over time.
    fig = go.Figure()
    for k, run in enumerate(runs):
        s = run["series"]
        fig.add_trace(
            go.Scatter(
                x=s["time"],
                y=s["pending"],
                name=f"{run['config']} pending",
                line={"shape": "hv", "color": colors[k]},
            )
        )
        fig.add_trace(
            go.Scatter(
                x=s["time"],
                y=s["running"],
                name=f"{run['config']} running",
                line={"shape": "hv", "color": colors[k], "dash": "dot"},
            )
        )
    fig.update_layout(template=TEMPLATE, height=380, xaxis_title="time (s)", yaxis_title="pods", margin={"t": 30})
    out.append(("fig-pending", "Pending and running pods over time", fig))

    # Latency and pending-time distributions (ECDF).
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("scheduling latency (arrival → bind)", "pending time (until bound, or the end)"),
    )
    for k, run in enumerate(runs):
        lat = [p["latency"] for p in run["pods"] if p["latency"] is not None]
        pend = [p["pendingSeconds"] for p in run["pods"]]
        for col, values in ((1, lat), (2, pend)):
            x, y = _ecdf(values)
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=y,
                    name=run["config"],
                    legendgroup=run["config"],
                    showlegend=col == 1,
                    line={"shape": "hv", "color": colors[k]},
                    hovertemplate="%{y:.0%} of pods within %{x} s<extra></extra>",
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(title_text="seconds")
    fig.update_yaxes(tickformat=".0%", range=[0, 1.02], title_text="share of pods", col=1)
    fig.update_yaxes(tickformat=".0%", range=[0, 1.02], col=2)
    fig.update_layout(template=TEMPLATE, height=380, margin={"t": 40})
    out.append(("fig-latency", "Scheduling latency and pending time (cumulative distribution)", fig))

    # Stranded capacity: free, but on nodes where no pending pod fits.
    fig = _per_resource_panels((go, make_subplots), runs, resources, colors, "fragmentation", 200, None)
    out.append(
        (
            "fig-fragmentation",
            "Stranded capacity (free on nodes where no pending pod's requests fit, share of allocatable)",
            fig,
        )
    )

    # Per-node allocation heat map, one per configuration; a menu picks the resource.
    for k, run in enumerate(runs):
        hm = run["heatmap"]
        fig = go.Figure()
        for i, r in enumerate(resources):
            fig.add_trace(
                go.Heatmap(
                    z=hm["utilization"][r],
                    x=hm["time"],
                    y=hm["nodes"],
                    zmin=0,
                    zmax=1,
                    colorscale="Viridis",
                    colorbar={"tickformat": ".0%"},
                    visible=i == 0,
                    name=r,
                    hovertemplate="%{y}<br>t=%{x} s<br>" + r + ": %{z:.1%}<extra></extra>",
                )
            )
        buttons = [
            {"label": r, "method": "update", "args": [{"visible": [j == i for j in range(len(resources))]}]}
            for i, r in enumerate(resources)
        ]
        fig.update_layout(
            template=TEMPLATE,
            height=min(max(300, 22 * len(hm["nodes"]) + 120), 1400),
            xaxis_title="time (s)",
            yaxis={"autorange": "reversed"},  # nodes top-down, in name order
            margin={"t": 60},
            updatemenus=[{"buttons": buttons, "x": 1.0, "y": 1.02, "xanchor": "right", "yanchor": "bottom"}]
            if len(resources) > 1
            else [],
        )
        out.append((f"fig-heatmap-{k}", f"Per-node allocation: {run['config']}", fig))
    return out


_CSS = """
body { font-family: system-ui, -apple-system, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 0.3em 0.9em; border-bottom: 1px solid #ddd; text-align: left; }
td.num, th.num { text-align: right; }
.meta { color: #555; }
.figure { width: 100%; }
"""


def _summary_table(doc: dict[str, Any]) -> str:
    runs = doc["runs"]
    head = "".join(f'<th class="num">{html.escape(r["config"])}</th>' for r in runs)
    rows = [f'<table id="summary"><thead><tr><th></th>{head}</tr></thead><tbody>']
    for name, values in summary_rows([r["summary"] for r in runs], doc["resources"]):
        cells = "".join(f'<td class="num">{html.escape(v)}</td>' for v in values)
        rows.append(f"<tr><th>{html.escape(name)}</th>{cells}</tr>")
    rows.append("</tbody></table>")
    return "\n".join(rows)


def _json_script(value: Any) -> str:
    """JSON safe inside <script>: no '</' can close the element early."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def figure_block(fid: str, fig: Any) -> list[str]:
    """A figure's place on the page and its plotly spec beside it (drawn by plotly_page's script)."""
    import plotly.io as pio

    spec = json.loads(pio.to_json(fig, validate=True, pretty=False, engine="json"))
    return [
        f'<div class="figure" id="{fid}"></div>',
        f'<script type="application/json" id="{fid}-spec">{_json_script(spec)}</script>',
    ]


def plotly_page(title: str, css: str, body: list[str]) -> str:
    """A self-contained page (plotly.js inlined: it opens offline) that draws every figure_block in `body`."""
    import plotly.offline

    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{html.escape(title)}</title>",
            f"<style>{css}</style>",
            f"<script>{plotly.offline.get_plotlyjs()}</script>",
            "</head><body>",
            f"<h1>{html.escape(title)}</h1>",
            *body,
            "<script>",
            "for (const div of document.querySelectorAll('div.figure')) {",
            "  const spec = JSON.parse(document.getElementById(div.id + '-spec').textContent);",
            "  Plotly.newPlot(div, spec.data, spec.layout, {responsive: true, displaylogo: false});",
            "}",
            "</script>",
            "</body></html>",
            "",
        ]
    )


def render_html(doc: dict[str, Any]) -> str:
    """The report page for a report document (report.data.report_dict)."""
    title = f"kubesched replay: {doc['trace']} on {doc['cluster']}"
    configs = ", ".join(r["config"] for r in doc["runs"])
    body = [
        f'<p class="meta">{len(doc["nodes"])} nodes; configurations: {html.escape(configs)}; seed {doc["seed"]}'
        + (f"; until {doc['until']} s" if doc.get("until") is not None else "")
        + ". Allocation is what pods request (the scheduler's view), not what they use.</p>",
        "<h2>Summary</h2>",
        _summary_table(doc),
    ]
    for fid, heading, fig in figures(doc):
        body += [f"<h2>{html.escape(heading)}</h2>", *figure_block(fid, fig)]
    return plotly_page(title, _CSS, body)


def _per_resource_panels(
    plotly: tuple[Any, Any],
    runs: list[Any],
    resources: list[str],
    colors: list[str],
    series: str,
    panel_height: int,
    hover: Callable[[str, str], str] | None,
) -> Any:
    """A figure with one panel per resource: each run's `series` share over time, a step line per run."""
    go, make_subplots = plotly
    fig = make_subplots(rows=len(resources), cols=1, shared_xaxes=True, subplot_titles=resources)
    for k, run in enumerate(runs):
        s = run["series"]
        for i, r in enumerate(resources):
            extra = {"hovertemplate": hover(run["config"], r) + "<extra></extra>"} if hover is not None else {}
            fig.add_trace(
                go.Scatter(
                    x=s["time"],
                    y=s[series][r],
                    name=run["config"],
                    legendgroup=run["config"],
                    showlegend=i == 0,
                    line={"shape": "hv", "color": colors[k]},
                    **extra,
                ),
                row=i + 1,
                col=1,
            )
    fig.update_yaxes(tickformat=".0%", rangemode="tozero")
    fig.update_xaxes(title_text="time (s)", row=len(resources), col=1)
    fig.update_layout(template=TEMPLATE, height=panel_height * len(resources) + 80, margin={"t": 40})
    return fig
