"""Property: however pods, claims and devices are drawn, no device is ever allocated to two claims.

Pods go through PreFilter, Filter, Reserve and (sometimes later, to keep
allocations in flight) PreBind. At every step the devices of allocated and
in-flight claims are pairwise distinct, each allocation lies on the node its
pod went to, and an ExactCount request gets exactly its count.
"""

from __future__ import annotations

from typing import Any

import msgspec
from dra_helpers import DRIVER, claim, claim_pod, device_class, gpu, plugin_for, request, resource_slice, schedule
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.framework.types import PodInfo
from kubesched.plugins.dynamicresources.manager import EXTRA_KEY
from kubesched.testing import Env, make_node

MODELS = ("a100", "t4")


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    nodes = draw(st.lists(st.lists(st.sampled_from(MODELS), max_size=4), min_size=1, max_size=4))
    n_claims = draw(st.integers(1, 6))
    claims = []
    for _ in range(n_claims):
        mode = draw(st.sampled_from(["ExactCount", "ExactCount", "All"]))
        count = draw(st.integers(1, 3))
        model = draw(st.sampled_from([None, *MODELS]))
        admin = draw(st.sampled_from([None, None, None, True]))
        claims.append((mode, count, model, admin))
    pods = draw(st.lists(st.tuples(st.integers(0, n_claims - 1), st.booleans()), min_size=1, max_size=8))
    return {"nodes": nodes, "claims": claims, "pods": pods}


def _build(spec: dict[str, Any]) -> Env:
    objs: list[tuple[str, Any]] = []
    objs.append(device_class("gpu", f'device.driver == "{DRIVER}"'))
    for i, models in enumerate(spec["nodes"]):
        if models:
            objs.append(resource_slice(f"n{i}-gpu", [gpu(f"g{j}", m) for j, m in enumerate(models)], node=f"n{i}"))
    for k, (mode, count, model, admin) in enumerate(spec["claims"]):
        sels = [f'device.attributes["{DRIVER}"].model == "{model}"'] if model else []
        objs.append(claim(f"c{k}", request("r", mode=mode, count=count, selectors=sels, admin=admin)))
    return Env([make_node(f"n{i}", cpu="64") for i in range(len(spec["nodes"]))], objects=objs)


def _check(env: Env, bound_to: dict[str, str]) -> None:
    owners: dict[tuple[str, str, str], str] = {}
    claims = [(c.metadata.name, c) for c in env.store.list("ResourceClaim")]
    claims += [(f"in-flight {c.metadata.name}", c) for c in env.handle.extra[EXTRA_KEY].in_flight.values()]
    for name, c in claims:
        alloc = c.status.allocation
        if alloc is None:
            continue
        base = name.removeprefix("in-flight ")
        req = c.spec.devices.requests[0].exactly
        if req.mode == "ExactCount":
            assert len(alloc.devices.results) == req.amount, (name, alloc)
        nodes = {v for t in alloc.node_selector.node_selector_terms for f in t.match_fields for v in f.values}
        assert len(nodes) == 1
        if base in bound_to:
            assert nodes == {bound_to[base]}
        for r in alloc.devices.results:
            assert r.pool == next(iter(nodes))
            if r.admin_access:
                continue
            dev = (r.driver, r.pool, r.device)
            holder = owners.setdefault(dev, base)
            assert holder == base, f"{dev} allocated to {holder} and {base}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_no_device_is_ever_allocated_to_two_claims(spec: dict[str, Any]) -> None:
    env = _build(spec)
    pl = plugin_for(env)
    bound_to: dict[str, str] = {}
    deferred: list[tuple[Any, Any, str, str]] = []
    for i, (k, defer) in enumerate(spec["pods"]):
        pod = claim_pod(f"p{i}", f"c{k}")
        out = schedule(env, pl, pod, bind=not defer)
        if out.node is not None:
            bound_to.setdefault(f"c{k}", out.node)
            if defer:
                deferred.append((out.state, pod, out.node, f"c{k}"))
        _check(env, bound_to)
        if deferred and i % 2 == 1:
            state, p, node, _ = deferred.pop(0)
            assert pl.pre_bind(state, PodInfo(p), node) is None
            _check(env, bound_to)
    for state, p, node, _ in deferred:
        assert pl.pre_bind(state, PodInfo(p), node) is None
        _check(env, bound_to)
    assert not env.handle.extra[EXTRA_KEY].in_flight


def test_the_property_check_catches_a_double_allocation() -> None:
    """The checker itself must fail when two claims hold one device."""
    spec = {"nodes": [["a100"]], "claims": [("ExactCount", 1, None, None)] * 2, "pods": [(0, False)]}
    env = _build(spec)
    schedule(env, plugin_for(env), claim_pod("p0", "c0"))
    c0, c1 = env.store.get("ResourceClaim", "default/c0"), env.store.get("ResourceClaim", "default/c1")
    env.client.update("ResourceClaim", msgspec.structs.replace(c1, status=c0.status))
    try:
        _check(env, {})
    except AssertionError as err:
        assert "allocated to" in str(err)
    else:
        raise AssertionError("double allocation not detected")
