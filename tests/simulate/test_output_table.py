"""The simulate table's words: counts, what a preemptor did, workloads' headings."""

from __future__ import annotations

import io

from rich.console import Console
from tests.workloads.helpers import load, node, template

from kubesched.simulate.output import render_table
from kubesched.simulate.runner import Simulation


def _text(docs: list[dict[str, object]]) -> str:
    out = io.StringIO()
    Console(file=out, width=160).print(render_table(Simulation(load(docs), seed=0).run()))
    return out.getvalue()


def _pod(name: str, cpu: str, **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {**template({}, cpu)["spec"], **spec},
    }


def test_counts_read_as_words() -> None:
    assert "1 pod: 1 scheduled" in _text([node("n1"), _pod("a", "1")])
    assert [line.strip() for line in _text([node("n1")]).splitlines()][-1] == "0 pods"  # no dangling colon
    assert "2 pods: 2 scheduled" in _text([node("n1"), _pod("a", "1"), _pod("b", "1")])


def test_a_preemptor_says_how_many_pods_it_preempted_where() -> None:
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    docs = [high, node("n1", cpu="2"), _pod("low-1", "1", nodeName="n1"), _pod("low-2", "1", nodeName="n1")]
    text = _text([*docs, _pod("big", "2", priorityClassName="high")])
    assert "preempted 2 pods on n1" in text
    assert "1 pod: 1 scheduled; 2 preempted: default/low-" in text
