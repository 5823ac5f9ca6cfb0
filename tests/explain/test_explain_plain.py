"""`kubesched explain` piped (a file, a CI log): whole lines and plain columns, not one word per line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tests.terminal import Terminal

from kubesched.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"

HUGE = """\
Pod default/huge: Unschedulable  [attempt 1, profile default-scheduler]
0/5 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, 1 node(s) were unschedulable, 3 Insufficient cpu. no new claims to deallocate, preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.

Filter: every plugin on every node (▶ = the one upstream reports)
NODE         RESULT                         FAILED FILTERS
zone-a-1     UnschedulableAndUnresolvable   ▶ NodeResourcesFit: Insufficient cpu
zone-b-1     UnschedulableAndUnresolvable   ▶ NodeResourcesFit: Insufficient cpu
zone-c-1     UnschedulableAndUnresolvable   ▶ NodeUnschedulable: node(s) were unschedulable
                                              NodeResourcesFit: Insufficient cpu
zone-a-2     UnschedulableAndUnresolvable   ▶ NodeResourcesFit: Insufficient cpu
zone-b-gpu   UnschedulableAndUnresolvable   ▶ TaintToleration: node(s) had untolerated taint {nvidia.com/gpu: present}
                                              NodeResourcesFit: Insufficient cpu
skipped after PreFilter: DynamicResources, InterPodAffinity, NodeAffinity, NodePorts, NodeVolumeLimits, PodTopologySpread, VolumeBinding, VolumeRestrictions, VolumeZone

What would make it fit, node by node
NODE         SMALLEST CHANGE                                                                                                                                                       PREEMPTION
zone-a-1     NodeResourcesFit: cpu: 27750m short (requests 32, 4250m free of 8 allocatable; exceeds the whole node by 24)                                                          preemption cannot help: Insufficient cpu
zone-b-1     NodeResourcesFit: cpu: 30250m short (requests 32, 1750m free of 8 allocatable; exceeds the whole node by 24)                                                          preemption cannot help: Insufficient cpu
zone-c-1     NodeUnschedulable: the node is cordoned (spec.unschedulable: true): uncordon it                                                                                       preemption cannot help: node(s) were unschedulable
             NodeResourcesFit: cpu: 24 short (requests 32, 8 free of 8 allocatable; exceeds the whole node by 24)
zone-a-2     NodeResourcesFit: cpu: 28750m short (requests 32, 3250m free of 4 allocatable; exceeds the whole node by 28)                                                          preemption cannot help: Insufficient cpu
zone-b-gpu   TaintToleration: untolerated taint nvidia.com/gpu=present:NoSchedule: add the toleration {key: nvidia.com/gpu, operator: Equal, value: present, effect: NoSchedule}   preemption cannot help: node(s) had untolerated taint {nvidia.com/gpu: present}
             NodeResourcesFit: cpu: 20 short (requests 32, 12 free of 16 allocatable; exceeds the whole node by 16)

Preemption: cannot help: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.
"""  # noqa: E501

WEB_1 = """\
Pod default/web-1: Scheduled on zone-a-2  [attempt 1, profile default-scheduler]

Filter: every plugin on every node (▶ = the one upstream reports)
NODE         RESULT                         FAILED FILTERS
zone-a-1     feasible
zone-b-1     feasible
zone-c-1     UnschedulableAndUnresolvable   ▶ NodeUnschedulable: node(s) were unschedulable
zone-a-2     feasible
zone-b-gpu   UnschedulableAndUnresolvable   ▶ TaintToleration: node(s) had untolerated taint {nvidia.com/gpu: present}
skipped after PreFilter: DynamicResources, InterPodAffinity, NodeAffinity, NodePorts, NodeVolumeLimits, PodTopologySpread, VolumeBinding, VolumeRestrictions, VolumeZone

Score: raw→normalized→weighted (normalized × weight)
NODE       TaintToleration ×3   NodeResourcesFit ×1   NodeResourcesBalancedAllocation ×1   ImageLocality ×1   TOTAL
zone-a-2            0→100→300              91→91→91                             95→95→95              0→0→0     486
zone-a-1            0→100→300              64→64→64                             91→91→91              0→0→0     455
zone-b-1            0→100→300              52→52→52                             78→78→78              0→0→0     430
skipped after PreScore: NodeAffinity, VolumeBinding, PodTopologySpread, InterPodAffinity

Winner: zone-a-2 — highest total 486, 31 ahead of zone-a-1 (455); by plugin: NodeResourcesFit +27, NodeResourcesBalancedAllocation +4
"""  # noqa: E501


def _piped(capsys: pytest.CaptureFixture[str], pod: str) -> str:
    assert main(["explain", str(EXAMPLE), pod]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


@pytest.mark.parametrize(("pod", "expected"), [("huge", HUGE), ("web-1", WEB_1)])
def test_piped_whole_lines_and_plain_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, pod: str, expected: str
) -> None:
    monkeypatch.setenv("COLUMNS", "40")  # a terminal's width has nothing to do with a pipe
    assert _piped(capsys, pod) == expected


def test_on_a_terminal_the_rich_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    assert main(["explain", str(EXAMPLE), "huge"]) == 0
    lines = terminal.text().splitlines()
    assert max(len(line) for line in lines) == 100
    # The message wrapped at the terminal's width, the tables drawn.
    assert (
        lines[1] == "0/5 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, 1 node(s) were"
    )
    assert lines[6].startswith("┃ NODE       ┃ RESULT                       ┃ FAILED FILTERS")
