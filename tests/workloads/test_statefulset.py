"""StatefulSet: ordinal pods with their own claims; OrderedReady creates each once the one before runs."""

from __future__ import annotations

from typing import Any

from tests.workloads.helpers import load, made, node, template

from kubesched.simulate.runner import Simulation


def _sts(replicas: int = 3, policy: str | None = None, cpu: str = "100m") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "serviceName": "nginx",
        "replicas": replicas,
        "selector": {"matchLabels": {"app": "nginx"}},
        "template": template({"app": "nginx"}, cpu=cpu),
        "volumeClaimTemplates": [
            {
                "metadata": {"name": "www"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            }
        ],
    }
    if policy:
        spec["podManagementPolicy"] = policy
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"}, "spec": spec}


def test_pods_are_named_by_ordinal_each_with_its_claim() -> None:
    sc = load([_sts()])
    pods, claims = made(sc), made(sc, "PersistentVolumeClaim")
    assert [p.obj.metadata.name for p in pods] == ["web-0", "web-1", "web-2"]
    assert [c.obj.metadata.name for c in claims] == ["www-web-0", "www-web-1", "www-web-2"]
    assert claims[0].obj.metadata.labels == {"app": "nginx"}  # the set's selector labels
    p = pods[1].obj
    assert p.metadata.labels["statefulset.kubernetes.io/pod-name"] == "web-1"
    assert p.metadata.labels["apps.kubernetes.io/pod-index"] == "1"
    assert p.metadata.labels["controller-revision-hash"].startswith("web-")
    spec = pods[1].raw["spec"]
    assert (spec["hostname"], spec["subdomain"]) == ("web-1", "nginx")
    (vol,) = p.spec.volumes
    assert (vol.name, vol.persistent_volume_claim.claim_name) == ("www", "www-web-1")
    # OrderedReady (the default): each waits for the one before.
    assert [q.after for q in pods] == [None, "default/web-0", "default/web-1"]


def test_ordered_ready_holds_back_the_pods_after_one_that_cannot_run() -> None:
    # Claims that no PV can bind: web-0 stays pending, so web-1 and web-2 are never created.
    out = Simulation(load([node("n1"), _sts()]), seed=0).run()
    by_pod = {o.key: o for o in out.results}
    assert by_pod["default/web-0"].status == "Unschedulable"
    for later, before in (("default/web-1", "default/web-0"), ("default/web-2", "default/web-1")):
        assert by_pod[later].status == "Pending"
        assert (
            by_pod[later].message == f"not created: its StatefulSet creates it once {before} is running (OrderedReady)"
        )


def test_ordered_ready_creates_the_next_pod_once_the_one_before_is_scheduled() -> None:
    sts = _sts(cpu="1")
    del sts["spec"]["volumeClaimTemplates"]
    out = Simulation(load([node("n1", cpu="2"), sts]), seed=0).run()
    assert [(o.key, o.status) for o in out.results] == [
        ("default/web-0", "Scheduled"),
        ("default/web-1", "Scheduled"),
        ("default/web-2", "Unschedulable"),
    ]
    parallel = _sts(policy="Parallel")
    assert [p.after for p in made(load([parallel]))] == [None, None, None]


def test_existing_pods_and_claims_are_kept() -> None:
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "www-web-0"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    running = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-1"},
        "spec": {**template({})["spec"], "nodeName": "n1"},
    }
    sc = load([node("n1"), claim, running, _sts()])
    assert [p.obj.metadata.name for p in made(sc)] == ["web-0", "web-2"]
    assert [c.obj.metadata.name for c in made(sc, "PersistentVolumeClaim")] == ["www-web-2"]
