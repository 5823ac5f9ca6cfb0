"""Decoding manifests (errors name the field) and the embedded API server's defaulting / admission."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.decode import DecodeError, decode
from kubesched.api.meta import ObjectMeta
from kubesched.api.scheduling import PriorityClass
from kubesched.cluster import admission
from kubesched.cluster.admission import AdmissionError, admit_priority, default_node, default_pod
from kubesched.cluster.client import EmbeddedClient
from kubesched.cluster.store import ClusterStore

FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


# ---------------------------------------------------------------- decode


@pytest.mark.parametrize(
    ("kind", "raw", "field"),
    [
        (
            "Pod",
            {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1x"}}}]}},
            "spec.containers[0].resources.requests[cpu]",
        ),
        (
            "Pod",
            {"spec": {"initContainers": [{"name": "a"}, {"name": "b", "resources": {"limits": {"memory": "abc"}}}]}},
            "spec.initContainers[1].resources.limits[memory]",
        ),
        ("Pod", {"spec": {"overhead": {"cpu": "bad"}}}, "spec.overhead[cpu]"),
        ("Pod", {"spec": {"resources": {"requests": {"memory": "1Q"}}}}, "spec.resources.requests[memory]"),
        ("Node", {"status": {"capacity": {"cpu": "four"}}}, "status.capacity[cpu]"),
        ("Node", {"status": {"allocatable": {"pods": "1Kx"}}}, "status.allocatable[pods]"),
        ("PersistentVolume", {"spec": {"capacity": {"storage": "ten"}}}, "spec.capacity[storage]"),
        (
            "PersistentVolumeClaim",
            {"spec": {"resources": {"requests": {"storage": "x"}}}},
            "spec.resources.requests[storage]",
        ),
    ],
)
def test_bad_quantity_is_rejected_with_its_path(kind: str, raw: dict[str, Any], field: str) -> None:
    with pytest.raises(DecodeError) as err:
        decode(kind, raw)
    assert err.value.field == field
    assert err.value.message.endswith(FORMAT_ERROR)


def test_unknown_suffix_is_rejected_with_upstreams_suffix_error() -> None:
    # A well-formed number with an unknown suffix fails in suffix interpretation, not in the scanner.
    with pytest.raises(DecodeError) as err:
        decode("Node", {"status": {"allocatable": {"pods": "1K"}}})
    assert err.value.field == "status.allocatable[pods]"
    assert err.value.message.endswith("unable to parse quantity's suffix")


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"spec": {"containers": "not-a-list"}}, "spec.containers"),
        ({"spec": {"priority": "high"}}, "spec.priority"),
        (
            {"spec": {"containers": [{"name": "c", "resources": {"requests": "x"}}]}},
            "spec.containers[0].resources.requests",
        ),
        (
            {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}, "limits": 3}}]}},
            "spec.containers[0].resources.limits",
        ),
        ({"spec": {"tolerations": [{"key": "k", "tolerationSeconds": "x"}]}}, "spec.tolerations[0].tolerationSeconds"),
    ],
)
def test_type_errors_name_the_field(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(DecodeError) as err:
        decode("Pod", raw)
    assert err.value.field == field
    assert err.value.message


def test_container_port_host_ip_field() -> None:
    pod = decode(
        "Pod",
        {
            "spec": {
                "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80, "hostIP": "10.0.0.1"}]}]
            }
        },
    )
    assert pod.spec.containers[0].ports[0].host_ip == "10.0.0.1"


def test_unknown_kind() -> None:
    with pytest.raises(DecodeError) as err:
        decode("Gadget", {})
    assert err.value.field == "kind"


def test_good_quantities_and_unknown_fields_decode() -> None:
    pod = decode(
        "Pod",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {
                "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": 1, "memory": "1Gi"}}}],
                "whatever": True,
            },
        },
    )
    assert pod.metadata.name == "p"
    assert pod.spec.containers[0].resources.requests == {"cpu": 1, "memory": "1Gi"}


# ---------------------------------------------------------------- defaulting


def _pod(spec: dict[str, Any], meta: dict[str, Any] | None = None):
    return decode("Pod", {"metadata": meta or {"name": "p", "namespace": "default"}, "spec": spec})


def test_requests_default_from_limits_only_where_missing() -> None:
    pod = default_pod(
        _pod(
            {
                "containers": [
                    {"name": "a", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "1"}}},
                    {"name": "b", "resources": {"limits": {"nvidia.com/gpu": 1}}},
                ],
                "initContainers": [{"name": "i", "resources": {"limits": {"memory": "2Gi"}}}],
            }
        )
    )
    assert pod.spec.containers[0].resources.requests == {"cpu": "1", "memory": "1Gi"}
    assert pod.spec.containers[1].resources.requests == {"nvidia.com/gpu": 1}
    assert pod.spec.init_containers[0].resources.requests == {"memory": "2Gi"}


def test_pod_level_requests_default_from_pod_level_limits() -> None:
    pod = default_pod(_pod({"containers": [{"name": "a"}], "resources": {"limits": {"cpu": "2"}}}))
    assert pod.spec.resources is not None
    assert pod.spec.resources.requests == {"cpu": "2"}


def test_host_network_defaults_host_ports_from_container_ports() -> None:
    pod = default_pod(
        _pod(
            {
                "hostNetwork": True,
                "containers": [
                    {"name": "a", "ports": [{"containerPort": 8080}, {"containerPort": 9090, "hostPort": 9191}]}
                ],
                "initContainers": [{"name": "i", "ports": [{"containerPort": 7070, "protocol": "UDP"}]}],
            }
        )
    )
    ports = [(p.container_port, p.host_port, p.protocol) for p in pod.spec.containers[0].ports]
    assert ports == [(8080, 8080, "TCP"), (9090, 9191, "TCP")]
    init_ports = [(p.container_port, p.host_port, p.protocol) for p in pod.spec.init_containers[0].ports]
    assert init_ports == [(7070, 7070, "UDP")]


def test_no_host_port_without_host_network() -> None:
    pod = default_pod(_pod({"containers": [{"name": "a", "ports": [{"containerPort": 8080}]}]}))
    assert pod.spec.containers[0].ports[0].host_port == 0


def test_pod_defaults_scheduler_namespace_phase_and_gated_condition() -> None:
    pod = default_pod(
        decode(
            "Pod",
            {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}], "schedulingGates": [{"name": "g"}]}},
        )
    )
    assert pod.spec.scheduler_name == "default-scheduler"
    assert pod.metadata.namespace == "default"
    assert pod.status.phase == "Pending"
    cond = pod.status.conditions[-1]
    assert (cond.type, cond.status, cond.reason, cond.message) == (
        "PodScheduled",
        "False",
        "SchedulingGated",
        "Scheduling is blocked due to non-empty scheduling gates",
    )
    bound = default_pod(decode("Pod", {"metadata": {"name": "q"}, "spec": {"nodeName": "n1"}}))
    assert bound.status.phase == "Running"


def test_node_allocatable_defaults_to_capacity() -> None:
    node = default_node(decode("Node", {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4", "pods": "10"}}}))
    assert node.status.allocatable == {"cpu": "4", "pods": "10"}
    kept = default_node(
        decode("Node", {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "3"}}})
    )
    assert kept.status.allocatable == {"cpu": "3"}


def test_namespace_gets_its_name_label() -> None:
    ns = admission.default_namespace(decode("Namespace", {"metadata": {"name": "team", "labels": {"a": "b"}}}))
    assert ns.metadata.labels == {"a": "b", "kubernetes.io/metadata.name": "team"}


# ---------------------------------------------------------------- priority admission


def _pc(name: str, value: int, global_default: bool = False, policy: str | None = None) -> PriorityClass:
    return PriorityClass(
        metadata=ObjectMeta(name=name), value=value, global_default=global_default, preemption_policy=policy
    )


def _classes(*pcs: PriorityClass) -> dict[str, PriorityClass]:
    return {pc.metadata.name: pc for pc in pcs}


def test_priority_from_class() -> None:
    pod = admit_priority(_pod({"priorityClassName": "high"}), _classes(_pc("high", 1000, policy="Never")))
    assert (pod.spec.priority, pod.spec.preemption_policy, pod.spec.priority_class_name) == (1000, "Never", "high")


def test_class_without_policy_defaults_to_preempt_lower_priority() -> None:
    pod = admit_priority(_pod({"priorityClassName": "high"}), _classes(_pc("high", 7)))
    assert (pod.spec.priority, pod.spec.preemption_policy) == (7, "PreemptLowerPriority")


def test_global_default_class_applies_to_pods_without_a_class() -> None:
    classes = _classes(_pc("low", 10), _pc("default", 100, global_default=True, policy="Never"))
    pod = admit_priority(_pod({}), classes)
    assert (pod.spec.priority, pod.spec.priority_class_name, pod.spec.preemption_policy) == (100, "default", "Never")


def test_no_class_and_no_global_default_gives_zero() -> None:
    pod = admit_priority(_pod({}), _classes(_pc("low", 10)))
    assert (pod.spec.priority, pod.spec.priority_class_name, pod.spec.preemption_policy) == (
        0,
        "",
        "PreemptLowerPriority",
    )


@pytest.mark.parametrize(
    ("name", "value"), [("system-node-critical", 2000001000), ("system-cluster-critical", 2000000000)]
)
def test_system_classes_exist_without_being_created(name: str, value: int) -> None:
    pod = admit_priority(_pod({"priorityClassName": name}), {})
    assert (pod.spec.priority, pod.spec.preemption_policy) == (value, "PreemptLowerPriority")


def test_unknown_class_is_forbidden_with_upstreams_text() -> None:
    with pytest.raises(AdmissionError) as err:
        admit_priority(_pod({"priorityClassName": "nope"}, {"name": "web-1", "namespace": "default"}), {})
    assert str(err.value) == 'pods "web-1" is forbidden: no PriorityClass with name nope was found'


def test_embedded_client_applies_defaulting_and_priority_admission() -> None:
    client = EmbeddedClient(ClusterStore())
    client.create("PriorityClass", _pc("dflt", 5, global_default=True))
    stored = client.create(
        "Pod",
        decode(
            "Pod",
            {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "1"}}}]}},
        ),
    )
    assert stored.metadata.namespace == "default"
    assert stored.spec.priority == 5
    assert stored.spec.containers[0].resources.requests == {"cpu": "1"}
