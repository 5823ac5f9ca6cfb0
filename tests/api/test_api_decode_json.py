"""Decoding the API server's JSON straight into structs gives what decoding the parsed mapping gives."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.decode import DecodeError, decode, decode_json, decode_json_list

# As kube-apiserver returns a pod: defaults filled in, managedFields, status.
POD: dict[str, Any] = {
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {
        "name": "web-1",
        "namespace": "default",
        "uid": "7b1c",
        "resourceVersion": "4711",
        "generation": 1,
        "creationTimestamp": "2026-11-24T21:00:00Z",
        "labels": {"app": "web"},
        "managedFields": [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}],
    },
    "spec": {
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "1Gi"}},
                "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}],
            }
        ],
        "overhead": {"cpu": "10m"},
        "schedulerName": "bench",
        "priority": 0,
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}],
        "enableServiceLinks": True,
    },
    "status": {"phase": "Pending", "qosClass": "Burstable"},
}
NODE: dict[str, Any] = {
    "kind": "Node",
    "apiVersion": "v1",
    "metadata": {"name": "node-1", "resourceVersion": "12", "labels": {"kubernetes.io/hostname": "node-1"}},
    "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
    "status": {
        "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
        "allocatable": {"cpu": "31500m", "memory": "250Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}


@pytest.mark.parametrize(("kind", "raw"), [("Pod", POD), ("Node", NODE)])
def test_straight_from_json_equals_decoding_the_mapping(kind: str, raw: dict[str, Any]) -> None:
    assert decode_json(kind, msgspec.json.encode(raw)) == decode(kind, raw)


def test_nulls_are_zero_values_as_in_decode() -> None:
    raw = {**POD, "spec": {**POD["spec"], "nodeSelector": None, "affinity": None}}
    pod = decode_json("Pod", msgspec.json.encode(raw))
    assert pod == decode("Pod", raw)
    assert pod.spec.node_selector == {}


def test_a_bad_quantity_is_named_by_its_field() -> None:
    containers = [{"name": "c", "resources": {"requests": {"cpu": "1x"}}}]
    raw = {**POD, "spec": {**POD["spec"], "containers": containers}}
    with pytest.raises(DecodeError) as err:
        decode_json("Pod", msgspec.json.encode(raw))
    assert err.value.field == "spec.containers[0].resources.requests[cpu]"


def test_a_list_decodes_whole_or_not_at_all() -> None:
    good = {"kind": "NodeList", "metadata": {"resourceVersion": "99", "continue": "tok"}, "items": [NODE, NODE]}
    page = decode_json_list("Node", msgspec.json.encode(good))
    assert page is not None
    assert (page.resource_version, page.continue_token, len(page.items)) == ("99", "tok", 2)
    assert page.items[0] == decode("Node", NODE)
    bad_node = {**NODE, "status": {**NODE["status"], "capacity": {"cpu": "lots"}}}
    assert decode_json_list("Node", msgspec.json.encode({**good, "items": [NODE, bad_node]})) is None
    assert decode_json_list("Node", msgspec.json.encode({**good, "items": [NODE, {"metadata": []}]})) is None
