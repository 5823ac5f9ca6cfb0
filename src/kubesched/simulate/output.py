"""Rendering a simulation: FORMAT.md's JSON, YAML, or a table for people."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

import yaml

from kubesched.simulate.runner import PodOutcome, Simulation, SimulationResult
from kubesched.textcolumns import columns, is_terminal, width

if TYPE_CHECKING:
    from rich.console import OverflowMethod


def result_dict(o: PodOutcome) -> dict[str, Any]:
    """One pod's entry of FORMAT.md's `results`."""
    r: dict[str, Any] = {
        "pod": o.key,
        "node": o.node,
        "status": o.status,
        "nominatedNode": o.nominated_node,
        "message": o.message,
    }
    if o.workload:
        r["workload"] = o.workload
    if o.tied_nodes:
        r["tiedNodes"] = o.tied_nodes
    if o.scores:
        r["scores"] = o.scores
    return r


def to_dict(result: SimulationResult) -> dict[str, Any]:
    out: dict[str, Any] = {"results": [result_dict(o) for o in result.results], "deleted": list(result.deleted)}
    out.update(result.extra)
    return out


def to_json(result: SimulationResult) -> str:
    return json.dumps(to_dict(result), indent=2)


def to_yaml(result: SimulationResult) -> str:
    return yaml.safe_dump(to_dict(result), sort_keys=False)


def write_results(sim: Simulation, out: TextIO, fmt: str) -> None:
    """The settled simulation as JSON or YAML on `out`, one pod at a time: the same text as to_json/to_yaml
    of its result, without holding every pod's scores (they come from the spool) or the whole text."""
    tail: dict[str, Any] = {"deleted": list(sim.deleted), **sim.extra()}
    if fmt == "json":
        out.write('{\n  "results": [')
        n = 0
        for o in sim.outcomes():
            out.write(",\n" if n else "\n")
            out.write(textwrap.indent(json.dumps(result_dict(o), indent=2), "    "))
            n += 1
        out.write("\n  ],\n" if n else "],\n")
        # The rest of the top-level object: its members as json.dumps lays them out, without the braces.
        out.write(json.dumps(tail, indent=2)[2:-2] + "\n}\n")
        return
    out.write("results:")
    n = 0
    for o in sim.outcomes():
        out.write("\n" if not n else "")
        out.write(yaml.safe_dump([result_dict(o)], sort_keys=False))
        n += 1
    out.write("" if n else " []\n")
    out.write(yaml.safe_dump(tail, sort_keys=False))


HEADER = ("POD", "NODE", "STATUS", "REASON")
WIDE_HEADER = ("POD", "NODE", "STATUS", "NOMINATED", "ATTEMPTS", "SCORE", "REASON")
_STATUS_STYLES = {"Scheduled": "green", "Unschedulable": "red", "Deleted": "yellow"}
_NAMES = frozenset({"POD", "NODE", "NOMINATED"})  # the columns cut first on a narrow terminal
_NUMBERS = frozenset({"ATTEMPTS", "SCORE"})  # right-justified
REASON_MIN = 20  # a narrow terminal's REASON column is at least this wide (or as wide as its longest cell)
NAME_MIN = 6  # and its name columns are cut no shorter than this
SUMMARY_VICTIMS = 10  # the summary names this many preempted pods (-o json lists them all)
# A terminal gets plain columns too beyond this many rows: rich lays a table out as a whole (150,000 rows:
# 40 s), and nobody reads so many rows framed in a terminal's scrollback.
RICH_MAX_ROWS = 5_000


def print_table(result: SimulationResult, title: str, out: TextIO, *, wide: bool = False, headers: bool = True) -> None:
    """The table on `out`: rich on a terminal, kubectl-style plain columns elsewhere (pipe, file, CI log).

    Beyond RICH_MAX_ROWS pods a terminal gets the plain columns too.
    `wide` (-o wide): the NOMINATED, ATTEMPTS and SCORE columns too. `headers` False (--no-headers): the
    pod rows only, as kubectl prints them, for tools: no header, title, workload headings (pods not
    indented) nor the summary line.
    """
    if is_terminal(out) and len(result.results) <= RICH_MAX_ROWS:
        from rich.console import Console

        Console(file=out).print(render_table(result, title, wide=wide, headers=headers))
    else:
        out.writelines(map("{}\n".format, plain_table(result, wide=wide, headers=headers)))


def plain_table(result: SimulationResult, *, wide: bool = False, headers: bool = True) -> Iterator[str]:
    """The table's lines for a pipe: aligned columns, REASON last and whole, then the summary line.

    The title (the scenario's description) is left out, as kubectl prints none.
    """
    header = WIDE_HEADER if wide else HEADER
    rows = [cells for _, _, cells in _rows(result, wide, headings=headers)]
    right = {i for i, name in enumerate(header) if name in _NUMBERS}
    yield from columns(header if headers else None, rows, right=right)
    if headers:
        yield ""
        yield summary(result)


def render_table(result: SimulationResult, title: str = "", *, wide: bool = False, headers: bool = True) -> Any:
    """A rich table for a terminal: pods grouped under their workload, a summary caption; fitted to the
    terminal's width by cutting long pod and node names first, never the status nor the whole reason."""
    from rich.table import Table

    header = WIDE_HEADER if wide else HEADER
    table = Table(title=(title or None) if headers else None, show_header=headers)
    for name in header:
        if name == "REASON":
            table.add_column(name, overflow="fold")
        else:
            overflow: OverflowMethod = "ellipsis" if name in _NAMES else "fold"
            table.add_column(name, no_wrap=True, overflow=overflow, justify="right" if name in _NUMBERS else "left")
    natural = [width(name) if headers else 0 for name in header]
    prev = ""
    for kind, o, cells in _rows(result, wide, headings=headers):
        for i, cell in enumerate(cells):
            natural[i] = max(natural[i], width(cell))
        if kind == "heading" or (prev == "member" and kind != "member"):
            table.add_section()
        table.add_row(*_styled(o, cells))
        prev = kind
    if prev == "member":
        table.add_section()
    if headers:
        table.caption = summary(result)
    return _Fitted(table, natural)


def _styled(o: PodOutcome | None, cells: tuple[str, ...]) -> list[Any]:
    """A row's cells as rich Texts, not markup (a message may hold brackets): a workload's name and count in
    bold, a pod's status in its colour."""
    from rich.text import Text

    texts = [Text(c) for c in cells]
    style = "bold" if o is None else _STATUS_STYLES.get(o.status, "")
    if style:
        texts[2].stylize(style)
    if o is None:
        texts[0].stylize(style)
    return texts


class _Fitted:
    """A simulate table that fits a terminal's width giving way where it matters least.

    rich alone shrinks the only wrapping column first, the reason, down to nothing, and then every column
    alike. Here STATUS (and the numbers) keep their width; REASON keeps at least a third of the room left (or
    what it needs) and wraps, folding words longer than its width; the names take what remains, the longest
    cut first, with an ellipsis. On a terminal too narrow even for that, REASON has what the shortest names
    leave.
    """

    def __init__(self, table: Any, natural: list[int]) -> None:
        self.table = table
        self.natural = natural
        for col, w in zip(table.columns[:-1], natural[:-1], strict=True):
            if col.header not in _NAMES:
                col.min_width = w

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        cols = self.table.columns
        names = [i for i, col in enumerate(cols) if col.header in _NAMES]
        fixed = sum(w for i, w in enumerate(self.natural[:-1]) if i not in names)
        # What the names and REASON share: the width less each column's padding and left border, the table's
        # right border and the columns that keep their width.
        room = options.max_width - 3 * len(cols) - 1 - fixed
        natural = [self.natural[i] for i in names]
        floor = min(self.natural[-1], max(REASON_MIN, room // 3))
        floor = max(min(floor, room - sum(min(w, NAME_MIN) for w in natural)), 1)
        for i, w in zip(names, _shrink(natural, room - floor), strict=True):
            cols[i].max_width = w if w < self.natural[i] else None
        cols[-1].min_width = floor
        yield self.table


def _shrink(widths: list[int], budget: int) -> list[int]:
    """`widths` cut, the widest first, until they add up to `budget`; none below NAME_MIN by cutting."""
    out = list(widths)
    excess = sum(out) - budget
    while excess > 0:
        top = max(out)
        if top <= NAME_MIN:
            break
        out[out.index(top)] -= 1
        excess -= 1
    return out


def _rows(
    result: SimulationResult, wide: bool, headings: bool
) -> Iterator[tuple[str, PodOutcome | None, tuple[str, ...]]]:
    """The table's rows as plain cells, in the order pods come, a workload's pods where its first pod comes:
    ("heading", None, cells) for a workload (when `headings`), ("member", pod, cells) for its pods (indented
    under it) and ("pod", pod, cells) for a pod of its own."""
    entries: list[PodOutcome | str] = []
    groups: dict[str, list[PodOutcome]] = {}
    for o in result.results:
        group = None if o.workload is None else _group(o)
        if group is None:
            entries.append(o)
            continue
        if group not in groups:
            groups[group] = []
            entries.append(group)
        groups[group].append(o)
    for entry in entries:
        if isinstance(entry, PodOutcome):
            yield "pod", entry, _pod_cells(entry, "", wide)
        elif not headings:
            yield from (("pod", o, _pod_cells(o, "", wide)) for o in groups[entry])
        else:
            scheduled, why = workload_summary(groups[entry])
            yield "heading", None, (entry, "", scheduled, "", "", "", why) if wide else (entry, "", scheduled, why)
            yield from (("member", o, _pod_cells(o, "  ", wide)) for o in groups[entry])


def _pod_cells(o: PodOutcome, indent: str, wide: bool) -> tuple[str, ...]:
    node = o.node or "-"
    if not wide:
        return indent + o.key, node, o.status, _reason(o)
    score = "-" if o.score is None else str(o.score)
    return indent + o.key, node, o.status, o.nominated_node or "<none>", str(o.attempts), score, _reason(o)


def _reason(o: PodOutcome) -> str:
    """Why a pod is not placed; for a preemptor placed on its nominated node, whom it evicted."""
    if o.status == "Scheduled" and o.nominated_node:
        return f"preempted {_count(o.victims, 'pod')} on {o.nominated_node}" if o.victims else ""
    return o.message or ""


def summary(result: SimulationResult) -> str:
    """ "3 pods: 2 scheduled, 1 unschedulable; 1 preempted: ns/a": the table's last line."""
    counts: dict[str, int] = {}
    for o in result.results:
        counts[o.status] = counts.get(o.status, 0) + 1
    parts = [f"{n} {s.lower()}" for s, n in sorted(counts.items())]
    text = _count(len(result.results), "pod") + (": " + ", ".join(parts) if parts else "")
    if result.deleted:
        shown = result.deleted[:SUMMARY_VICTIMS]
        more = len(result.deleted) - len(shown)
        text += f"; {len(result.deleted)} preempted: " + ", ".join(shown) + (f" and {more} more" if more else "")
    return text


def _count(n: int, noun: str) -> str:
    """ "1 pod", "3 pods"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _group(o: PodOutcome) -> str | None:
    """The workload heading a pod is listed under: namespace/kind/name (None: a pod of its own)."""
    if o.workload is None:
        return None
    return f"{o.key.split('/', 1)[0]}/{o.workload}"


def workload_summary(outcomes: list[PodOutcome]) -> tuple[str, str]:
    """ "5/6 scheduled" and what the others are, with the first one's reason: the workload's line."""
    scheduled = sum(1 for o in outcomes if o.status == "Scheduled")
    others: dict[str, int] = {}
    first = ""
    for o in outcomes:
        if o.status != "Scheduled":
            others[o.status] = others.get(o.status, 0) + 1
            first = first or (o.message or "")
    why = ", ".join(f"{n} {s.lower()}" for s, n in others.items())
    if first:
        why += f": {first}"
    return f"{scheduled}/{len(outcomes)} scheduled", why
