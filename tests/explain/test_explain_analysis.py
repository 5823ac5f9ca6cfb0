"""The analysis behind `kubesched explain`: fixes per plugin, preemption's dry run, sampling, ties, and
the promise that looking changes nothing (random clusters: same placements, same messages, same scores)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kubesched.explain import explain
from kubesched.explain.analyze import Analyzer
from kubesched.explain.model import Explanation
from kubesched.framework.runtime import Framework
from kubesched.framework.types import QueuedPodInfo
from kubesched.scenario import parse_scenario
from kubesched.simulate.generate import Shape, random_scenario, to_scenario
from kubesched.simulate.runner import Simulation


def node(name: str, cpu: str = "4", pods: str = "10", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"capacity": {"cpu": cpu, "memory": "8Gi", "pods": pods}},
    }


def pod(
    name: str,
    cpu: str = "100m",
    node_name: str = "",
    labels: dict[str, str] | None = None,
    host_port: int = 0,
    **spec: Any,
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
    if host_port:
        c["ports"] = [{"containerPort": 80, "hostPort": host_port}]
    s: dict[str, Any] = {"containers": [c], **spec}
    if node_name:
        s["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}}, "spec": s}


def scenario(*docs: dict[str, Any], header: dict[str, Any] | None = None) -> Any:
    head = [{"kind": "Scenario", **(header or {})}]
    return parse_scenario(yaml.safe_dump_all([*head, *docs], sort_keys=False), "test.yaml")


def by_node(ex: Explanation) -> dict[str, Any]:
    assert ex.capture is not None
    return {r.name: r for r in ex.capture.nodes}


def fix_texts(ex: Explanation, name: str) -> list[str]:
    return [f"{f.plugin}: {f.text}" for f in by_node(ex)[name].fixes]


# ---------------------------------------------------------------- fixes


def test_node_selector_ports_and_pod_affinity_fixes() -> None:
    sc = scenario(
        node("n1", zone="a", disktype="hdd"),
        node("n2", zone="b", disktype="ssd"),
        node("n3", zone="c"),
        pod("db-0", "3", "n1", {"app": "db"}),
        pod("web-a", "500m", "n1", {"app": "web"}, host_port=8080),
        pod("web-b", "3500m", "n2", {"app": "web"}),
        pod(
            "picky",
            "1",
            labels={"app": "web"},
            host_port=8080,
            nodeSelector={"disktype": "ssd"},
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
                    ]
                }
            },
        ),
    )
    ex = explain(sc, "picky")
    assert ex.outcome.status == "Unschedulable"
    assert fix_texts(ex, "n1") == [
        "NodeAffinity: nodeSelector disktype=ssd: the node has disktype=hdd",
        "NodePorts: hostPort 8080/TCP is taken by a pod on the node",
        "NodeResourcesFit: cpu: 500m short (requests 1, 500m free of 4 allocatable)",
    ]
    assert fix_texts(ex, "n2") == [
        "NodeResourcesFit: cpu: 500m short (requests 1, 500m free of 4 allocatable)",
        "InterPodAffinity: pod affinity term 0: no pod matching app=db runs in zone=b: one must run there first",
    ]
    assert fix_texts(ex, "n3")[0] == "NodeAffinity: nodeSelector disktype=ssd: the node has no disktype label"
    n2 = by_node(ex)["n2"]
    assert n2.status is not None and n2.status.plugin == "NodeResourcesFit"
    assert [f.plugin for f in n2.filters if f.first] == ["NodeResourcesFit"]
    assert n2.preemption is not None and n2.preemption.reason == "No preemption victims found for incoming pod"


def test_required_node_affinity_names_the_closest_term() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "zone", "operator": "In", "values": ["x", "y"]},
                            {"key": "gpu", "operator": "Exists"},
                        ]
                    },
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
                ]
            }
        }
    }
    ex = explain(scenario(node("n1", zone="a"), node("n2", zone="c"), pod("p", affinity=affinity)), "p")
    assert fix_texts(ex, "n1") == [
        "NodeAffinity: required node affinity: closest is term 1, unmatched: zone=b (node: a)",
    ]
    f = by_node(ex)["n2"].fixes[0]
    assert f.kind == "nodeAffinity" and f.details == {"term": 1, "unmatched": ["zone=b (node: c)"]}


def test_spread_skew_and_anti_affinity_fixes() -> None:
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    sc = scenario(
        node("a1", zone="a"),
        node("b1", zone="b"),
        node("c1", zone="c"),
        pod("w1", node_name="a1", labels={"app": "web"}),
        pod("w2", node_name="a1", labels={"app": "web"}),
        pod("w3", node_name="a1", labels={"app": "web"}),
        pod("w4", node_name="b1", labels={"app": "web"}),
        pod("cache", node_name="b1", labels={"app": "cache"}),
        pod("c1-full", "3950m", "c1"),
        pod("p", labels={"app": "web"}, topologySpreadConstraints=spread, affinity=anti),
    )
    ex = explain(sc, "p")
    assert ex.outcome.status == "Unschedulable"
    (a1,) = by_node(ex)["a1"].fixes
    assert a1.kind == "topologySpread"
    assert a1.details == {
        "constraint": 0,
        "topologyKey": "zone",
        "domain": "a",
        "matching": 3,
        "globalMinimum": 0,
        "skew": 4,
        "maxSkew": 1,
        "excess": 3,
    }
    assert "the emptiest domain zone=c has 0" in a1.text
    b1 = by_node(ex)["b1"]
    # In filter order: PodTopologySpread runs before InterPodAffinity.
    assert [f.kind for f in b1.fixes] == ["topologySpread", "podAntiAffinity"]
    assert b1.fixes[1].text == (
        "pod anti-affinity term 0: 1 pod(s) matching app=cache run in kubernetes.io/hostname=b1: they must leave it"
    )
    assert b1.fixes[0].details["skew"] == 2 and b1.fixes[0].details["excess"] == 1
    (c1,) = by_node(ex)["c1"].fixes
    assert c1.details["missing"] == "50m"


def test_existing_pods_anti_affinity_names_the_repelling_pod() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
            ]
        }
    }
    sc = scenario(
        node("a1", zone="a"),
        node("a2", zone="a"),
        pod("loner", node_name="a1", labels={"app": "loner"}, affinity=anti),
        pod("web", labels={"app": "web"}),
    )
    ex = explain(sc, "web")
    for name in ("a1", "a2"):
        (f,) = by_node(ex)[name].fixes
        assert f.kind == "existingAntiAffinity"
        assert f.details == {"pods": ["default/loner (zone=a)"]}


# ---------------------------------------------------------------- preemption, PreFilter, sampling, ties


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def test_preemption_dry_run_matches_what_the_scheduler_then_does() -> None:
    low = {"priorityClassName": "low"}
    sc = scenario(
        priority_class("high", 1000),
        priority_class("low", 10),
        node("n1"),
        node("n2"),
        pod("small", "1", "n1", **low),
        pod("big-a", "2", "n1", **low),
        pod("half-1", "1750m", "n2", **low),
        pod("half-2", "1750m", "n2", **low),
        pod("urgent", "2500m", priorityClassName="high"),
    )
    ex = explain(sc, "urgent")
    # Attempt 1 preempted; attempt 2 scheduled on the nominated node.
    assert ex.outcome.status == "Scheduled"
    (first,) = ex.earlier
    p = first.preemption
    assert p is not None and p.node == ex.outcome.node == "n1"
    assert [(v.pod, v.priority) for v in p.victims] == [("default/big-a", 10)]
    # n2 would cost two victims, n1 one: fewest victims wins.
    assert sorted(p.candidates) == ["n1", "n2"]
    sim = Simulation(sc)
    assert sim.run().deleted == ["default/big-a"]


def test_preemption_per_node_victims_when_it_stays_pending() -> None:
    sc = scenario(
        priority_class("low", 10),
        {**priority_class("high", 100), "preemptionPolicy": "Never"},
        node("n1"),
        pod("victim", "3", "n1", priorityClassName="low"),
        pod("p", "2", priorityClassName="high"),
    )
    ex = explain(sc, "p")
    assert ex.capture is not None and ex.capture.preemption is not None
    assert ex.capture.preemption.eligible is False
    assert ex.capture.preemption.message == "not eligible due to preemptionPolicy=Never."
    assert ex.outcome.message is not None and ex.outcome.message.endswith(
        "preemption: not eligible due to preemptionPolicy=Never."
    )


def test_prefilter_narrowing_by_node_name_affinity() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]
            }
        }
    }
    ex = explain(scenario(node("n1"), node("n2"), node("n3"), pod("p", affinity=affinity)), "p")
    nodes = by_node(ex)
    assert ex.outcome.node == "n2"
    assert nodes["n1"].status is not None
    assert nodes["n1"].status.message() == "node(s) didn't satisfy plugin(s) [NodeAffinity]"
    assert not nodes["n1"].examined and nodes["n2"].examined
    assert ex.capture is not None and ex.capture.sampling.candidates == 1


def test_sampling_scores_exactly_the_nodes_the_cycle_scored() -> None:
    docs = [node(f"n{i:03d}", cpu="8") for i in range(150)]
    docs += [pod(f"p{i}", "500m") for i in range(3)]
    sc = scenario(*docs)
    ex = explain(sc, "p2")
    c = ex.capture
    assert c is not None
    s = c.sampling
    assert (s.candidates, s.num_to_find) == (150, 100)
    # The two cycles before examined 100 nodes each (the search stops at the 101st feasible one, uncounted).
    assert s.start_index == 200 % 150
    assert len(s.examined) == 100
    assert s.examined[0] == "n050"
    sim = Simulation(sc)
    sim.run()
    attempt = sim.attempts["default/p2"]
    assert {x.name: x.total for x in c.scores} == attempt.scores
    assert ex.winner is not None and ex.winner.node == attempt.node
    assert ex.winner.tied == sorted(attempt.tied)


def test_large_clusters_render_grouped_rows_and_the_best_scores() -> None:
    from rich.console import Console

    from kubesched.explain.render import render

    docs = [node(f"n{i:03d}", cpu="8") for i in range(150)]
    docs += [node(f"cordoned-{i}", cpu="8") | {"spec": {"unschedulable": True}} for i in range(30)]
    ex = explain(scenario(*docs, pod("p", "500m")), "p")
    console = Console(record=True, width=200)
    console.print(render(ex))
    text = console.export_text()
    # 150 feasible nodes, 100 of them examined and scored; 30 cordoned ones, one row each kind.
    assert "n000, n001, n002 (+97 more)" in text
    assert "n100, n101, n102 (+47 more)" in text and "feasible, not examined" in text
    # Nodes that exist before the scheduler starts come in the API server's list order (by name).
    assert "cordoned-0, cordoned-1, cordoned-10 (+27 more)" in text
    assert "the best 20 of 100 scored nodes (-o json has all)" in text
    assert ex.capture is not None and len(ex.capture.scores) == 100 and len(ex.capture.nodes) == 180


def test_ties_are_named() -> None:
    ex = explain(scenario(node("n1"), node("n2"), node("n3"), pod("p")), "p")
    assert ex.winner is not None
    assert ex.winner.tied == ["n1", "n2", "n3"]
    assert ex.winner.node == ex.outcome.node
    assert ex.winner.reason.startswith("3 nodes tie at ")


def test_no_nodes() -> None:
    ex = explain(scenario(pod("p")), "p")
    assert ex.capture is not None and ex.capture.nodes == []
    assert ex.capture.pre_filter is not None
    assert ex.capture.pre_filter.message() == ex.outcome.message == "no nodes available to schedule pods"


def test_gated_pod_was_never_attempted() -> None:
    ex = explain(scenario(node("n1"), pod("p", schedulingGates=[{"name": "wait"}])), "p")
    assert ex.capture is None
    assert ex.outcome.status == "SchedulingGated"
    assert ex.notes == ["the scheduler never tried this pod: it is gated (spec.schedulingGates)"]
    assert ex.to_dict()["attempted"] is False


# ---------------------------------------------------------------- looking changes nothing


def _explain_all(sc: Any) -> tuple[Any, dict[str, Analyzer], Simulation]:
    sim = Simulation(sc)
    keys = [f"{m.obj.metadata.namespace or 'default'}/{m.obj.metadata.name}" for m in sc.pending_pods()]
    analyzers = {k: Analyzer(sim.scheduler, k, sim.attempts) for k in keys}

    def hook(fw: Framework, qpi: QueuedPodInfo) -> None:
        a = analyzers.get(qpi.pod_info.key)
        if a is not None:
            a(fw, qpi)

    sim.scheduler.before_cycle = hook
    return sim.run(), analyzers, sim


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_clusters_same_outcome_and_explanations_agree_with_the_cycle(seed: int) -> None:
    shape = Shape(nodes=6, running_pods=12, pending_pods=40, priorities=(0, 100, 1000))
    docs = random_scenario(shape, seed)
    plain = Simulation(to_scenario(docs)).run()
    watched, analyzers, sim = _explain_all(to_scenario(docs))
    assert [(o.key, o.node, o.status, o.nominated_node, o.message, o.scores) for o in watched.results] == [
        (o.key, o.node, o.status, o.nominated_node, o.message, o.scores) for o in plain.results
    ]
    assert watched.deleted == plain.deleted
    checked = {"unschedulable": 0, "scored": 0, "preempted": 0}
    for o in watched.results:
        cap = analyzers[o.key].capture
        if cap is None:
            continue
        attempt = sim.attempts[o.key]
        if o.nominated_node and o.status in ("Scheduled", "Unschedulable"):
            # The dry run of the attempt that preempted named the node the scheduler nominated.
            dry = [e.preemption for e in analyzers[o.key].earlier] + [cap.preemption]
            picked = [p.node for p in dry if p is not None and p.node]
            assert picked and picked[-1] == o.nominated_node
            checked["preempted"] += 1
        if o.status == "Unschedulable" and cap.pre_filter is None:
            counts: dict[str, int] = {}
            for r in cap.nodes:
                assert r.status is not None
                for reason in r.status.reasons:
                    counts[reason] = counts.get(reason, 0) + 1
            hist = ", ".join(sorted(f"{v} {k}" for k, v in counts.items()))
            assert o.message is not None and o.message.startswith(f"0/{len(cap.nodes)} nodes are available: {hist}.")
            if cap.preemption is not None and cap.preemption.message.startswith("0/"):
                assert o.message.endswith("preemption: " + cap.preemption.message)
            checked["unschedulable"] += 1
        elif attempt.node and cap.scores:
            assert {s.name: s.total for s in cap.scores} == attempt.scores
            checked["scored"] += 1
    assert checked["scored"] > 0 and checked["unschedulable"] > 0 and checked["preempted"] > 0, checked
