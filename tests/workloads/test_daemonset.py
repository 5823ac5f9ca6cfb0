"""DaemonSet: a pod for each node it should run on, pinned by matchFields, with the controller's tolerations."""

from __future__ import annotations

from typing import Any

from tests.workloads.helpers import load, made, node, template

FLUENTD = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "fluentd-elasticsearch", "namespace": "kube-system"},
    "spec": {
        "selector": {"matchLabels": {"name": "fluentd-elasticsearch"}},
        "template": template(
            {"name": "fluentd-elasticsearch"},
            tolerations=[
                {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
            ],
        ),
    },
}
TAINTED = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
CONTROL_PLANE = {"taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]}


def _node_of(pod: Any) -> str:
    (term,) = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
    (field,) = term.match_fields
    assert (field.key, field.operator) == ("metadata.name", "In")
    return str(field.values[0])


def test_one_pod_per_node_it_tolerates_pinned_there() -> None:
    nodes = [node("b"), node("a"), node("gpu", **TAINTED), node("cp", **CONTROL_PLANE)]
    pods = made(load([*nodes, FLUENTD]))
    # Nodes in the lister's order (by name); the untolerated taint keeps it off "gpu".
    assert [_node_of(p.obj) for p in pods] == ["a", "b", "cp"]
    p = pods[0].obj
    assert p.metadata.name.startswith("fluentd-elasticsearch-") and p.metadata.namespace == "kube-system"
    assert p.metadata.labels["pod-template-generation"] == "1"
    assert [(t.key, t.effect) for t in p.spec.tolerations] == [
        ("node-role.kubernetes.io/control-plane", "NoSchedule"),
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
    assert all(t.operator == "Exists" for t in p.spec.tolerations)


def test_node_selector_and_host_network() -> None:
    ds: dict[str, Any] = {**FLUENTD, "spec": {**FLUENTD["spec"]}}
    tmpl = template({"name": "fluentd-elasticsearch"}, nodeSelector={"disk": "ssd"}, hostNetwork=True)
    ds["spec"]["template"] = tmpl
    pods = made(load([node("a", labels={"disk": "ssd"}), node("b"), ds]))
    assert [_node_of(p.obj) for p in pods] == ["a"]
    assert ("node.kubernetes.io/network-unavailable", "NoSchedule") in [
        (t.key, t.effect) for t in pods[0].obj.spec.tolerations
    ]


def test_the_scheduler_places_each_on_its_node_even_an_unschedulable_one() -> None:
    from kubesched.simulate.runner import Simulation

    out = Simulation(load([node("a"), node("b", unschedulable=True), FLUENTD]), seed=0).run()
    assert sorted((o.node, o.status) for o in out.results) == [("a", "Scheduled"), ("b", "Scheduled")]
    assert {o.workload for o in out.results} == {"daemonset/fluentd-elasticsearch"}
