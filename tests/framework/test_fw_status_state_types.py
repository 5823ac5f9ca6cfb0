"""Status, CycleState, NodeInfo, HostPortInfo (framework/interface.go, cycle_state.go, types.go)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.framework.cycle_state import CycleState, NotFoundError
from kubesched.framework.status import (
    Code,
    Status,
    code_name,
    code_of,
    is_rejected,
    is_success,
    message_of,
)
from kubesched.framework.types import HostPortInfo, NodeInfo, PodInfo, Resource
from kubesched.testing import make_node, make_pod

Mi, Gi = 2**20, 2**30


# ---------------------------------------------------------------- Status


@pytest.mark.parametrize(
    ("code", "name", "rejected"),
    [
        (Code.SUCCESS, "Success", False),
        (Code.ERROR, "Error", False),
        (Code.UNSCHEDULABLE, "Unschedulable", True),
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "UnschedulableAndUnresolvable", True),
        (Code.WAIT, "Wait", False),
        (Code.SKIP, "Skip", False),
        (Code.PENDING, "Pending", True),
    ],
)
def test_codes(code: Code, name: str, rejected: bool) -> None:
    s = Status(code, "r")
    assert code_name(code) == name
    assert s.is_rejected() is rejected
    assert is_rejected(s) is rejected
    assert code_of(s) == code
    assert is_success(s) is (code == Code.SUCCESS)


def test_nil_status_is_success() -> None:
    assert is_success(None)
    assert code_of(None) == Code.SUCCESS
    assert message_of(None) == ""
    assert not is_rejected(None)


def test_message_joins_reasons() -> None:
    s = Status(Code.UNSCHEDULABLE, "Insufficient cpu", "Insufficient memory")
    assert s.message() == "Insufficient cpu, Insufficient memory"
    assert message_of(s) == "Insufficient cpu, Insufficient memory"
    assert Status(Code.SKIP).message() == ""


def test_as_error_carries_the_error_text_and_plugin() -> None:
    s = Status.as_error(ValueError("boom"), "P")
    assert (s.code, s.message(), s.plugin) == (Code.ERROR, "boom", "P")
    assert isinstance(s.error, ValueError)
    assert Status.as_error("text").message() == "text"


def test_status_equality_compares_code_and_reasons() -> None:
    assert Status(Code.UNSCHEDULABLE, "a", "b") == Status(Code.UNSCHEDULABLE, "a", "b")
    assert Status(Code.UNSCHEDULABLE, "a", "b") != Status(Code.UNSCHEDULABLE, "b", "a")
    assert Status(Code.UNSCHEDULABLE, "a") != Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "a")
    assert Status(Code.UNSCHEDULABLE, "a") != Status(Code.UNSCHEDULABLE, "b")
    assert Status(Code.UNSCHEDULABLE, "a").with_plugin("Y").plugin == "Y"


# ---------------------------------------------------------------- CycleState


class _Data:
    def __init__(self, v: int) -> None:
        self.v = v
        self.cloned_from: _Data | None = None

    def clone(self) -> _Data:
        c = _Data(self.v)
        c.cloned_from = self
        return c


def test_read_missing_key_raises_not_found() -> None:
    state = CycleState()
    with pytest.raises(NotFoundError) as err:
        state.read("PreFilterNodeResourcesFit")
    assert str(err.value) == "not found"
    assert isinstance(err.value, KeyError)
    assert state.get("x") is None
    assert state.get("x", 3) == 3


def test_a_state_is_an_object_not_a_value() -> None:
    """Equal only to itself, hashable and true even when empty, as any state object (it is a dict inside)."""
    a, b = CycleState(), CycleState()
    assert a != b and a == a and bool(a) and len({a, b}) == 2


def test_write_read_delete() -> None:
    state = CycleState()
    d = _Data(1)
    state.write("k", d)
    assert state.read("k") is d
    state.delete("k")
    state.delete("k")
    assert state.get("k") is None


def test_clone_clones_the_data_and_copies_the_skip_sets() -> None:
    state = CycleState()
    d = _Data(1)
    state.write("k", d)
    state.write("plain", 42)
    state.skip_filter_plugins = frozenset({"A"})
    state.skip_score_plugins = frozenset({"B"})
    state.record_plugin_metrics = True
    c = state.clone()
    assert c.read("k") is not d and c.read("k").cloned_from is d
    assert c.read("plain") == 42
    assert (c.skip_filter_plugins, c.skip_score_plugins, c.record_plugin_metrics) == (
        frozenset({"A"}),
        frozenset({"B"}),
        True,
    )
    c.write("k", _Data(2))
    assert state.read("k") is d


# ---------------------------------------------------------------- HostPortInfo (types_test.go tables)


def _hpi(entries: list[tuple[str, str, int]]) -> HostPortInfo:
    h = HostPortInfo()
    for proto, ip, port in entries:
        h.add(ip, proto, port)
    return h


def _len(h: HostPortInfo) -> int:
    return sum(len(m) for m in h.values())


NORMAL = [
    ("TCP", "127.0.0.1", 79),
    ("UDP", "127.0.0.1", 80),
    ("TCP", "127.0.0.1", 81),
    ("TCP", "127.0.0.1", 82),
    ("TCP", "0.0.0.0", 79),
    ("UDP", "0.0.0.0", 80),
    ("TCP", "0.0.0.0", 81),
    ("TCP", "0.0.0.0", 82),
    ("TCP", "0.0.0.0", 0),
    ("TCP", "0.0.0.0", -1),
]
EMPTY_IP_PROTO = [
    ("", "127.0.0.1", 79),
    ("UDP", "127.0.0.1", 80),
    ("", "127.0.0.1", 81),
    ("", "127.0.0.1", 82),
    ("", "", 79),
    ("UDP", "", 80),
    ("", "", 81),
    ("", "", 82),
    ("", "", 0),
    ("", "", -1),
]


@pytest.mark.parametrize("entries", [NORMAL, EMPTY_IP_PROTO])
def test_host_port_add_remove(entries: list[tuple[str, str, int]]) -> None:
    h = _hpi(entries)
    assert _len(h) == 8
    for proto, ip, port in entries:
        h.remove(ip, proto, port)
    assert _len(h) == 0
    assert h == {}


@pytest.mark.parametrize(
    ("added", "check", "conflict"),
    [
        ([("TCP", "127.0.0.1", 80)], ("", "", 81), False),
        ([("TCP", "127.0.0.1", 80)], ("", "", 80), True),  # empty check means 0.0.0.0 and TCP
        ([("TCP", "127.0.0.1", 80)], ("", "", 0), False),
        ([("TCP", "127.0.0.1", 80)], ("TCP", "0.0.0.0", 80), True),  # 0.0.0.0 checks every ip
        ([("UDP", "127.0.0.1", 80)], ("TCP", "0.0.0.0", 80), False),
        ([("TCP", "127.0.0.1", 80), ("TCP", "127.0.0.1", 81), ("TCP", "127.0.0.1", 82)], ("TCP", "0.0.0.0", 80), True),
        ([("TCP", "0.0.0.0", 80)], ("TCP", "127.0.0.1", 80), True),  # every ip checks 0.0.0.0
        (
            [("TCP", "0.0.0.0", 79), ("UDP", "0.0.0.0", 80), ("TCP", "0.0.0.0", 81), ("TCP", "0.0.0.0", 82)],
            ("TCP", "127.0.0.1", 80),
            False,
        ),
        (
            [("TCP", "127.0.0.1", 79), ("UDP", "127.0.0.1", 80), ("TCP", "127.0.0.1", 81), ("TCP", "127.0.0.1", 82)],
            ("TCP", "127.0.0.1", 80),
            False,
        ),
        ([("TCP", "10.0.0.1", 80)], ("TCP", "10.0.0.2", 80), False),  # different specific ips
    ],
)
def test_host_port_check_conflict(
    added: list[tuple[str, str, int]], check: tuple[str, str, int], conflict: bool
) -> None:
    proto, ip, port = check
    assert _hpi(added).check_conflict(ip, proto, port) is conflict


# ---------------------------------------------------------------- NodeInfo


def _pod(name: str, **kw: Any) -> PodInfo:
    return PodInfo(make_pod(name, node="n1", **kw))


def test_node_info_allocatable() -> None:
    ni = NodeInfo(make_node("n1", cpu="3500m", mem="2Gi", pods="20", extra={"nvidia.com/gpu": "2", "foo": "1"}))
    a = ni.allocatable
    assert (a.milli_cpu, a.memory, a.allowed_pod_number) == (3500, 2 * Gi, 20)
    assert a.scalar == {"nvidia.com/gpu": 2}  # "foo" is no scalar resource
    assert ni.name == "n1"


def test_add_and_remove_pods_sum_requests() -> None:
    ni = NodeInfo(make_node("n1"))
    g0 = ni.generation
    a = _pod("a", cpu="500m", mem="1Gi", extra={"nvidia.com/gpu": "1"})
    b = _pod("b")  # best effort
    c = _pod("c", cpu="250m", ports=[{"containerPort": 80, "hostPort": 8080}])
    for p in (a, b, c):
        ni.add_pod(p)
    assert ni.generation > g0
    r, z = ni.requested, ni.non_zero_requested
    assert (r.milli_cpu, r.memory, r.scalar) == (750, Gi, {"nvidia.com/gpu": 1})
    assert (z.milli_cpu, z.memory) == (500 + 100 + 250, Gi + 200 * Mi + 200 * Mi)
    assert ni.used_ports.check_conflict("", "TCP", 8080)
    assert [p.name for p in ni.pods] == ["a", "b", "c"]
    g1 = ni.generation
    assert ni.remove_pod(a)
    assert ni.generation > g1
    assert [p.name for p in ni.pods] == ["c", "b"]  # swapped with the last, as removeFromSlice does
    assert (ni.requested.milli_cpu, ni.requested.memory, ni.requested.scalar) == (250, 0, {"nvidia.com/gpu": 0})
    assert (ni.non_zero_requested.milli_cpu, ni.non_zero_requested.memory) == (350, 400 * Mi)
    assert ni.remove_pod(c)
    assert not ni.used_ports.check_conflict("", "TCP", 8080)
    assert not ni.remove_pod(a)  # not there any more


def test_affinity_lists_and_pvc_ref_counts() -> None:
    ni = NodeInfo(make_node("n1"))
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone"}]}}
    aff = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
    vol = [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]
    p1 = _pod("p1", spec={"affinity": anti, "volumes": vol})
    p2 = _pod("p2", spec={"affinity": aff, "volumes": vol})
    ni.add_pod(p1)
    ni.add_pod(p2)
    assert [p.name for p in ni.pods_with_affinity] == ["p1", "p2"]
    assert [p.name for p in ni.pods_with_required_anti_affinity] == ["p1"]
    assert ni.pvc_ref_counts == {"default/data": 2}
    ni.remove_pod(p1)
    assert [p.name for p in ni.pods_with_affinity] == ["p2"]
    assert ni.pods_with_required_anti_affinity == []
    assert ni.pvc_ref_counts == {"default/data": 1}
    ni.remove_pod(p2)
    assert ni.pvc_ref_counts == {}


def test_clone_is_independent() -> None:
    ni = NodeInfo(make_node("n1"))
    ni.add_pod(_pod("a", cpu="1", ports=[{"containerPort": 1, "hostPort": 1}]))
    c = ni.clone()
    c.add_pod(_pod("b", cpu="1", ports=[{"containerPort": 2, "hostPort": 2}]))
    assert (len(ni.pods), ni.requested.milli_cpu) == (1, 1000)
    assert (len(c.pods), c.requested.milli_cpu) == (2, 2000)
    assert not ni.used_ports.check_conflict("", "TCP", 2)
    assert c.generation != ni.generation


def test_host_ports_of_pod_info() -> None:
    pi = PodInfo(
        make_pod(
            "p",
            ports=[
                {"containerPort": 80, "hostPort": 8080, "protocol": "UDP"},
                {"containerPort": 81},
            ],
        )
    )
    assert pi.host_ports == [("", "UDP", 8080)]


def test_regular_init_container_host_ports_are_not_used_ports() -> None:
    pod = make_pod(
        "p",
        spec={
            "initContainers": [
                {"name": "init", "image": "i", "ports": [{"containerPort": 1, "hostPort": 9001}]},
                {
                    "name": "side",
                    "image": "i",
                    "restartPolicy": "Always",
                    "ports": [{"containerPort": 2, "hostPort": 9002}],
                },
            ]
        },
    )
    assert PodInfo(pod).host_ports == [("", "TCP", 9002)]


def test_resource_helpers() -> None:
    r = Resource.from_amounts(
        {"cpu": 1500, "memory": 10, "pods": 3, "ephemeral-storage": 7, "example.com/x": 2, "bogus": 9}
    )
    assert (r.get("cpu"), r.get("memory"), r.get("pods"), r.get("ephemeral-storage"), r.get("example.com/x")) == (
        1500,
        10,
        3,
        7,
        2,
    )
    assert r.get("bogus") == 0
    assert not r.is_zero()
    assert Resource().is_zero()
    c = r.clone()
    c.add(r)
    assert (c.milli_cpu, r.milli_cpu) == (3000, 1500)
    c.add(r, -1)
    assert c.scalar == {"example.com/x": 2}
