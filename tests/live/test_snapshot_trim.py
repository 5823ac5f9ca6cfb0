"""`kubesched snapshot` without a server: trimming, what is left out, pagination, and errors (a fake API)."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from kubesched.errors import InputError
from kubesched.live.snapshot import snapshot
from kubesched.scenario import parse_scenario

NOISE = {
    "uid": "0b7c",
    "resourceVersion": "812",
    "generation": 3,
    "creationTimestamp": "2025-03-01T10:00:00Z",
    "managedFields": [{"manager": "kubelet", "operation": "Update"}],
    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}", "team": "infra"},
}

NODE = {
    "metadata": {"name": "n1", "labels": {"zone": "a"}, **NOISE},
    "spec": {"podCIDR": "10.0.0.0/24", "providerID": "aws://x", "taints": [{"key": "k", "effect": "NoSchedule"}]},
    "status": {
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "allocatable": {"cpu": "3900m", "memory": "7Gi", "pods": "110"},
        "conditions": [
            {"type": "Ready", "status": "True", "lastHeartbeatTime": "2025-03-01T10:00:00Z", "reason": "KubeletReady"}
        ],
        "addresses": [{"type": "InternalIP", "address": "10.1.1.1"}],
        "images": [{"names": ["nginx:1.27"], "sizeBytes": 1000}],
        "nodeInfo": {"kubeletVersion": "v1.34.1"},
    },
}


RS_SPEC = {
    "replicas": 3,
    "selector": {"matchLabels": {"app": "web"}},
    "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
}


def _pod(name: str, node: str = "", phase: str = "Running", **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]}
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"name": name, "namespace": "default", **NOISE, **meta},
        "spec": spec,
        "status": {
            "phase": phase,
            "podIP": "10.2.0.1",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2025-03-01T10:00:00Z"}],
            "containerStatuses": [{"name": "c", "ready": True}],
            "startTime": "2025-03-01T10:00:01Z",
        },
    }


class FakeApi:
    """Lists from a dict by collection path, two items a page; unknown paths answer 404 (None)."""

    def __init__(self, lists: Mapping[str, list[dict[str, Any]]]) -> None:
        self.lists = lists
        self.calls: list[str] = []

    def __call__(self, path: str) -> Mapping[str, Any] | None:
        self.calls.append(path)
        base, _, query = path.partition("?")
        items = self.lists.get(base)
        if items is None:
            return None
        start = int(urllib.parse.parse_qs(query).get("continue", ["0"])[0])
        page = items[start : start + 2]
        meta = {"continue": str(start + 2)} if start + 2 < len(items) else {}
        return {"items": page, "metadata": meta}


def _api(**extra: list[dict[str, Any]]) -> FakeApi:
    lists = {
        "/api/v1/namespaces": [{"metadata": {"name": "default", **NOISE}, "status": {"phase": "Active"}}],
        "/apis/scheduling.k8s.io/v1/priorityclasses": [],
        "/apis/storage.k8s.io/v1/storageclasses": [],
        "/api/v1/persistentvolumes": [],
        "/api/v1/nodes": [NODE],
        "/api/v1/persistentvolumeclaims": [],
        "/api/v1/services": [],
        "/api/v1/replicationcontrollers": [],
        "/apis/apps/v1/replicasets": [
            {
                "metadata": {"name": "web-7d", "namespace": "default", **NOISE},
                "spec": RS_SPEC,
                "status": {"replicas": 3},
            }
        ],
        "/apis/apps/v1/statefulsets": [],
        "/apis/policy/v1/poddisruptionbudgets": [],
        "/api/v1/pods": [
            _pod("pending-b", creationTimestamp="2025-03-01T10:00:00Z"),
            _pod("running", "n1"),
            _pod("finished", "n1", phase="Succeeded"),
            _pod("pending-a"),
            _pod("leaving", deletionTimestamp="2025-03-01T10:05:00Z"),
        ],
    }
    lists.update({k.replace("__", "/"): v for k, v in extra.items()})
    return FakeApi(lists)


def _snap(api: FakeApi) -> tuple[list[dict[str, Any]], list[str]]:
    warnings: list[str] = []
    docs = snapshot(api, "https://cluster:6443", warnings.append)
    return docs, warnings


def test_trimmed_objects_and_what_is_left_out() -> None:
    api = _api()
    docs, warnings = _snap(api)
    assert warnings == []
    text = yaml.safe_dump_all(docs)
    for noise in ("managedFields", "resourceVersion", "uid", "generation", "creationTimestamp", "last-applied"):
        assert noise not in text
    kinds = [(d["kind"], d["metadata"]["name"]) for d in docs[1:]]
    # Finished pods and pending pods being deleted are left out; bound pods first, then the server's order.
    assert kinds == [
        ("Namespace", "default"),
        ("Node", "n1"),
        ("ReplicaSet", "web-7d"),
        ("Pod", "running"),
        ("Pod", "pending-b"),
        ("Pod", "pending-a"),
    ]
    node = docs[2]
    assert node == {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"zone": "a"}, "annotations": {"team": "infra"}},
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "3900m", "memory": "7Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "images": [{"names": ["nginx:1.27"], "sizeBytes": 1000}],
        },
    }
    assert docs[3]["spec"] == RS_SPEC  # whole: loading validates the template as the API server did
    running = docs[4]
    assert running["apiVersion"] == "v1" and running["spec"]["nodeName"] == "n1"
    assert running["status"] == {
        "phase": "Running",
        "conditions": [{"type": "PodScheduled", "status": "True"}],
        "startTime": "2025-03-01T10:00:01Z",
    }
    # Optional kinds the server does not serve (404) are skipped; the pod list was read in pages of two.
    assert "/apis/storage.k8s.io/v1/csinodes?limit=500" in api.calls
    assert [c for c in api.calls if c.startswith("/api/v1/pods")] == [
        "/api/v1/pods?limit=500",
        "/api/v1/pods?limit=500&continue=2",
        "/api/v1/pods?limit=500&continue=4",
    ]
    # The result is a scenario simulate accepts.
    sc = parse_scenario(yaml.safe_dump_all(docs, sort_keys=False), "snap.yaml")
    names = [m.obj.metadata.name for m in sc.pending_pods()]
    # None of the ReplicaSet's 3 pods is in the cluster (none names it as owner, none matches its
    # selector): its controller creates them, right after it.
    assert sc.mode == "batch" and names[3:] == ["pending-b", "pending-a"]
    assert all(n.startswith("web-7d-") for n in names[:3])


def test_pod_uid_kept_when_a_claim_names_it() -> None:
    claim = {
        "metadata": {"name": "gpu-claim", "namespace": "default", **NOISE},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": {"reservedFor": [{"resource": "pods", "name": "running", "uid": "pod-uid-1"}]},
    }
    api = _api(**{"__apis__resource.k8s.io__v1__resourceclaims": [claim]})
    pods = api.lists["/api/v1/pods"]
    pods[1]["metadata"] = {**pods[1]["metadata"], "uid": "pod-uid-1"}
    docs, warnings = _snap(api)
    assert warnings == []
    by_name = {d["metadata"]["name"]: d for d in docs[1:]}
    assert by_name["running"]["metadata"]["uid"] == "pod-uid-1"
    assert "uid" not in by_name["pending-a"]["metadata"]
    assert by_name["gpu-claim"]["status"]["reservedFor"][0]["uid"] == "pod-uid-1"


def test_object_the_decoder_rejects_is_left_out_with_a_warning() -> None:
    api = _api()
    bad = _pod("bad", "n1")
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    api.lists["/api/v1/pods"].append(bad)
    docs, warnings = _snap(api)
    assert "bad" not in [d["metadata"]["name"] for d in docs[1:]]
    (w,) = warnings
    assert w.startswith("warning: https://cluster:6443: Pod default/bad: spec.containers[0].resources.requests[cpu]:")
    assert w.endswith(": left out of the snapshot")


def test_required_kind_not_served() -> None:
    api = _api()
    del api.lists["/api/v1/nodes"]
    with pytest.raises(InputError) as err:
        _snap(api)
    assert str(err.value) == "https://cluster:6443: the API server does not serve /api/v1/nodes"
