"""The DynamicResources plugin's extension points, with upstream's codes and messages."""

from __future__ import annotations

import msgspec
from dra_helpers import (
    DRIVER,
    allocated_status,
    claim,
    claim_pod,
    device_class,
    devices_of,
    get_claim,
    gpu_env,
    plugin_for,
    request,
    schedule,
)

from kubesched.api.resource import FINALIZER, ResourceClaimTemplate
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, QueueingHint, Resource
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.dynamicresources.manager import EXTRA_KEY, DRAManager
from kubesched.simulate.claims import claims_report
from kubesched.testing import make_pod
from kubesched.workloads.resourceclaim import claims_for_pod, generate_name

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_pod_without_claims_is_skipped_and_postfilter_has_nothing_to_deallocate() -> None:
    env = gpu_env({"n1": 1})
    pl = plugin_for(env)
    pi = PodInfo(make_pod("plain", "1"))
    assert pl.pre_enqueue(pi) is None
    state = CycleState()
    _, st = pl.pre_filter(state, pi, env.snapshot.nodes)
    assert st == Status(Code.SKIP)
    _, st = pl.post_filter(state, pi, {})
    assert st == Status(Code.UNSCHEDULABLE, "no new claims to deallocate")


def test_postfilter_without_prefilter_state_fails_with_not_found() -> None:
    pl = plugin_for(gpu_env({"n1": 1}))
    _, st = pl.post_filter(CycleState(), PodInfo(make_pod("p")), {})
    assert st is not None and st.code == Code.ERROR and st.message() == "not found"


def test_missing_claim_holds_the_pod_at_preenqueue() -> None:
    env = gpu_env({"n1": 1})
    out = schedule(env, plugin_for(env), claim_pod("p", "nope"))
    assert out.pre_enqueue == Status(UNRESOLVABLE, 'resourceclaim.resource.k8s.io "nope" not found')
    assert out.node is None


def test_template_claim_not_created_yet_and_claim_of_another_pod() -> None:
    env = gpu_env({"n1": 1}, claim("stolen", meta={"ownerReferences": [{"uid": "someone", "controller": True}]}))
    pl = plugin_for(env)
    pod = claim_pod("p", templates={"gpu": "tmpl"})
    assert pl.pre_enqueue(PodInfo(pod)) == Status(UNRESOLVABLE, 'pod "default/p": ResourceClaim not created yet')
    status = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "stolen"}]}
    pod = msgspec.structs.replace(pod, status=msgspec.convert(status, type(pod.status)))
    st = pl.pre_enqueue(PodInfo(pod))
    assert st == Status(
        UNRESOLVABLE, "ResourceClaim default/stolen was not created for pod default/p (pod is not owner)"
    )


def test_template_claim_with_no_generated_claim_is_ignored() -> None:
    env = gpu_env({"n1": 1})
    pod = claim_pod("p", templates={"gpu": "tmpl"})
    status = {"resourceClaimStatuses": [{"name": "gpu"}]}
    pod = msgspec.structs.replace(pod, status=msgspec.convert(status, type(pod.status)))
    out = schedule(env, plugin_for(env), pod)
    assert out.pre_filter == Status(Code.SKIP)


def test_missing_device_class_is_unresolvable_at_prefilter() -> None:
    env = gpu_env({"n1": 1}, claim("c", request("gpu", cls="tpu")))
    out = schedule(env, plugin_for(env), claim_pod("p", "c"))
    assert out.pre_filter == Status(UNRESOLVABLE, "request gpu: device class tpu does not exist")
    assert out.post_filter == Status(Code.UNSCHEDULABLE, "no new claims to deallocate")


def test_claim_with_an_empty_request_is_unresolvable() -> None:
    env = gpu_env({"n1": 1}, claim("c", {"name": "odd"}))
    out = schedule(env, plugin_for(env), claim_pod("p", "c"))
    assert out.pre_filter == Status(UNRESOLVABLE, "resource claim default/c, request odd: unknown request type")


def test_filter_allocates_per_node_and_exhaustion_says_cannot_allocate_all_claims() -> None:
    env = gpu_env({"n1": 1, "n2": 0}, claim("a"), claim("b"))
    pl = plugin_for(env)
    out = schedule(env, pl, claim_pod("p1", "a"))
    assert out.filters == {"n1": None, "n2": Status(UNRESOLVABLE, "cannot allocate all claims")}
    assert out.node == "n1"
    assert devices_of(env, "a") == ["n1/gpu-0"]
    out = schedule(env, pl, claim_pod("p2", "b"))
    assert out.filters == {
        "n1": Status(UNRESOLVABLE, "cannot allocate all claims"),
        "n2": Status(UNRESOLVABLE, "cannot allocate all claims"),
    }
    assert out.post_filter == Status(Code.UNSCHEDULABLE, "still not schedulable")


def test_prebind_writes_allocation_reservation_and_finalizer() -> None:
    env = gpu_env({"n1": 2}, claim("c", request(count=2)))
    out = schedule(env, plugin_for(env), claim_pod("p", "c"))
    assert out.node == "n1"
    c = get_claim(env, "c")
    assert FINALIZER in c.metadata.finalizers
    assert [(r.request, r.device) for r in c.status.allocation.devices.results] == [("gpu", "gpu-0"), ("gpu", "gpu-1")]
    assert [(r.resource, r.name, r.uid) for r in c.status.reserved_for] == [("pods", "p", "uid-default-p")]
    assert claims_report([c]) == {
        "default/c": {
            "node": "n1",
            "devices": [f"{DRIVER}/n1/gpu-0", f"{DRIVER}/n1/gpu-1"],
            "requests": ["gpu", "gpu"],
            "reservedFor": ["default/p"],
        }
    }


def test_shared_claim_pins_the_second_pod_to_the_allocation() -> None:
    env = gpu_env({"n1": 1, "n2": 1}, claim("shared"))
    pl = plugin_for(env)
    assert schedule(env, pl, claim_pod("a", "shared"), prefer="n2").node == "n2"
    out = schedule(env, pl, claim_pod("b", "shared"))
    assert out.filters == {"n1": Status(UNRESOLVABLE, "resourceclaim not available on the node"), "n2": None}
    assert out.node == "n2"
    assert [r.name for r in get_claim(env, "shared").status.reserved_for] == ["a", "b"]
    assert devices_of(env, "shared") == ["n2/gpu-0"]


def test_preallocated_claim_and_unavailable_postfilter_deallocates_an_unused_claim() -> None:
    env = gpu_env({"n1": 1, "n2": 1}, claim("pinned", status=allocated_status("n1", ("gpu", "gpu-0"))))
    pl = plugin_for(env)
    pod = claim_pod("p", "pinned")
    pi = PodInfo(pod)
    state = CycleState()
    pl.pre_filter(state, pi, env.snapshot.nodes)
    n2 = env.node("n2")
    assert pl.filter(state, pi, n2) == Status(UNRESOLVABLE, "resourceclaim not available on the node")
    _, st = pl.post_filter(state, pi, {})
    assert st == Status(Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed")
    assert get_claim(env, "pinned").status.allocation is None


def test_postfilter_keeps_a_claim_reserved_by_another_pod() -> None:
    status = allocated_status("n1", ("gpu", "gpu-0"))
    status["reservedFor"] = [{"resource": "pods", "name": "other", "uid": "uid-other"}]
    env = gpu_env({"n1": 1, "n2": 1}, claim("busy", status=status))
    pl = plugin_for(env)
    pi = PodInfo(claim_pod("p", "busy"))
    state = CycleState()
    pl.pre_filter(state, pi, env.snapshot.nodes)
    pl.filter(state, pi, env.node("n2"))
    _, st = pl.post_filter(state, pi, {})
    assert st == Status(Code.UNSCHEDULABLE, "still not schedulable")
    assert get_claim(env, "busy").status.allocation is not None


def test_claim_reserved_to_the_limit_is_in_use() -> None:
    status = allocated_status("n1", ("gpu", "gpu-0"))
    status["reservedFor"] = [{"resource": "pods", "name": f"o{i}", "uid": f"u{i}"} for i in range(256)]
    env = gpu_env({"n1": 1}, claim("full", status=status))
    out = schedule(env, plugin_for(env), claim_pod("p", "full"))
    assert out.pre_filter == Status(UNRESOLVABLE, "resourceclaim in use")


def test_reserve_puts_devices_in_flight_and_unreserve_releases_them() -> None:
    env = gpu_env({"n1": 1}, claim("a"), claim("b"))
    pl = plugin_for(env)
    first = schedule(env, pl, claim_pod("p1", "a"), bind=False)
    assert first.node == "n1"
    manager = env.handle.extra[EXTRA_KEY]
    assert isinstance(manager, DRAManager)
    assert manager.claim_has_pending_allocation(get_claim(env, "a").metadata.uid)
    # Another pod cannot take the in-flight device...
    second = schedule(env, pl, claim_pod("p2", "b"), bind=False)
    assert second.filters == {"n1": Status(UNRESOLVABLE, "cannot allocate all claims")}
    # ...nor the in-flight claim itself.
    third = schedule(env, pl, claim_pod("p3", "a"), bind=False)
    assert third.pre_filter == Status(UNRESOLVABLE, "resource claim default/a is in the process of being allocated")
    pl.unreserve(first.state, PodInfo(claim_pod("p1", "a")), "n1")
    assert not manager.in_flight
    assert schedule(env, pl, claim_pod("p2", "b")).node == "n1"


def test_unreserve_after_prebind_removes_the_reservation() -> None:
    env = gpu_env({"n1": 1}, claim("a"))
    pl = plugin_for(env)
    pod = claim_pod("p1", "a")
    out = schedule(env, pl, pod)
    assert [r.name for r in get_claim(env, "a").status.reserved_for] == ["p1"]
    pl.unreserve(out.state, PodInfo(pod), "n1")
    assert get_claim(env, "a").status.reserved_for == []


def test_prebind_refuses_a_claim_allocated_meanwhile() -> None:
    env = gpu_env({"n1": 2}, claim("a"))
    pl = plugin_for(env)
    pod = claim_pod("p1", "a")
    pi = PodInfo(pod)
    out = schedule(env, pl, pod, bind=False)
    c = get_claim(env, "a")
    status = msgspec.convert(allocated_status("n1", ("gpu", "gpu-1")), type(c.status))
    env.client.update("ResourceClaim", msgspec.structs.replace(c, status=status))
    st = pl.pre_bind(out.state, pi, "n1")
    assert st is not None and st.code == Code.ERROR
    assert st.message() == "claim default/a got allocated elsewhere in the meantime"
    assert not env.handle.extra[EXTRA_KEY].in_flight


def test_cel_runtime_error_is_a_filter_error() -> None:
    env = gpu_env({"n1": 1}, claim("c", request(selectors=['device.attributes["gpu.example.com"].nothing == 1'])))
    out = schedule(env, plugin_for(env), claim_pod("p", "c"))
    assert out.error is not None and out.error.code == Code.ERROR
    assert out.error.message() == (
        "claim default/c: selector #0 on device gpu.example.com/n1/gpu-0: CEL runtime error: no such key: nothing"
    )


def test_events_and_queueing_hints() -> None:
    env = gpu_env({"n1": 1}, claim("mine"), claim("other"))
    pl = plugin_for(env)
    events = {(e.event.resource, e.event.action): e.hint for e in pl.events_to_register()}
    node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
    assert set(events) == {
        (Resource.NODE, node_actions),
        (Resource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE),
        (Resource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
        (Resource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
        (Resource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE),
    }
    hint = events[(Resource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE)]
    assert hint is not None
    pod = claim_pod("p", "mine")
    mine, other = get_claim(env, "mine"), get_claim(env, "other")
    allocated = msgspec.structs.replace(
        other, status=msgspec.convert(allocated_status("n1", ("gpu", "gpu-0")), type(other.status))
    )
    assert hint(pod, None, mine) == QueueingHint.QUEUE  # the claim appeared
    assert hint(pod, None, other) == QueueingHint.QUEUE_SKIP  # not the pod's
    assert hint(pod, allocated, other) == QueueingHint.QUEUE  # some claim got deallocated
    with_finalizer = msgspec.structs.replace(mine, metadata=msgspec.structs.replace(mine.metadata, finalizers=["x"]))
    assert hint(pod, mine, with_finalizer) == QueueingHint.QUEUE_SKIP  # status unchanged
    assert hint(claim_pod("q", "missing"), None, mine) == QueueingHint.QUEUE_SKIP
    pod_hint = events[(Resource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)]
    assert pod_hint is not None
    assert pod_hint(pod, pod, pod) == QueueingHint.QUEUE
    assert pod_hint(pod, None, claim_pod("q", "mine")) == QueueingHint.QUEUE_SKIP


def test_controller_emulation_makes_owned_claims_from_templates() -> None:
    env = gpu_env({"n1": 1})
    raw = {
        "metadata": {"name": "one", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [request()]}}},
    }
    template = msgspec.convert(raw, ResourceClaimTemplate)
    pod = claim_pod("web", templates={"gpu": "one", "absent": "nope"})
    pod, claims = claims_for_pod(pod, lambda ns, name: template if name == "one" else None)
    assert [c.metadata.name for c in claims] == ["web-gpu-xxxxx"]
    assert [(s.name, s.resource_claim_name) for s in pod.status.resource_claim_statuses] == [("gpu", "web-gpu-xxxxx")]
    assert claims[0].metadata.annotations == {"resource.kubernetes.io/pod-claim-name": "gpu"}
    for c in claims:
        env.client.create("ResourceClaim", c)
    env.client.create("DeviceClass", device_class("other", "true")[1])
    pl = plugin_for(env)
    # "absent" names a template that does not exist: no claim, no status entry -> still held back.
    assert pl.pre_enqueue(PodInfo(pod)) == Status(UNRESOLVABLE, 'pod "default/web": ResourceClaim not created yet')
    only = msgspec.structs.replace(
        pod, spec=msgspec.structs.replace(pod.spec, resource_claims=pod.spec.resource_claims[:1])
    )
    assert schedule(env, pl, only).node == "n1"
    assert devices_of(env, "web-gpu-xxxxx") == ["n1/gpu-0"]
    long = generate_name("p" * 40, "c" * 30)
    assert len(long) <= 57 and long.startswith("p") and "-c" in long
