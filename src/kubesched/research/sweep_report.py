"""A sweep's figures: per trace (and tune ratio), one curve per policy, the mean over seeds and its min-max band.

The HTML report is laid out as the project's other reports (research/report.py,
replay/report/html.py): plotly.js inline, each figure a `<div class="figure">`
followed by its spec as JSON; then the summary at 100% and 130% of arrived
workload (with the paper's means where the cell is the paper's: the openb
default trace at tune 1.3) and the failed runs. PNG files come from
matplotlib (no browser needed; plotly's own image export drives a Chrome).
"""

from __future__ import annotations

import html
import importlib
from pathlib import Path
from typing import Any

from kubesched.errors import InputError

from .reference import PUBLISHED
from .sweep import SWEEP_EXTRA, SweepResult
from .table import Band, bands

_CSS = (
    "body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}"
    "table{border-collapse:collapse}td,th{padding:.2em .8em;border-bottom:1px solid #ddd}"
    ".num{text-align:right;font-variant-numeric:tabular-nums}.meta{color:#555}.err{color:#a00}"
)
# plotly's default qualitative palette, shared by the HTML and PNG figures so a policy has one color.
COLORS = ("#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880", "#FF97FF")
PAPER_TRACE, PAPER_TUNE = "default", 1.3
POINTS = (100, 130)
# The second panel starts here: the curves part after about 85% of the GPUs are asked for.
ZOOM_FROM = 80


def panels(result: SweepResult) -> dict[tuple[str, float], list[Band]]:
    """The figures: (trace, tune) -> its policies' bands."""
    out: dict[tuple[str, float], list[Band]] = {}
    for b in bands(result.results):
        out.setdefault((b.trace, b.tune), []).append(b)
    return out


def _paper(b: Band) -> tuple[float, float] | None:
    return PUBLISHED.get(b.policy) if (b.trace, b.tune) == (PAPER_TRACE, PAPER_TUNE) else None


def _rgba(color: str, alpha: float) -> str:
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def figure(trace: str, tune: float, group: list[Band]) -> Any:
    """Two panels: the whole curve, and its end (from ZOOM_FROM% arrived) where the policies part."""
    from kubesched.replay.report.html import require_plotly

    go, _ = require_plotly()
    subplots = importlib.import_module("plotly.subplots")
    fig = subplots.make_subplots(
        rows=1, cols=2, column_widths=[0.6, 0.4], subplot_titles=("", f"from {ZOOM_FROM}% arrived")
    )
    papers = [(b, p) for b in group if (p := _paper(b))]
    for col in (1, 2):
        first = col == 1
        for i, b in enumerate(group):
            color = COLORS[i % len(COLORS)]
            x = b.percents
            band = {"mode": "lines", "line": {"width": 0}, "showlegend": False, "hoverinfo": "skip"}
            fig.add_trace(go.Scatter(x=x, y=b.high, legendgroup=b.policy, **band), row=1, col=col)
            fill = {"fill": "tonexty", "fillcolor": _rgba(color, 0.2)}
            fig.add_trace(go.Scatter(x=x, y=b.low, legendgroup=b.policy, **band, **fill), row=1, col=col)
            text = [f"sd {s:.2f}, min {lo:.2f}, max {hi:.2f}" for s, lo, hi in zip(b.sd, b.low, b.high, strict=True)]
            mean = go.Scatter(
                x=x,
                y=b.mean,
                mode="lines",
                line={"color": color},
                name=f"{b.policy} ({b.seeds} seed{'s' if b.seeds != 1 else ''})",
                text=text,
                hovertemplate="%{x}% arrived: %{y:.2f}% (%{text})",
                legendgroup=b.policy,
                showlegend=first,
            )
            fig.add_trace(mean, row=1, col=col)
        if papers:
            marks = go.Scatter(
                x=[x for _ in papers for x in POINTS],
                y=[y for _, p in papers for y in p],
                text=[f"{b.policy} (paper)" for b, _ in papers for _ in POINTS],
                mode="markers",
                marker={"symbol": "x", "size": 9, "color": "black"},
                name="published mean (seeds 42-51)",
                legendgroup="paper",
                showlegend=first,
            )
            fig.add_trace(marks, row=1, col=col)
        fig.update_xaxes(title_text="arrived workload (% of GPU capacity)", row=1, col=col)
        fig.update_yaxes(title_text="GPU allocation (%)" if first else None, row=1, col=col)
    last = max(max(b.percents) for b in group)
    fig.update_xaxes(range=[ZOOM_FROM, last + 1], row=1, col=2)
    fig.update_yaxes(range=[_zoom_low(group) - 1, 100], row=1, col=2)
    fig.update_layout(
        template="plotly_white",
        title=f"{trace}, tune {tune:g}: mean over seeds, band min-max",
        height=560,
    )
    return fig


def _summary(result: SweepResult) -> str:
    head = ["trace", "tune", "policy", "seeds"]
    head += [f"{w} @{p}%" for p in POINTS for w in ("mean", "sd", "min", "max", "paper")]
    out = ["<table id='summary'><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"]
    for b in bands(result.results):
        cells: list[object] = [b.trace, f"{b.tune:g}", b.policy, b.seeds]
        paper = _paper(b)
        for k, p in enumerate(POINTS):
            cells += [*(b.at(p) or (None,) * 4), paper[k] if paper else None]
        out.append("<tr>" + "".join(f"<td class='num'>{html.escape(_cell(v))}</td>" for v in cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _failures(result: SweepResult) -> str:
    if not result.failures:
        return "<p>None.</p>"
    items = "".join(
        f"<li class='err'>{html.escape(str(f.cell))}: {html.escape(f.error)}"
        + (f"<details><summary>traceback</summary><pre>{html.escape(f.detail)}</pre></details>" if f.detail else "")
        + "</li>"
        for f in result.failures
    )
    return f"<ul id='failures'>{items}</ul>"


def _cell(v: object) -> str:
    return "-" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)


def render(result: SweepResult, title: str = "kubesched sweep") -> str:
    from kubesched.replay.report.html import figure_block, plotly_page

    figs = []
    for n, ((trace, tune), group) in enumerate(panels(result).items()):
        figs += [f"<h3>{html.escape(trace)}, tune {tune:g}</h3>", *figure_block(f"fig-{n}", figure(trace, tune, group))]
    runs = len(result.results) + len(result.failures)
    body = [
        f"<p class='meta'>{runs} run(s), {len(result.failures)} failed; "
        "allocation = GPU milli requested by the scheduled pods over the cluster's; "
        "each curve the mean over seeds, the band their min-max.</p>",
        "<h2>GPU allocation against arrived workload</h2>",
        *figs,
        "<h2>At 100% and 130% of arrived workload</h2>",
        _summary(result),
        "<h2>Failed runs</h2>",
        _failures(result),
    ]
    return plotly_page(title, _CSS, body)


def write_report(path: str | Path, result: SweepResult) -> None:
    Path(path).write_text(render(result))


def require_matplotlib() -> Any:
    """matplotlib's pyplot on the Agg backend (files only, no display), or an InputError saying what to install."""
    try:
        mpl = importlib.import_module("matplotlib")
    except ImportError:
        raise InputError("--png", f"PNG figures need matplotlib: {SWEEP_EXTRA} (or pip install matplotlib)") from None
    mpl.use("Agg")
    return importlib.import_module("matplotlib.pyplot")


def png_name(trace: str, tune: float) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in trace)
    return f"{safe}-tune{tune:g}.png"


def _zoom_low(group: list[Band]) -> float:
    """The lowest allocation from ZOOM_FROM% arrived on: where the zoomed panel's axis starts."""
    return min((v for b in group for p, v in zip(b.percents, b.low, strict=True) if p >= ZOOM_FROM), default=0.0)


def _draw(ax: Any, group: list[Band], zoom: bool) -> None:
    for i, b in enumerate(group):
        color = COLORS[i % len(COLORS)]
        ax.fill_between(b.percents, b.low, b.high, color=color, alpha=0.2, linewidth=0)
        ax.plot(b.percents, b.mean, color=color, label=f"{b.policy} ({b.seeds})")
    papers = [(b, p) for b in group if (p := _paper(b))]
    for k, (_, p) in enumerate(papers):
        ax.scatter(POINTS, p, marker="x", color="black", label="published mean" if k == 0 else None, zorder=3)
    if zoom:
        ax.set_xlim(ZOOM_FROM, max(max(b.percents) for b in group) + 1)
        ax.set_ylim(_zoom_low(group) - 1, 100)
    ax.set_xlabel("arrived workload (% of GPU capacity)")
    ax.set_ylabel("GPU allocation (%)")
    ax.grid(alpha=0.3)


def write_pngs(directory: str | Path, result: SweepResult) -> list[Path]:
    """One PNG per (trace, tune), as the HTML figures; returns the files written."""
    plt = require_matplotlib()
    out_dir = Path(directory)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for (trace, tune), group in panels(result).items():
        # Left the whole curve; right its end, where the policies part.
        fig, axes = plt.subplots(1, 2, figsize=(13, 5.5), dpi=110, gridspec_kw={"width_ratios": [3, 2]})
        for ax, zoom in zip(axes, (False, True), strict=True):
            _draw(ax, group, zoom)
        axes[0].set_title(f"{trace}, tune {tune:g}: mean over seeds, band min-max")
        axes[1].set_title(f"from {ZOOM_FROM}% arrived")
        axes[0].legend(loc="lower right")
        fig.tight_layout()
        path = out_dir / png_name(trace, tune)
        # No timestamp in the file: the same results give the same bytes.
        fig.savefig(path, metadata={"Software": None})
        plt.close(fig)
        written.append(path)
    return written
