"""`kubesched serve` as an API server: discovery, CRUD, subresources, watch semantics."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.live.conftest import Api, Cluster, make_pod, nodes_yaml


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    c = Cluster(Path(tmp_path_factory.mktemp("serve")))
    try:
        yield c.start_serve(nodes_yaml(2), "--history", "1000")
    finally:
        c.close()


def watch(api: Api, path: str, **params: Any) -> list[dict[str, Any]]:
    q = "&".join(f"{k}={v}" for k, v in {"watch": "1", "timeoutSeconds": "1", **params}.items())
    with urllib.request.urlopen(f"{api.url}{path}?{q}", timeout=10) as r:
        return [json.loads(line) for line in r.read().splitlines() if line.strip()]


def test_discovery(api: Api) -> None:
    assert api.get("/api")["versions"] == ["v1"]
    groups = {g["name"] for g in api.get("/apis")["groups"]}
    assert {"apps", "policy", "scheduling.k8s.io", "storage.k8s.io", "coordination.k8s.io", "events.k8s.io"} <= groups
    core = {r["name"]: r for r in api.get("/api/v1")["resources"]}
    assert core["pods"]["namespaced"] and core["pods"]["kind"] == "Pod" and "watch" in core["pods"]["verbs"]
    assert core["pods/binding"]["verbs"] == ["create"]
    assert not core["nodes"]["namespaced"]
    leases = api.get("/apis/coordination.k8s.io/v1")["resources"]
    assert leases[0]["name"] == "leases"
    assert api.get("/version")["minor"] == "34"


def test_create_get_list_paginate(api: Api) -> None:
    for i in range(5):
        api.create(
            "/api/v1/namespaces/default/pods",
            {**make_pod(f"page{i}"), "metadata": {"name": f"page{i}", "labels": {"set": "page"}}},
        )
    pod = api.get("/api/v1/namespaces/default/pods/page0")
    assert pod["kind"] == "Pod" and pod["metadata"]["uid"] and pod["metadata"]["resourceVersion"]
    assert pod["spec"]["containers"][0]["image"] == "registry.k8s.io/pause:3.10", "unknown fields survive"
    assert pod["spec"]["priority"] == 0 and pod["status"]["phase"] == "Pending", "defaulting and admission ran"
    code, body = api.call("POST", "/api/v1/namespaces/default/pods", make_pod("page0"))
    assert code == 409 and body["reason"] == "AlreadyExists" and body["message"] == 'pods "page0" already exists'
    code, body = api.call("GET", "/api/v1/namespaces/default/pods/nope")
    assert code == 404 and body["message"] == 'pods "nope" not found' and body["kind"] == "Status"
    first = api.get("/api/v1/namespaces/default/pods?limit=2&labelSelector=set%3Dpage")
    names = [p["metadata"]["name"] for p in first["items"]]
    token = first["metadata"]["continue"]
    while token:
        page = api.get(f"/api/v1/namespaces/default/pods?limit=2&continue={token}")
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        names += [p["metadata"]["name"] for p in page["items"]]
        token = page["metadata"].get("continue")
    assert names == [f"page{i}" for i in range(5)]
    code, _ = api.call("POST", "/api/v1/namespaces/nowhere/pods", make_pod("x"))
    assert code == 404


def test_binding_subresource(api: Api) -> None:
    api.create("/api/v1/namespaces/default/pods", make_pod("b1"))
    uid = api.get("/api/v1/namespaces/default/pods/b1")["metadata"]["uid"]
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "b1", "uid": uid},
        "target": {"kind": "Node", "name": "node-0"},
    }
    code, st = api.call("POST", "/api/v1/namespaces/default/pods/b1/binding", binding)
    assert code == 201 and st == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    pod = api.get("/api/v1/namespaces/default/pods/b1")
    assert pod["spec"]["nodeName"] == "node-0"
    assert any(c["type"] == "PodScheduled" and c["status"] == "True" for c in pod["status"]["conditions"])
    code, st = api.call("POST", "/api/v1/namespaces/default/pods/b1/binding", binding)
    assert code == 409 and st["reason"] == "Conflict"
    assert (
        st["message"]
        == 'Operation cannot be fulfilled on pods/binding "b1": pod b1 is already assigned to node "node-0"'
    )
    code, st = api.call("POST", "/api/v1/namespaces/default/pods/ghost/binding", binding)
    assert code == 404


def test_status_patch_and_preconditions(api: Api) -> None:
    api.create("/api/v1/namespaces/default/pods", make_pod("s1"))
    patch = {
        "status": {
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "no"}]
        }
    }
    code, pod = api.call(
        "PATCH", "/api/v1/namespaces/default/pods/s1/status", patch, "application/strategic-merge-patch+json"
    )
    assert code == 200
    patch2 = {
        "status": {
            "$setElementOrder/conditions": [{"type": "PodScheduled"}, {"type": "Ready"}],
            "conditions": [{"type": "Ready", "status": "False"}],
            "nominatedNodeName": "node-1",
        }
    }
    code, pod = api.call(
        "PATCH", "/api/v1/namespaces/default/pods/s1/status", patch2, "application/strategic-merge-patch+json"
    )
    assert [c["type"] for c in pod["status"]["conditions"]] == ["PodScheduled", "Ready"]
    assert pod["status"]["nominatedNodeName"] == "node-1"
    code, pod = api.call(
        "PATCH",
        "/api/v1/namespaces/default/pods/s1/status",
        {"status": {"nominatedNodeName": None}},
        "application/merge-patch+json",
    )
    assert "nominatedNodeName" not in pod["status"]
    # A status written through the main resource is ignored; a stale resourceVersion is a conflict.
    stale = dict(pod)
    code, _ = api.call("PUT", "/api/v1/namespaces/default/pods/s1", {**pod, "status": {"phase": "Failed"}})
    assert code == 200 and api.get("/api/v1/namespaces/default/pods/s1")["status"]["phase"] == "Pending"
    code, st = api.call("PUT", "/api/v1/namespaces/default/pods/s1", stale)
    assert code == 409 and "the object has been modified" in st["message"]


def test_pod_generation_counts_spec_changes_as_kube_apiserver(api: Api) -> None:
    """What kube-apiserver v1.34.1 answered to the same writes: generation 1 at creation whatever the client
    sent, one more per change of the spec, none for labels, status writes or the binding, and never the
    client's value."""
    path = "/api/v1/namespaces/default/pods/gen"
    pod = make_pod("gen")
    pod["metadata"]["generation"] = 5

    def generation() -> int:
        return int(api.get(path)["metadata"]["generation"])

    assert api.create("/api/v1/namespaces/default/pods", pod)["metadata"]["generation"] == 1
    merge = "application/merge-patch+json"
    assert api.call("PATCH", path, {"metadata": {"labels": {"a": "b"}}}, merge)[0] == 200
    assert api.call("PATCH", path, {"metadata": {"generation": 9}}, merge)[0] == 200
    assert generation() == 1
    assert api.call("PATCH", path, {"spec": {"activeDeadlineSeconds": 100}}, merge)[0] == 200
    assert generation() == 2
    cur = api.get(path)
    assert api.call("PUT", path, {**cur, "metadata": {**cur["metadata"], "generation": 7}})[0] == 200
    assert generation() == 2, "an unchanged spec, whatever generation the client sends"
    status = {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "observedGeneration": 2}]}}
    code, out = api.call("PATCH", path + "/status", status, merge)
    assert code == 200 and out["status"]["conditions"][0]["observedGeneration"] == 2
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "gen"}, "target": {"name": "node-0"}}
    assert api.call("POST", path + "/binding", binding)[0] == 201
    bound = api.get(path)
    assert bound["metadata"]["generation"] == 2
    # The binding's PodScheduled=True replaces the condition whole: no observedGeneration (as kube-apiserver).
    assert bound["status"]["conditions"] == [
        {
            "type": "PodScheduled",
            "status": "True",
            "lastTransitionTime": bound["status"]["conditions"][0]["lastTransitionTime"],
        }
    ]


def test_watch_events_selectors_bookmarks_and_gone(api: Api) -> None:
    rv = api.get("/api/v1/namespaces/default/pods")["metadata"]["resourceVersion"]
    api.create("/api/v1/namespaces/default/pods", make_pod("w1"))
    api.call(
        "PATCH",
        "/api/v1/namespaces/default/pods/w1/status",
        {"status": {"phase": "Succeeded"}},
        "application/merge-patch+json",
    )
    events = watch(api, "/api/v1/pods", resourceVersion=rv, allowWatchBookmarks="true")
    mine = [
        (e["type"], e["object"]["status"]["phase"])
        for e in events
        if e["type"] != "BOOKMARK" and e["object"]["metadata"]["name"] == "w1"
    ]
    assert mine == [("ADDED", "Pending"), ("MODIFIED", "Succeeded")]
    assert events[-1]["type"] == "BOOKMARK" and int(events[-1]["object"]["metadata"]["resourceVersion"]) >= int(rv)
    # The scheduler's pod informer leaves terminal pods out: leaving the selection is a DELETED event.
    sel = "status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"
    events = watch(api, "/api/v1/pods", resourceVersion=rv, fieldSelector=sel)
    assert [e["type"] for e in events if e["object"]["metadata"]["name"] == "w1"] == ["ADDED", "DELETED"]
    listed = api.get(f"/api/v1/pods?fieldSelector={sel}")
    assert "w1" not in {p["metadata"]["name"] for p in listed["items"]}
    # Compaction: watching from an old resourceVersion is 410 Gone, delivered as an ERROR event.
    api.call("POST", "/kubesched/compact")
    events = watch(api, "/api/v1/pods", resourceVersion=rv)
    assert events[0]["type"] == "ERROR"
    st = events[0]["object"]
    assert (
        st["code"] == 410 and st["reason"] == "Expired" and st["message"].startswith(f"too old resource version: {rv}")
    )


def test_leases_and_events_are_stored(api: Api) -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l1"},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15},
    }
    created = api.create("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", lease)
    created["spec"]["holderIdentity"] = "you"
    code, updated = api.call("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l1", created)
    assert code == 200 and updated["spec"]["holderIdentity"] == "you"
    code, _ = api.call("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l1", created)
    assert code == 409, "an update from a stale resourceVersion loses"
    ev = {
        "metadata": {"name": "x.1", "namespace": "default"},
        "eventTime": "2025-01-01T00:00:00.000001Z",
        "reason": "Scheduled",
        "note": "hello",
        "type": "Normal",
        "action": "Binding",
        "reportingController": "kubesched",
        "reportingInstance": "kubesched-h",
        "regarding": {"kind": "Pod", "name": "x", "namespace": "default"},
    }
    api.create("/apis/events.k8s.io/v1/namespaces/default/events", ev)
    code, _ = api.call(
        "PATCH",
        "/apis/events.k8s.io/v1/namespaces/default/events/x.1",
        {"series": {"count": 2, "lastObservedTime": "2025-01-01T00:00:01.000000Z"}},
        "application/strategic-merge-patch+json",
    )
    assert code == 200
    core = api.get("/api/v1/namespaces/default/events")["items"]
    mine = next(e for e in core if e["metadata"]["name"] == "x.1")
    assert mine["message"] == "hello" and mine["count"] == 2 and mine["involvedObject"]["name"] == "x"
