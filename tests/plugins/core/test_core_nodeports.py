"""NodePorts (framework/plugins/nodeports): cases from node_ports_test.go."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from kubesched.api.core import ContainerPort, Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import QueueingHint
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.nodeports import NodePorts
from kubesched.testing import Env, make_node, make_pod

REASON = "node(s) didn't have free ports for the requested pod ports"


def _pod(name: str, *ports: str, node: str = "") -> Pod:
    """newPod: ports as "PROTOCOL/hostIP/hostPort"; ContainerPort structs built directly."""
    pod = make_pod(name, node=node)
    cps = []
    for spec in ports:
        proto, ip, port = spec.split("/")
        cps.append(ContainerPort(container_port=int(port), host_port=int(port), host_ip=ip, protocol=proto))
    c = msgspec.structs.replace(pod.spec.containers[0], ports=cps)
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, containers=[c]))


@pytest.mark.parametrize(
    ("pod", "existing", "want"),
    [
        (("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/9090",), None),
        (("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/8080",), Status(Code.UNSCHEDULABLE, REASON)),
        (("TCP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), Status(Code.UNSCHEDULABLE, REASON)),
        (("TCP/127.0.0.1/8080",), ("TCP/127.0.0.2/8080",), None),
        (("UDP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), None),
        (("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"), ("UDP/127.0.0.1/8080",), Status(Code.UNSCHEDULABLE, REASON)),
        (
            ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
            ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"),
            Status(Code.UNSCHEDULABLE, REASON),
        ),
        (("TCP/0.0.0.0/8001",), ("TCP/127.0.0.1/8001",), Status(Code.UNSCHEDULABLE, REASON)),
        (("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"), ("TCP/127.0.0.1/8001",), Status(Code.UNSCHEDULABLE, REASON)),
        (("TCP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",), Status(Code.UNSCHEDULABLE, REASON)),
        (("UDP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",), None),
        (("UDP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"), Status(Code.UNSCHEDULABLE, REASON)),
        (("TCP//8001",), ("TCP/10.1.1.1/8001",), Status(Code.UNSCHEDULABLE, REASON)),  # empty ip is 0.0.0.0
    ],
)
def test_filter(pod: tuple[str, ...], existing: tuple[str, ...], want: Status | None) -> None:
    env = Env([make_node("n1"), make_node("n2")], [_pod("m0", *existing, node="n1")])
    pi = PodInfo(_pod("m1", *pod))
    pl = NodePorts()
    state = CycleState()
    res, status = pl.pre_filter(state, pi, env.snapshot.nodes)
    assert (res, status) == (None, None)
    assert pl.filter(state, pi, env.node("n1")) == want
    assert pl.filter(state, pi, env.node("n2")) is None
    v = pl.filter_all(state, pi, env.snapshot)
    if want is None:
        assert v is None
    else:
        i1 = env.node("n1").index
        assert v.failed.tolist() == [i == i1 for i in range(2)]
        assert v.status(i1) == want


def test_pre_filter_skips_pods_without_host_ports() -> None:
    pod = PodInfo(make_pod("p", ports=[{"containerPort": 80}]))
    res, status = NodePorts().pre_filter(CycleState(), pod, [])
    assert res is None and status.code == Code.SKIP


def test_host_network_pod_gets_its_container_ports_as_host_ports() -> None:
    env = Env([make_node("n1")], [make_pod("old", node="n1", ports=[{"containerPort": 80, "hostPort": 80}])])
    pod = PodInfo(make_pod("new", spec={"hostNetwork": True}, ports=[{"containerPort": 80}]))
    assert pod.host_ports == [("", "TCP", 80)]
    state = CycleState()
    NodePorts().pre_filter(state, pod, env.snapshot.nodes)
    assert NodePorts().filter(state, pod, env.node("n1")) == Status(Code.UNSCHEDULABLE, REASON)


def test_restartable_init_container_ports_are_used() -> None:
    sidecar = {"name": "s", "image": "i", "restartPolicy": "Always", "ports": [{"containerPort": 9, "hostPort": 9000}]}
    existing = make_pod("old", node="n1", spec={"initContainers": [sidecar]})
    env = Env([make_node("n1")], [existing])
    pod = PodInfo(make_pod("new", ports=[{"containerPort": 9, "hostPort": 9000}]))
    state = CycleState()
    NodePorts().pre_filter(state, pod, env.snapshot.nodes)
    assert NodePorts().filter(state, pod, env.node("n1")) == Status(Code.UNSCHEDULABLE, REASON)


def test_regular_init_container_ports_are_ignored() -> None:
    init = {"name": "i", "image": "i", "ports": [{"containerPort": 9, "hostPort": 9000}]}
    env = Env([make_node("n1")], [make_pod("old", node="n1", spec={"initContainers": [init]})])
    pod = PodInfo(make_pod("new", ports=[{"containerPort": 9, "hostPort": 9000}]))
    state = CycleState()
    NodePorts().pre_filter(state, pod, env.snapshot.nodes)
    assert NodePorts().filter(state, pod, env.node("n1")) is None
    init_only = PodInfo(make_pod("new2", spec={"initContainers": [init]}))
    _, status = NodePorts().pre_filter(CycleState(), init_only, [])
    assert status is not None and status.code == Code.SKIP


def test_vector_path_only_checks_nodes_with_ports() -> None:
    env = Env(
        [make_node(f"n{i}") for i in range(4)],
        [
            _pod("a", "TCP/0.0.0.0/80", node="n1"),
            _pod("b", "TCP/10.0.0.1/80", node="n3"),
            _pod("c", "UDP//80", node="n2"),
        ],
    )
    pi = PodInfo(_pod("p", "TCP/10.0.0.2/80"))
    state = CycleState()
    NodePorts().pre_filter(state, pi, env.snapshot.nodes)
    v = NodePorts().filter_all(state, pi, env.snapshot)
    assert [env.snapshot.nodes[i].name for i in np.flatnonzero(v.failed)] == ["n1"]


def test_pod_deleted_hint() -> None:
    (delete_ev, _) = NodePorts().events_to_register()
    hint = delete_ev.hint
    pod = _pod("p", "TCP/0.0.0.0/80")
    assert hint(pod, _pod("gone", "TCP/127.0.0.1/80", node="n1"), None) == QueueingHint.QUEUE
    assert hint(pod, _pod("gone", "TCP/127.0.0.1/81", node="n1"), None) == QueueingHint.QUEUE_SKIP
    assert hint(pod, _pod("gone", "TCP/127.0.0.1/80"), None) == QueueingHint.QUEUE_SKIP  # was never bound
    assert hint(pod, _pod("gone", node="n1"), None) == QueueingHint.QUEUE_SKIP
