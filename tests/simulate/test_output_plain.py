"""`kubesched simulate`'s table piped (kubectl's plain columns), with -o wide and --no-headers, and on narrow
terminals (long names cut, never the status nor the reason)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tests.terminal import Terminal

from kubesched.cli import main

# Long names as real clusters have them; a preemptor (NOMINATED, a victim), a pod with one feasible node (not
# scored), a Deployment (a workload heading) and a pod that fits nowhere (a long reason).
SCENARIO = """\
kind: Scenario
description: long names, a preemptor, a pod with one feasible node, a pod that fits nowhere
mode: sequential
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 10000
---
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-12-34.eu-west-1.compute.internal
  labels: {kubernetes.io/hostname: ip-10-0-12-34.eu-west-1.compute.internal}
status: {capacity: {cpu: '2', memory: 8Gi, pods: '110'}}
---
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-45-67.eu-west-1.compute.internal
  labels: {kubernetes.io/hostname: ip-10-0-45-67.eu-west-1.compute.internal}
status: {capacity: {cpu: '4', memory: 8Gi, pods: '110'}}
---
apiVersion: v1
kind: Node
metadata:
  name: gke-prod-gpu-pool-2-a1b2c3d4-x9z8
  labels: {kubernetes.io/hostname: gke-prod-gpu-pool-2-a1b2c3d4-x9z8, accelerator: h100}
spec:
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
status: {capacity: {cpu: '8', memory: 8Gi, pods: '110'}}
---
apiVersion: v1
kind: Pod
metadata: {name: batch-reconcile-28930140-abcde, namespace: team-payments-prod}
spec:
  nodeName: ip-10-0-12-34.eu-west-1.compute.internal
  priorityClassName: low
  containers: [{name: c, image: busybox, resources: {requests: {cpu: '2'}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: checkout-api-7f9c8d6b5-x2k4q, namespace: team-payments-prod}
spec:
  priorityClassName: high
  nodeSelector: {kubernetes.io/hostname: ip-10-0-12-34.eu-west-1.compute.internal}
  containers: [{name: c, image: nginx, resources: {requests: {cpu: '1'}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: model-serving-7d4b9c8f6-q8w2e, namespace: team-payments-prod}
spec:
  nodeSelector: {accelerator: h100}
  tolerations: [{key: nvidia.com/gpu, operator: Exists}]
  containers: [{name: c, image: nginx, resources: {requests: {cpu: '1'}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: payments-gateway, namespace: team-payments-prod}
spec:
  replicas: 2
  selector: {matchLabels: {app: gateway}}
  template:
    metadata: {labels: {app: gateway}}
    spec:
      containers: [{name: c, image: nginx, resources: {requests: {cpu: 500m}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: ledger-migrations-5f6d7c8b9-zz9yx, namespace: team-payments-prod}
spec:
  containers: [{name: c, image: nginx, resources: {requests: {cpu: '64'}}}]
"""

MESSAGE = (
    "0/3 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, 2 Insufficient cpu. "
    "no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)

PLAIN = f"""\
POD                                                      NODE                                       STATUS          REASON
team-payments-prod/checkout-api-7f9c8d6b5-x2k4q          ip-10-0-12-34.eu-west-1.compute.internal   Scheduled       preempted 1 pod on ip-10-0-12-34.eu-west-1.compute.internal
team-payments-prod/model-serving-7d4b9c8f6-q8w2e         gke-prod-gpu-pool-2-a1b2c3d4-x9z8          Scheduled
team-payments-prod/deployment/payments-gateway                                                      2/2 scheduled
  team-payments-prod/payments-gateway-86994cbdd7-vtq89   ip-10-0-45-67.eu-west-1.compute.internal   Scheduled
  team-payments-prod/payments-gateway-86994cbdd7-mtpxj   ip-10-0-12-34.eu-west-1.compute.internal   Scheduled
team-payments-prod/ledger-migrations-5f6d7c8b9-zz9yx     -                                          Unschedulable   {MESSAGE}

5 pods: 4 scheduled, 1 unschedulable; 1 preempted: team-payments-prod/batch-reconcile-28930140-abcde
"""  # noqa: E501

NO_HEADERS = f"""\
team-payments-prod/checkout-api-7f9c8d6b5-x2k4q        ip-10-0-12-34.eu-west-1.compute.internal   Scheduled       preempted 1 pod on ip-10-0-12-34.eu-west-1.compute.internal
team-payments-prod/model-serving-7d4b9c8f6-q8w2e       gke-prod-gpu-pool-2-a1b2c3d4-x9z8          Scheduled
team-payments-prod/payments-gateway-86994cbdd7-vtq89   ip-10-0-45-67.eu-west-1.compute.internal   Scheduled
team-payments-prod/payments-gateway-86994cbdd7-mtpxj   ip-10-0-12-34.eu-west-1.compute.internal   Scheduled
team-payments-prod/ledger-migrations-5f6d7c8b9-zz9yx   -                                          Unschedulable   {MESSAGE}
"""  # noqa: E501

WIDE = f"""\
POD                                                      NODE                                       STATUS          NOMINATED                                  ATTEMPTS   SCORE   REASON
team-payments-prod/checkout-api-7f9c8d6b5-x2k4q          ip-10-0-12-34.eu-west-1.compute.internal   Scheduled       ip-10-0-12-34.eu-west-1.compute.internal          2       -   preempted 1 pod on ip-10-0-12-34.eu-west-1.compute.internal
team-payments-prod/model-serving-7d4b9c8f6-q8w2e         gke-prod-gpu-pool-2-a1b2c3d4-x9z8          Scheduled       <none>                                            1       -
team-payments-prod/deployment/payments-gateway                                                      2/2 scheduled
  team-payments-prod/payments-gateway-86994cbdd7-vtq89   ip-10-0-45-67.eu-west-1.compute.internal   Scheduled       <none>                                            1     685
  team-payments-prod/payments-gateway-86994cbdd7-mtpxj   ip-10-0-12-34.eu-west-1.compute.internal   Scheduled       <none>                                            1     622
team-payments-prod/ledger-migrations-5f6d7c8b9-zz9yx     -                                          Unschedulable   <none>                                            1       -   {MESSAGE}

5 pods: 4 scheduled, 1 unschedulable; 1 preempted: team-payments-prod/batch-reconcile-28930140-abcde
"""  # noqa: E501


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "long-names.yaml"
    path.write_text(SCENARIO)
    return path


def _piped(capsys: pytest.CaptureFixture[str], scenario: Path, *flags: str) -> str:
    """What `kubesched simulate SCENARIO FLAGS | cat` prints (pytest's captured stdout is no terminal)."""
    assert main(["simulate", str(scenario), *flags]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def _on_terminal(monkeypatch: pytest.MonkeyPatch, scenario: Path, columns: int, *flags: str) -> list[str]:
    monkeypatch.setenv("COLUMNS", str(columns))
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    assert main(["simulate", str(scenario), *flags]) == 0
    return terminal.text().splitlines()


def test_piped_plain_columns_the_reason_whole_the_summary_last(
    capsys: pytest.CaptureFixture[str], scenario: Path
) -> None:
    assert _piped(capsys, scenario) == PLAIN


def test_piped_with_no_headers_the_pod_rows_only(capsys: pytest.CaptureFixture[str], scenario: Path) -> None:
    assert _piped(capsys, scenario, "--no-headers") == NO_HEADERS


def test_piped_wide_nominated_node_attempts_and_score(capsys: pytest.CaptureFixture[str], scenario: Path) -> None:
    assert _piped(capsys, scenario, "-o", "wide") == WIDE


def test_piped_wide_with_no_headers(capsys: pytest.CaptureFixture[str], scenario: Path) -> None:
    rows = _piped(capsys, scenario, "-o", "wide", "--no-headers").splitlines()
    assert [r.split()[:6] for r in rows] == [
        [f"team-payments-prod/{pod}", node, status, nominated, attempts, score]
        for pod, node, status, nominated, attempts, score in [
            ("checkout-api-7f9c8d6b5-x2k4q", "ip-10-0-12-34.eu-west-1.compute.internal", "Scheduled",
             "ip-10-0-12-34.eu-west-1.compute.internal", "2", "-"),
            ("model-serving-7d4b9c8f6-q8w2e", "gke-prod-gpu-pool-2-a1b2c3d4-x9z8", "Scheduled", "<none>", "1", "-"),
            ("payments-gateway-86994cbdd7-vtq89", "ip-10-0-45-67.eu-west-1.compute.internal", "Scheduled",
             "<none>", "1", "685"),
            ("payments-gateway-86994cbdd7-mtpxj", "ip-10-0-12-34.eu-west-1.compute.internal", "Scheduled",
             "<none>", "1", "622"),
            ("ledger-migrations-5f6d7c8b9-zz9yx", "-", "Unschedulable", "<none>", "1", "-"),
        ]
    ]  # fmt: skip
    assert rows[-1].endswith(f"   {MESSAGE}")


def _table_rows(lines: list[str]) -> list[list[str]]:
    """The body rows of a drawn table, each cell's lines joined with spaces (a new row: one with a STATUS)."""
    rows: list[list[str]] = []
    for line in lines:
        if not line.startswith("│"):  # the header's lines start with ┃
            continue
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if cells[2] or not rows:
            rows.append(cells)
        else:
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
    return rows


@pytest.mark.parametrize("columns", [80, 60])
def test_a_narrow_terminal_cuts_the_names_not_the_status_nor_the_reason(
    monkeypatch: pytest.MonkeyPatch, scenario: Path, columns: int
) -> None:
    lines = _on_terminal(monkeypatch, scenario, columns)
    assert max(len(line) for line in lines) == columns
    rows = _table_rows(lines)
    assert [r[2] for r in rows] == [
        "Scheduled",
        "Scheduled",
        "2/2 scheduled",
        "Scheduled",
        "Scheduled",
        "Unschedulable",
    ]
    assert rows[-1][3] == MESSAGE  # every word, whole, in order
    assert rows[0][3].startswith("preempted 1 pod on ")
    # The names are what gives way, with an ellipsis.
    assert all(r[0].endswith("…") for r in rows)
    assert rows[0][1].endswith("…") and rows[-1][1] == "-"


def test_a_wide_terminal_cuts_nothing(monkeypatch: pytest.MonkeyPatch, scenario: Path) -> None:
    lines = _on_terminal(monkeypatch, scenario, 200)
    rows = _table_rows(lines)
    assert [r[:3] for r in rows] == [
        line.split()[:3] if not line.endswith("scheduled") else [line.split()[0], "", "2/2 scheduled"]
        for line in PLAIN.splitlines()[1:7]
    ]
    assert lines[0].strip() == "long names, a preemptor, a pod with one feasible node, a pod that fits nowhere"
    assert lines[-1].strip() == PLAIN.splitlines()[-1]


def test_wide_on_a_terminal_keeps_the_reason_and_the_numbers(monkeypatch: pytest.MonkeyPatch, scenario: Path) -> None:
    lines = _on_terminal(monkeypatch, scenario, 100, "-o", "wide")
    assert max(len(line) for line in lines) == 100
    header = [c.strip() for c in lines[2].split("┃")[1:-1]]
    assert [header[i] for i in (2, 4, 5, 6)] == ["STATUS", "ATTEMPTS", "SCORE", "REASON"]
    rows = _table_rows(lines)
    assert [r[4:6] for r in rows] == [["2", "-"], ["1", "-"], ["", ""], ["1", "685"], ["1", "622"], ["1", "-"]]
    assert rows[-1][6] == MESSAGE


def test_no_headers_on_a_terminal_draws_the_rows_only(monkeypatch: pytest.MonkeyPatch, scenario: Path) -> None:
    lines = _on_terminal(monkeypatch, scenario, 200, "--no-headers")
    assert lines[0].startswith("┌")  # no title, no header
    assert lines[-1].startswith("└")  # no summary
    assert not any(line.startswith("├") for line in lines)  # no workload sections
    rows = _table_rows(lines)
    assert [r[0] for r in rows] == [line.split()[0] for line in NO_HEADERS.splitlines()]


def _deleted_result(victims: int) -> object:
    from kubesched.simulate.runner import PodOutcome, SimulationResult

    outcomes = [PodOutcome(f"default/p{i}", "n1", "Scheduled", None, None) for i in range(3)]
    return SimulationResult(outcomes, [f"default/v{i}" for i in range(victims)])


def test_the_summary_names_ten_victims_and_counts_the_rest() -> None:
    from kubesched.simulate.output import summary

    assert summary(_deleted_result(2)).endswith("; 2 preempted: default/v0, default/v1")  # type: ignore[arg-type]
    text = summary(_deleted_result(12))  # type: ignore[arg-type]
    assert text.endswith("; 12 preempted: " + ", ".join(f"default/v{i}" for i in range(10)) + " and 2 more")


def test_a_terminal_gets_plain_columns_beyond_rich_max_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubesched.simulate import output

    screen = Terminal()
    output.print_table(_deleted_result(0), "", screen)  # type: ignore[arg-type]
    assert "┃" in screen.getvalue() or "│" in screen.getvalue()
    monkeypatch.setattr(output, "RICH_MAX_ROWS", 2)
    screen = Terminal()
    output.print_table(_deleted_result(0), "", screen)  # type: ignore[arg-type]
    assert screen.getvalue().splitlines() == [
        "POD          NODE   STATUS      REASON",
        "default/p0   n1     Scheduled",
        "default/p1   n1     Scheduled",
        "default/p2   n1     Scheduled",
        "",
        "3 pods: 3 scheduled",
    ]
