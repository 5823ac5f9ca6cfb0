"""Printing a capacity estimate: cluster-capacity's report, as JSON, rich on a terminal, plain elsewhere."""

from __future__ import annotations

import json
from typing import Any, TextIO

from kubesched.capacity.estimate import CapacityResult


def to_json(result: CapacityResult) -> str:
    return json.dumps(result.to_dict(), indent=2)


def _claim_text(c: dict[str, str]) -> str:
    if "resourceClaimTemplateName" in c:
        return f"{c['name']} (a claim per replica from template {c['resourceClaimTemplateName']})"
    if "resourceClaimName" in c:
        return f"{c['name']} (named claim {c['resourceClaimName']}, used by every replica)"
    return c["name"]


def render(result: CapacityResult) -> Any:
    """cluster-capacity's report for a terminal: the pod's requirements, the count, the stop reason, the
    distribution."""
    from rich.console import Group

    return Group(*_parts(result))


def _parts(result: CapacityResult) -> list[Any]:
    """The report's lines of text and its table, in order: rich or plain is the printer's business."""
    from rich.table import Table
    from rich.text import Text

    req = ", ".join(f"{k}: {v}" for k, v in result.requests.items())
    if result.node_selector:
        req += "; nodeSelector: " + ",".join(f"{k}={v}" for k, v in sorted(result.node_selector.items()))
    if result.resource_claims:
        req += "; resourceClaims: " + ", ".join(_claim_text(c) for c in result.resource_claims)
    parts: list[Any] = [
        Text(f"{result.pod} pod requirements: {req}"),
        Text(f"The cluster can schedule {result.replicas} instance(s) of the pod {result.pod}.", style="bold"),
        Text(f"Termination reason: {result.stop_reason}: {result.stop_message}"),
    ]
    if result.preempted:
        parts.append(Text(f"Preempted to make room: {', '.join(result.preempted)}", style="yellow"))
    table = Table()
    table.add_column("NODE", no_wrap=True)
    table.add_column("INSTANCES", justify="right")
    empty = 0
    for node, n in result.nodes.items():
        if n:
            table.add_row(node, str(n))
        else:
            empty += 1
    if empty:
        table.caption = f"{empty} other node(s): 0"
        table.caption_justify = "left"
    if result.replicas:
        parts += [Text("Pod distribution among nodes:"), table]
    return parts


def print_text(result: CapacityResult, out: TextIO) -> None:
    """The report on `out`: rich on a terminal; elsewhere (pipe, file, CI log) whole lines and a kubectl-style
    plain NODE / INSTANCES table, nothing wrapped."""
    from kubesched.textcolumns import is_terminal, plain_lines

    if is_terminal(out):
        from rich.console import Console

        Console(file=out).print(render(result))
    else:
        out.writelines(f"{line}\n" for line in plain_lines(_parts(result)))
