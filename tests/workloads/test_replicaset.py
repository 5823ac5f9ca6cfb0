"""ReplicaSet and ReplicationController: the pods they lack, counting the ones they own or adopt."""

from __future__ import annotations

from typing import Any

from tests.workloads.helpers import load, made, node, template


def _rs(replicas: int, uid: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "frontend"}
    if uid:
        meta["uid"] = uid
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": meta,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"tier": "frontend"}},
            "template": template({"tier": "frontend"}),
        },
    }


def _pod(name: str, labels: dict[str, str], owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if owner:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template(labels)["spec"]}


def test_pods_it_owns_count_by_uid_or_by_name_and_matching_orphans_are_adopted() -> None:
    uid = "11111111-2222-3333-4444-555555555555"
    owned = _pod(
        "mine",
        {"tier": "frontend"},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "frontend", "uid": uid, "controller": True},
    )
    orphan = _pod("orphan", {"tier": "frontend"})
    stranger = _pod("stranger", {"tier": "backend"})
    sc = load([node("n1"), _rs(4, uid), owned, orphan, stranger])
    pods = made(sc)
    assert len(pods) == 2 and all(p.obj.metadata.name.startswith("frontend-") for p in pods)
    # A snapshot drops the owner's uid, not the reference's: the reference names it.
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "frontend", "uid": "gone", "controller": True}
    by_name = _pod("mine", {"tier": "frontend"}, ref)
    assert len(made(load([_rs(2), by_name]))) == 1
    # The pods it owns are listed under it, declared or made.
    declared = next(m for m in sc.manifests if m.obj.metadata.name == "mine")
    assert declared.workload == "replicaset/frontend" and not declared.generated


def test_a_replication_controller_selects_its_template_labels_by_default() -> None:
    rc = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "nginx"},
        "spec": {"replicas": 3, "template": template({"app": "nginx"})},
    }
    pods = made(load([rc, _pod("running", {"app": "nginx"})]))
    assert len(pods) == 2
    (ref,) = pods[0].obj.metadata.owner_references
    assert (ref.api_version, ref.kind, ref.name) == ("v1", "ReplicationController", "nginx")
