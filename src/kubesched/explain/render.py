"""`kubesched explain` for people (rich tables) and for tools (docs/explain.md's JSON)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

from rich.console import Group
from rich.table import Table
from rich.text import Text

from kubesched.explain.claims import ClaimOnNode
from kubesched.explain.model import SKIPPED, Explanation, NodeReport
from kubesched.framework.status import Code, code_name
from kubesched.textcolumns import is_terminal, plain_lines

_SUCCESS = code_name(Code.SUCCESS)
GROUP_ABOVE = 20  # more nodes than this: table rows with identical cells are merged
TOP_SCORES = 20  # the score table shows the best this many nodes


def to_json(ex: Explanation) -> str:
    return json.dumps(ex.to_dict(), indent=2)


def _header(ex: Explanation) -> Text:
    o = ex.outcome
    style = {"Scheduled": "green", "Unschedulable": "red", "Deleted": "yellow"}.get(o.status, "")
    t = Text()
    t.append(f"Pod {ex.pod}: ", style="bold")
    t.append(o.status, style=style)
    if o.node:
        t.append(f" on {o.node}")
    if o.nominated_node:
        t.append(f" (nominated node {o.nominated_node})")
    c = ex.capture
    if c is not None:
        t.append(f"  [attempt {c.attempt}, profile {c.profile}]", style="dim")
    if o.message:
        t.append(f"\n{o.message}")
    return t


def _failures(r: NodeReport) -> str:
    failed = [f for f in r.filters if f.code not in (_SUCCESS, SKIPPED)]
    if not failed and r.status is not None:
        return f"{r.status.plugin or 'PreFilter'}: {r.status.message()}"
    return "\n".join(f"{'▶ ' if f.first else '  '}{f.plugin}: {f.reason}" for f in failed)


def _grouped(rows: Sequence[tuple[str, tuple[str, ...]]]) -> Sequence[tuple[str, tuple[str, ...]]]:
    """Rows of a large cluster merged by identical cells: "n1, n2, n3 (+12 more)" in the node column.

    Up to GROUP_ABOVE nodes every node keeps its own row; JSON always has one entry per node.
    """
    if len(rows) <= GROUP_ABOVE:
        return rows
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, cells in rows:
        groups.setdefault(cells, []).append(name)
    out = []
    for cells, names in groups.items():
        label = ", ".join(names[:3]) + (f" (+{len(names) - 3} more)" if len(names) > 3 else "")
        out.append((label, cells))
    return out


def filters_table(ex: Explanation) -> Table:
    c = ex.capture
    assert c is not None
    t = Table(title="Filter: every plugin on every node (▶ = the one upstream reports)", title_justify="left")
    t.add_column("NODE")
    t.add_column("RESULT", no_wrap=True)
    t.add_column("FAILED FILTERS", overflow="fold")
    rows = []
    for r in c.nodes:
        if r.feasible:
            result = "[green]feasible[/]" if r.examined else "[dim]feasible, not examined[/]"
        else:
            code = code_name(r.status.code) if r.status is not None else ""
            result = f"[red]{code}[/]" if r.examined else f"[dim]{code}, not examined[/]"
        rows.append((r.name, (result, _failures(r))))
    for name, cells in _grouped(rows):
        t.add_row(name, *cells)
    notes = []
    if c.skipped_filters:
        notes.append("skipped after PreFilter: " + ", ".join(c.skipped_filters))
    s = c.sampling
    if s.nominated_only:
        notes.append(f"only the nominated node {s.nominated_node} was examined")
    elif s.candidates and s.num_to_find < s.candidates:
        notes.append(
            f"sampling: looked for {s.num_to_find} feasible of {s.candidates} nodes "
            f"(percentageOfNodesToScore), starting at node #{s.start_index % s.candidates}; "
            f"examined {len(s.examined)}"
        )
    if notes:
        t.caption = "; ".join(notes)
        t.caption_justify = "left"
    return t


def scores_table(ex: Explanation) -> Table:
    c = ex.capture
    assert c is not None
    t = Table(title="Score: raw→normalized→weighted (normalized × weight)", title_justify="left")
    t.add_column("NODE", no_wrap=True)
    for name, weight in c.score_plugins:
        t.add_column(f"{name} ×{weight}", justify="right", overflow="fold")
    t.add_column("TOTAL", justify="right", style="bold")
    chosen = ex.winner.node if ex.winner is not None else ""
    ranked = sorted(c.scores, key=lambda s: (-s.total, s.name))
    for s in ranked[:TOP_SCORES]:
        cells = []
        for name, _ in c.score_plugins:
            p = s.plugins[name]
            cells.append(f"{p.raw}→{p.normalized}→{p.weighted}")
        label = f"[bold green]{s.name}[/]" if s.name == chosen else s.name
        t.add_row(label, *cells, str(s.total))
    notes = []
    if len(ranked) > TOP_SCORES:
        notes.append(f"the best {TOP_SCORES} of {len(ranked)} scored nodes (-o json has all)")
    if c.skipped_scores:
        notes.append("skipped after PreScore: " + ", ".join(c.skipped_scores))
    if notes:
        t.caption = "; ".join(notes)
        t.caption_justify = "left"
    return t


def fixes_table(ex: Explanation) -> Table:
    c = ex.capture
    assert c is not None
    t = Table(title="What would make it fit, node by node", title_justify="left")
    t.add_column("NODE")
    t.add_column("SMALLEST CHANGE", overflow="fold")
    t.add_column("PREEMPTION", overflow="fold")
    rows = []
    for r in c.nodes:
        if r.feasible:
            continue
        change = "\n".join(f"{f.plugin}: {f.text}" for f in r.fixes)
        p = r.preemption
        if p is None:
            pre = ""
        elif p.possible:
            pdb = f", {p.pdb_violations} PDB violation(s)" if p.pdb_violations else ""
            pre = "evict " + ", ".join(f"{v.pod} (priority {v.priority})" for v in p.victims) + pdb
        else:
            pre = f"[dim]{p.reason}[/]"
        rows.append((r.name, (change, pre)))
    for name, cells in _grouped(rows):
        t.add_row(name, *cells)
    return t


def _claim_source(c: ClaimOnNode) -> str:
    if c.template:
        return f"template {c.template}"
    return "named claim, allocated earlier" if c.allocated_before else "named claim"


def _claim_lines(claims: list[ClaimOnNode]) -> str:
    """A node's row of the per-node claims table: each claim's devices there, or why it gets none."""
    lines = []
    for c in claims:
        if c.devices:
            got = ", ".join(f"{d.request} → {d.id}" for d in c.devices)
            lines.append(f"{c.claim}: {got}")
        else:
            lines.append(f"{c.claim}: [red]{c.reason or 'no devices'}[/]")
    return "\n".join(lines)


def claims_table(ex: Explanation) -> Table | None:
    """The devices of each claim on the node the pod landed on; for a pod not placed, node by node why not."""
    c = ex.capture
    assert c is not None
    node = ex.outcome.node
    if ex.claims is None:
        return None
    if node and any(cl.devices or cl.reason for cl in ex.claims):
        t = Table(title=f"Claims: the devices each claim gets on {node}", title_justify="left")
        t.add_column("CLAIM", overflow="fold")
        t.add_column("FROM", overflow="fold")
        t.add_column("REQUEST", overflow="fold")
        t.add_column("DEVICE (driver/pool/device)", overflow="fold")
        for cl in ex.claims:
            if not cl.devices:
                t.add_row(cl.claim, _claim_source(cl), "", f"[red]{cl.reason}[/]")
            for i, d in enumerate(cl.devices):
                admin = " [dim](admin access)[/]" if d.admin_access else ""
                first = i == 0
                t.add_row(cl.claim if first else "", _claim_source(cl) if first else "", d.request, d.id + admin)
        return t
    t = Table(title="Claims, node by node: the devices they would get, or why none", title_justify="left")
    t.add_column("NODE")
    t.add_column("CLAIMS", overflow="fold")
    rows = [(r.name, (_claim_lines(r.claims),)) for r in c.nodes if r.claims is not None]
    if not rows:
        return None
    for name, cells in _grouped(rows):
        t.add_row(name, *cells)
    return t


def render(ex: Explanation) -> Any:
    """A rich renderable: header, filter table, score table and winner, or what would make the pod fit."""
    return Group(*_parts(ex))


def _parts(ex: Explanation) -> list[Text | Table]:
    """The explanation's lines of text and its tables, in order: rich or plain is the printer's business."""
    parts: list[Text | Table] = [_header(ex)]
    c = ex.capture
    if c is None:
        return parts + [Text(n) for n in ex.notes]
    for e in ex.earlier:
        text = f"attempt {e.attempt}: " + (f"scheduled on {e.node}" if e.node else e.message)
        p = e.preemption
        if p is not None and p.node:
            text += f" → preemption nominated {p.node}, evicting {', '.join(v.pod for v in p.victims)}"
        parts.append(Text(text, style="dim"))
    if c.pre_filter is not None and c.pre_filter.plugin:
        parts.append(Text(f"PreFilter rejected the pod: {c.pre_filter.plugin}: {c.pre_filter.message()}", "red"))
    if c.nodes:
        parts.append(filters_table(ex))
    if c.scores:
        parts.append(scores_table(ex))
    if ex.winner is not None:
        w = ex.winner
        parts.append(Text.assemble(("Winner: ", "bold"), (w.node, "bold green"), f" — {w.reason}"))
    if ex.outcome.status != "Scheduled" and ex.outcome.status != "Deleted" and any(not r.feasible for r in c.nodes):
        parts.append(fixes_table(ex))
    claims = claims_table(ex)
    if claims is not None:
        parts.append(claims)
    if c.preemption is not None:
        p = c.preemption
        if p.node:
            victims = ", ".join(v.pod for v in p.victims)
            pdb = f", {p.pdb_violations} PDB violation(s)" if p.pdb_violations else ""
            text = f"Preemption: would nominate {p.node} and evict {victims}{pdb}"
            if len(p.candidates) > 1:
                text += f" (chosen among {', '.join(p.candidates)})"
        elif not p.eligible:
            text = f"Preemption: not possible: {p.message}"
        else:
            text = f"Preemption: cannot help: {p.message}"
        parts.append(Text(text, style="bold"))
    for n in [*c.notes, *ex.notes]:
        parts.append(Text(f"note: {n}", style="dim"))
    return parts


def print_text(ex: Explanation, out: TextIO) -> None:
    """The explanation on `out`: rich tables on a terminal; elsewhere (pipe, file, CI log) whole lines and
    kubectl-style plain columns, so that nothing is wrapped one word per line."""
    if is_terminal(out):
        from rich.console import Console

        Console(file=out).print(render(ex))
    else:
        out.writelines(f"{line}\n" for line in plain_lines(_parts(ex)))
