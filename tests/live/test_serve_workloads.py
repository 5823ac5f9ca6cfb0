"""The served cluster's workload controllers, without HTTP: what a scenario's workloads and later writes make."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import yaml

from kubesched.api.decode import decode
from kubesched.scenario import parse_scenario
from kubesched.serve.cluster import ServedCluster
from kubesched.serve.server import load_cluster

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
    "status": {"capacity": {"cpu": "8", "memory": "8Gi", "pods": "110"}},
}
TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE},
}


def _served(*docs: dict[str, Any]) -> ServedCluster:
    c = ServedCluster()
    load_cluster(c, parse_scenario(yaml.safe_dump_all(docs), "test"))
    c.store.deliver()
    return c


def _pods(c: ServedCluster) -> list[str]:
    return sorted(p.metadata.name for p in c.store.list("Pod"))


def _update(c: ServedCluster, kind: str, key: str, change: dict[str, Any]) -> None:
    raw = copy.deepcopy(c.store.get_raw(kind, key) or {})
    raw["spec"] = {**raw["spec"], **change}
    c.store.incoming[(kind, key)] = raw
    group = {"Deployment": "apps/v1", "StatefulSet": "apps/v1"}[kind]
    c.client.update(kind, decode(kind, {"apiVersion": group, "kind": kind, **raw}))
    c.store.deliver()


def test_a_scenario_deployment_gets_its_pods_once_and_scaling_and_deleting_follow() -> None:
    c = _served(NODE, DEPLOYMENT)
    (rs,) = c.store.list("ReplicaSet")
    pods = _pods(c)
    # Made by the served cluster's controllers, not twice (the scenario's own expansion is left out).
    assert len(pods) == 2 and all(p.startswith(f"{rs.metadata.name}-") for p in pods)
    _update(c, "Deployment", "default/web", {"replicas": 4})
    assert c.store.get("ReplicaSet", f"default/{rs.metadata.name}").spec.replicas == 4
    assert len(_pods(c)) == 4
    # Their status counts the pods (none ready: no kubelet runs them), as `kubectl get` prints it.
    assert (c.store.get_raw("ReplicaSet", f"default/{rs.metadata.name}") or {})["status"]["replicas"] == 4
    dep = (c.store.get_raw("Deployment", "default/web") or {})["status"]
    assert (dep["replicas"], dep["updatedReplicas"], dep.get("readyReplicas", 0)) == (4, 4, 0)
    _update(c, "Deployment", "default/web", {"replicas": 1})
    assert len(_pods(c)) == 1
    # A pod deleted is replaced.
    c.client.delete_pod("default", _pods(c)[0])
    c.store.deliver()
    assert len(_pods(c)) == 1
    c.client.delete("Deployment", "default/web")
    c.store.deliver()
    assert c.store.list("ReplicaSet") == [] and _pods(c) == []


def test_an_ordered_ready_statefulset_makes_each_pod_once_the_one_before_is_bound() -> None:
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {
            "replicas": 3,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "web"}},
            "template": TEMPLATE,
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                }
            ],
        },
    }
    c = _served(NODE, sts)
    assert _pods(c) == ["db-0"]
    # Each pod's claim comes with it, not before.
    assert [p.metadata.name for p in c.store.list("PersistentVolumeClaim")] == ["data-db-0"]
    pod = c.store.get("Pod", "default/db-0")
    c.client.update("Pod", msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name="n1")))
    c.store.deliver()
    assert _pods(c) == ["db-0", "db-1"]
    assert sorted(p.metadata.name for p in c.store.list("PersistentVolumeClaim")) == ["data-db-0", "data-db-1"]


def test_a_node_added_later_gets_its_daemonset_pod() -> None:
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE},
    }
    c = _served(NODE, ds)
    assert len(_pods(c)) == 1
    c.client.create(
        "Node", decode("Node", {**NODE, "metadata": {"name": "n2", "labels": {"kubernetes.io/hostname": "n2"}}})
    )
    c.store.deliver()
    pinned = set()
    for p in c.store.list("Pod"):
        (term,) = p.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
        pinned.add(term.match_fields[0].values[0])
    assert pinned == {"n1", "n2"}
