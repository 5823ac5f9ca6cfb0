"""The structured allocator, rule by rule, on one node."""

from __future__ import annotations

from typing import Any

import pytest
from dra_helpers import DRIVER, claim, device_class, first_available, gpu, node_slice, request, resource_slice

from kubesched.plugins.dynamicresources.allocator import (
    AllocationError,
    AllocationTimeout,
    Allocator,
    DeviceClassLister,
    Features,
)
from kubesched.plugins.dynamicresources.pools import SliceIndex, gather_pools
from kubesched.testing import make_node

GPU_CLASS = device_class("gpu", f'device.driver == "{DRIVER}"')[1]


def _allocator(slices: list[Any], classes: list[Any] | None = None, allocated: set[Any] | None = None) -> Allocator:
    by_name = {c.metadata.name: c for c in (classes or [GPU_CLASS])}
    stamped = []
    for i, s in enumerate(slices):
        meta = s.metadata.__class__(name=s.metadata.name, uid=f"uid-{s.metadata.name}", resource_version=str(i + 1))
        stamped.append(s.__class__(metadata=meta, spec=s.spec))
    return Allocator(Features(), allocated or set(), DeviceClassLister(by_name.get), SliceIndex(stamped))


def _picks(result: Any) -> list[tuple[str, str]]:
    return [(r.request, r.device) for r in result.devices.results]


NODE = make_node("n1", labels={"zone": "a"})


def test_exact_count_takes_the_first_free_devices_in_order() -> None:
    a = _allocator([node_slice("n1", 4)[1]], allocated={(DRIVER, "n1", "gpu-0")})
    [res] = a.allocate(NODE, [claim("c", request("gpus", count=2))[1]])
    assert _picks(res) == [("gpus", "gpu-1"), ("gpus", "gpu-2")]
    assert res.node_selector.node_selector_terms[0].match_fields[0].values == ["n1"]


def test_exact_count_fails_when_not_enough_devices_are_free() -> None:
    a = _allocator([node_slice("n1", 2)[1]], allocated={(DRIVER, "n1", "gpu-1")})
    assert a.allocate(NODE, [claim("c", request("gpus", count=2))[1]]) is None


def test_two_claims_of_one_pod_never_share_a_device() -> None:
    a = _allocator([node_slice("n1", 2)[1]])
    r1, r2 = a.allocate(NODE, [claim("a")[1], claim("b")[1]])
    assert _picks(r1) == [("gpu", "gpu-0")]
    assert _picks(r2) == [("gpu", "gpu-1")]
    assert a.allocate(NODE, [claim("a")[1], claim("b")[1], claim("c")[1]]) is None


def test_all_mode_takes_every_matching_device() -> None:
    s = resource_slice("s", [gpu("g0", "t4"), gpu("g1", "a100"), gpu("g2", "t4")], node="n1")[1]
    req = request("all", mode="All", count=None, selectors=[f'device.attributes["{DRIVER}"].model == "t4"'])
    [res] = _allocator([s]).allocate(NODE, [claim("c", req)[1]])
    assert _picks(res) == [("all", "g0"), ("all", "g2")]


def test_all_mode_fails_when_one_matching_device_is_taken_or_none_matches() -> None:
    s = resource_slice("s", [gpu("g0", "t4"), gpu("g1", "t4")], node="n1")[1]
    req = request("all", mode="All", count=None)
    assert _allocator([s], allocated={(DRIVER, "n1", "g1")}).allocate(NODE, [claim("c", req)[1]]) is None
    none = request("all", mode="All", count=None, selectors=['device.attributes["gpu.example.com"].model == "x"'])
    assert _allocator([s]).allocate(NODE, [claim("c", none)[1]]) is None


def test_class_selectors_and_request_selectors_both_apply() -> None:
    big = device_class(
        "big",
        f'device.driver == "{DRIVER}"',
        'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0',
    )[1]
    s = resource_slice("s", [gpu("g0", "t4", 16), gpu("g1", "a100", 80), gpu("g2", "a100", 40)], node="n1")[1]
    a = _allocator([s], [GPU_CLASS, big])
    [res] = a.allocate(NODE, [claim("c", request(cls="big"))[1]])
    assert _picks(res) == [("gpu", "g1")]
    req = request(cls="big", selectors=[f'device.attributes["{DRIVER}"].memoryGi < 80'])
    [res] = a.allocate(NODE, [claim("c", req)[1]])
    assert _picks(res) == [("gpu", "g2")]


def test_match_attribute_backtracks_to_devices_sharing_the_value() -> None:
    s = resource_slice("s", [gpu("g0", numa=0), gpu("g1", numa=1), gpu("g2", numa=2), gpu("g3", numa=1)], node="n1")[1]
    c = claim("c", request("gpus", count=2), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])[1]
    [res] = _allocator([s]).allocate(NODE, [c])
    assert _picks(res) == [("gpus", "g1"), ("gpus", "g3")]


def test_match_attribute_across_requests_and_missing_attribute() -> None:
    s = resource_slice("s", [gpu("g0", numa=0), gpu("g1", numa=1), gpu("g2"), gpu("g3", numa=1)], node="n1")[1]
    c = claim(
        "c",
        request("a", selectors=['device.attributes["gpu.example.com"].numa == 1']),
        request("b"),
        constraints=[{"requests": ["a", "b"], "matchAttribute": f"{DRIVER}/numa"}],
    )[1]
    [res] = _allocator([s]).allocate(NODE, [c])
    assert _picks(res) == [("a", "g1"), ("b", "g3")]
    lonely = claim("c", request("x", count=2), constraints=[{"matchAttribute": "other.example.com/numa"}])[1]
    assert _allocator([s]).allocate(NODE, [lonely]) is None


def test_constraint_only_binds_the_named_requests() -> None:
    s = resource_slice("s", [gpu("g0", numa=0), gpu("g1", numa=1), gpu("g2", numa=1)], node="n1")[1]
    c = claim("c", request("a"), request("b"), constraints=[{"requests": ["b"], "matchAttribute": f"{DRIVER}/numa"}])
    [res] = _allocator([s]).allocate(NODE, [c[1]])
    assert _picks(res) == [("a", "g0"), ("b", "g1")]


def test_first_available_prefers_the_first_subrequest_that_fits() -> None:
    s = resource_slice("s", [gpu("g0", "a100"), gpu("g1", "a100"), gpu("g2", "h100")], node="n1")[1]
    fa = first_available(
        "gpu",
        ("h100", "gpu", 1, ['device.attributes["gpu.example.com"].model == "h100"']),
        ("two-a100", "gpu", 2, ['device.attributes["gpu.example.com"].model == "a100"']),
    )
    [res] = _allocator([s]).allocate(NODE, [claim("c", fa)[1]])
    assert _picks(res) == [("gpu/h100", "g2")]
    [res] = _allocator([s], allocated={(DRIVER, "n1", "g2")}).allocate(NODE, [claim("c", fa)[1]])
    assert _picks(res) == [("gpu/two-a100", "g0"), ("gpu/two-a100", "g1")]
    assert (
        _allocator([s], allocated={(DRIVER, "n1", "g2"), (DRIVER, "n1", "g0")}).allocate(NODE, [claim("c", fa)[1]])
        is None
    )


def test_admin_access_may_use_allocated_devices_but_not_twice_in_one_claim() -> None:
    s = node_slice("n1", 2)[1]
    taken = {(DRIVER, "n1", "gpu-0"), (DRIVER, "n1", "gpu-1")}
    [res] = _allocator([s], allocated=taken).allocate(NODE, [claim("c", request(admin=True))[1]])
    assert _picks(res) == [("gpu", "gpu-0")]
    assert res.devices.results[0].admin_access is True
    c = claim("c", request("a", admin=True), request("b", admin=True), request("c", admin=True))[1]
    assert _allocator([s]).allocate(NODE, [c]) is None


def test_pools_of_other_nodes_and_node_selector_slices() -> None:
    local = node_slice("n2", 2)[1]
    zonal = resource_slice(
        "zonal",
        [gpu("z0")],
        pool="zone-a",
        node_selector={
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
        },
    )[1]
    [res] = _allocator([local, zonal]).allocate(NODE, [claim("c")[1]])
    assert [(r.pool, r.device) for r in res.devices.results] == [("zone-a", "z0")]
    term = res.node_selector.node_selector_terms[0]
    assert term.match_expressions[0].key == "zone"
    assert not term.match_fields
    shared = resource_slice("shared", [gpu("s0")], pool="net", all_nodes=True)[1]
    [res] = _allocator([shared]).allocate(NODE, [claim("c")[1]])
    assert res.node_selector is None


def test_newer_generation_replaces_older_slices() -> None:
    old = resource_slice("old", [gpu("g0"), gpu("g1")], node="n1", pool="p", generation=1)[1]
    new = resource_slice("new", [gpu("g9")], node="n1", pool="p", generation=2)[1]
    [res] = _allocator([old, new]).allocate(NODE, [claim("c")[1]])
    assert _picks(res) == [("gpu", "g9")]
    assert _allocator([old, new]).allocate(NODE, [claim("c", request(count=2))[1]]) is None


def test_incomplete_pool_is_skipped_and_rejects_all_mode() -> None:
    part = resource_slice("part", [gpu("g0")], node="n1", pool="p", count=2)[1]
    pools = gather_pools(SliceIndex([part]), NODE)
    assert pools[0].incomplete
    assert _allocator([part]).allocate(NODE, [claim("c")[1]]) is None
    with pytest.raises(AllocationError, match=r"asks for all devices, but resource pool gpu\.example\.com/p is"):
        _allocator([part]).allocate(NODE, [claim("c", request(mode="All", count=None))[1]])


def test_duplicate_device_names_make_a_pool_invalid() -> None:
    a = resource_slice("a", [gpu("g0")], node="n1", pool="p", count=2)[1]
    b = resource_slice("b", [gpu("g0")], node="n1", pool="p", count=2)[1]
    with pytest.raises(AllocationError, match="invalid resource pools were encountered"):
        _allocator([a, b]).allocate(NODE, [claim("c")[1]])


@pytest.mark.parametrize(
    ("req", "error"),
    [
        (
            request(cls="missing"),
            'request gpu: could not retrieve device class missing: deviceclass.resource.k8s.io "missing" not found',
        ),
        (request(count=33), "claim default/c: number of requested devices 33 exceeds the claim limit of 32"),
        (request(selectors=["device.nothing"]), "claim default/c: selector #0: CEL compile error: compilation failed"),
        (
            request(selectors=['device.attributes["gpu.example.com"].nothing']),
            "claim default/c: selector #0 on device gpu.example.com/n1/gpu-0: CEL runtime error: no such key: nothing",
        ),
    ],
)
def test_invalid_input_is_an_error(req: dict[str, Any], error: str) -> None:
    with pytest.raises(AllocationError) as err:
        _allocator([node_slice("n1", 1)[1]]).allocate(NODE, [claim("c", req)[1]])
    assert error in str(err.value)


def test_broken_class_selector_names_the_class() -> None:
    bad = device_class("bad", "device.driver")[1]
    with pytest.raises(AllocationError, match=r"^class bad: selector #0: CEL compile error: must evaluate to bool"):
        _allocator([node_slice("n1", 1)[1]], [bad]).allocate(NODE, [claim("c", request(cls="bad"))[1]])


def test_all_mode_with_a_violated_constraint_is_an_error() -> None:
    s = resource_slice("s", [gpu("g0", numa=0), gpu("g1", numa=1)], node="n1")[1]
    c = claim("c", request("all", mode="All", count=None), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])[1]
    with pytest.raises(AllocationError, match="because a claim constraint would not be satisfied"):
        _allocator([s]).allocate(NODE, [c])


def test_class_configuration_is_copied_into_the_result() -> None:
    cfg = [{"opaque": {"driver": DRIVER, "parameters": {"mode": "mig"}}}]
    cls = device_class("cfg", f'device.driver == "{DRIVER}"', config=cfg)[1]
    [res] = _allocator([node_slice("n1", 2)[1]], [cls]).allocate(NODE, [claim("c", request(cls="cfg"))[1]])
    assert len(res.devices.config) == 1
    assert res.devices.config[0].source == "FromClass"
    assert res.devices.config[0].requests == []  # applies to every request of the claim


def test_deadline_stops_a_long_search() -> None:
    s = resource_slice("s", [gpu(f"g{i}", numa=i) for i in range(12)], node="n1")[1]
    c = claim("c", request("gpus", count=3), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])[1]
    with pytest.raises(AllocationTimeout):
        _allocator([s]).allocate(NODE, [c], deadline=0.0)
