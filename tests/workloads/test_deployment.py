"""Deployment → ReplicaSet → Pods, named and labelled as the deployment and replicaset controllers do."""

from __future__ import annotations

from tests.workloads.helpers import load, made, node, template

NGINX = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "nginx-deployment", "labels": {"app": "nginx"}},
    "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "nginx"}}, "template": template({"app": "nginx"})},
}


def test_a_deployment_makes_one_replica_set_named_after_its_template_hash_and_its_pods() -> None:
    sc = load([node("n1"), NGINX])
    (rs,) = made(sc, "ReplicaSet")
    h = rs.obj.metadata.labels["pod-template-hash"]
    assert rs.obj.metadata.name == f"nginx-deployment-{h}" and len(h) == 10
    assert rs.obj.spec.replicas == 3
    assert rs.obj.spec.selector.match_labels == {"app": "nginx", "pod-template-hash": h}
    assert rs.obj.metadata.annotations["deployment.kubernetes.io/max-replicas"] == "4"  # 25% surge, rounded up
    (owner,) = rs.obj.metadata.owner_references
    assert (owner.kind, owner.name, owner.controller) == ("Deployment", "nginx-deployment", True)
    pods = made(sc)
    assert len(pods) == 3
    for p in pods:
        name = p.obj.metadata.name
        assert name.startswith(f"{rs.obj.metadata.name}-") and len(name) == len(rs.obj.metadata.name) + 6
        assert p.obj.metadata.labels == {"app": "nginx", "pod-template-hash": h}
        (ref,) = p.obj.metadata.owner_references
        assert (ref.kind, ref.name, ref.uid) == ("ReplicaSet", rs.obj.metadata.name, rs.obj.metadata.uid)
        assert p.workload == "deployment/nginx-deployment"
    # The pods come right after the Deployment and its ReplicaSet, before what the file declares next.
    kinds = [m.kind for m in sc.manifests]
    assert kinds == ["Node", "Deployment", "ReplicaSet", "Pod", "Pod", "Pod"]


def test_names_are_the_seeds_and_the_hash_the_templates() -> None:
    names = [m.obj.metadata.name for m in made(load([NGINX], seed=0))]
    assert names == [m.obj.metadata.name for m in made(load([NGINX], seed=0))]
    assert names != [m.obj.metadata.name for m in made(load([NGINX], seed=1))]
    other = {**NGINX, "spec": {**NGINX["spec"], "template": template({"app": "nginx"}, cpu="200m")}}
    assert (
        made(load([NGINX]), "ReplicaSet")[0].obj.metadata.name != made(load([other]), "ReplicaSet")[0].obj.metadata.name
    )


def test_a_paused_deployment_makes_nothing_and_replicas_default_to_one() -> None:
    paused = {**NGINX, "spec": {**NGINX["spec"], "paused": True}}
    assert made(load([paused]), "ReplicaSet") == []
    one = {**NGINX, "spec": {k: v for k, v in NGINX["spec"].items() if k != "replicas"}}
    assert len(made(load([one]))) == 1


def test_pods_the_api_server_refuses_are_reported_against_the_deployment() -> None:
    import pytest

    from kubesched.errors import InputError

    gold = {**NGINX, "spec": {**NGINX["spec"], "template": template({"app": "nginx"}, priorityClassName="gold")}}
    with pytest.raises(InputError) as err:
        load([node("n1"), gold])
    text = str(err.value)
    assert text.startswith("s.yaml: Deployment default/nginx-deployment: the Pod its controller makes (Pod default/")
    assert text.endswith("is forbidden: no PriorityClass with name gold was found")
