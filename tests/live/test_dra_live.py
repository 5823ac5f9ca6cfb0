"""Live mode writes DRA allocations the way kube-scheduler does, in a form a kubelet accepts.

PreBind (bindClaim upstream) adds the finalizer with an Update of the claim, then
writes `status.allocation` and the pod's `status.reservedFor` entry with
UpdateStatus: in the REST API, the `resourceclaims/NAME/status` subresource of
resource.k8s.io/v1. The kubelet then only starts the pod if the claim is
allocated and reserved for the pod's UID (pkg/kubelet/cm/dra/manager.go), and
asks each driver to prepare the devices of its `allocation.devices.results`.

First the requests LiveClient builds (against a recording fake), then the whole
path against `kubesched serve`, whose main resource ignores `status` as the API
server does, so that a status written to the wrong URL would be lost.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Coroutine
from typing import Any

import msgspec
import yaml
from tests.live.conftest import Cluster, bound_nodes, make_pod, nodes_yaml, sched_config, wait_ready, wait_until

from kubesched.api.decode import decode
from kubesched.api.resource import FINALIZER
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.types import PodInfo
from kubesched.live.client import LiveClient
from kubesched.live.mirror import MirrorStore
from kubesched.live.rest import MERGE_PATCH
from kubesched.plugins.dynamicresources.plugin import DynamicResources
from kubesched.serve.patch import merge_patch
from kubesched.testing import Env, make_node
from kubesched.testing import make_pod as make_typed_pod

DRIVER = "gpu.example.com"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
# resource.k8s.io/v1 DeviceRequestAllocationResult (types.go), JSON names.
RESULT_FIELDS = {
    "request",
    "driver",
    "pool",
    "device",
    "adminAccess",
    "tolerations",
    "bindingConditions",
    "bindingFailureConditions",
    "shareID",
    "consumedCapacity",
}


def _class() -> dict[str, Any]:
    sel = [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DRIVER},
        "spec": {"selectors": sel},
    }


def _slice(node: str, n: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}}} for i in range(n)],
        },
    }


def _claim(name: str, count: int = 1) -> dict[str, Any]:
    req = {"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": count}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [req]}},
    }


# ---------------------------------------------------------------- the requests LiveClient sends


class FakeApi:
    """resourceclaims as an API server keeps them: GET, and merge PATCH of the object or of its status.

    A PATCH of the object leaves `status` alone and one of `/status` only changes `status` (the status
    subresource's strategy); a resourceVersion precondition that does not match is a 409.
    """

    def __init__(self, *claims: dict[str, Any]) -> None:
        self.objs = {c["metadata"]["name"]: copy.deepcopy(c) for c in claims}
        self.requests: list[tuple[str, str, str | None, Any]] = []

    async def call(self, method: str, path: str, *, body: Any = None, content_type: str | None = None, **_: Any) -> Any:
        self.requests.append((method, path, content_type, copy.deepcopy(body)))
        rest = path.removeprefix(CLAIMS + "/").split("/")
        cur = self.objs[rest[0]]
        if method == "GET":
            return copy.deepcopy(cur)
        assert method == "PATCH" and content_type == MERGE_PATCH
        want = (body.get("metadata") or {}).get("resourceVersion")
        assert want in (None, cur["metadata"]["resourceVersion"]), "409 Conflict"
        patched = merge_patch(cur, body)
        if rest[1:] == ["status"]:
            new = {**cur, "status": patched.get("status", {})}
        else:
            new = {**patched, "status": cur.get("status", {})}
        new["metadata"]["resourceVersion"] = str(int(cur["metadata"]["resourceVersion"]) + 1)
        self.objs[rest[0]] = new
        return copy.deepcopy(new)


class SyncIo:
    """IoLoop.call without a thread: the coroutine runs to its end."""

    def call(self, coro: Coroutine[Any, Any, Any], timeout: float | None = None) -> Any:
        return asyncio.run(coro)


def _reserve_then_prebind(env: Env, pod: Any, api: FakeApi) -> tuple[str, Any]:
    """One cycle of the plugin on the embedded objects; PreBind's writes go to `api` through LiveClient."""
    pl = DynamicResources.new(None, env.handle)
    pi = PodInfo(pod)
    state = CycleState()
    _, st = pl.pre_filter(state, pi, env.snapshot.nodes)
    assert st is None, st
    feasible = [ni.name for ni in env.snapshot.nodes if pl.filter(state, pi, ni) is None]
    node = feasible[0]
    assert pl.reserve(state, pi, node) is None
    env.handle.client = LiveClient(api, SyncIo(), MirrorStore(), None)  # type: ignore[arg-type]
    return node, pl.pre_bind(state, pi, node)


def _env(claim: dict[str, Any], gpus: int) -> tuple[Env, dict[str, Any]]:
    """A node n1 with `gpus` GPUs and the claim; the claim as the API server holds it (same uid, resourceVersion)."""
    objects = [
        ("DeviceClass", decode("DeviceClass", _class())),
        ("ResourceSlice", decode("ResourceSlice", _slice("n1", gpus))),
    ]
    objects.append(("ResourceClaim", decode("ResourceClaim", claim)))
    env = Env([make_node("n1", cpu="8")], objects=objects)
    stored = env.store.find("ResourceClaim", f"default/{claim['metadata']['name']}")
    return env, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", **msgspec.to_builtins(stored)}


def _pod(name: str, claim: str) -> Any:
    pod = make_typed_pod(name, "1", spec={"resourceClaims": [{"name": "gpu", "resourceClaimName": claim}]})
    return msgspec.structs.replace(pod, metadata=msgspec.structs.replace(pod.metadata, uid=f"{name}-uid"))


def test_prebind_adds_the_finalizer_then_writes_allocation_and_reservation_to_the_status_subresource() -> None:
    env, raw = _env(_claim("gpu", count=2), gpus=3)
    rv = raw["metadata"]["resourceVersion"]
    api = FakeApi(raw)
    node, st = _reserve_then_prebind(env, _pod("trainer", "gpu"), api)
    assert node == "n1" and st is None
    allocation = {
        "devices": {
            "results": [
                {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"},
                {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-1"},
            ]
        },
        "nodeSelector": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]
        },
    }
    assert api.requests == [
        ("GET", f"{CLAIMS}/gpu", None, None),
        ("PATCH", f"{CLAIMS}/gpu", MERGE_PATCH, {"metadata": {"finalizers": [FINALIZER], "resourceVersion": rv}}),
        (
            "PATCH",
            f"{CLAIMS}/gpu/status",
            MERGE_PATCH,
            {
                "status": {
                    "allocation": allocation,
                    "reservedFor": [{"resource": "pods", "name": "trainer", "uid": "trainer-uid"}],
                },
                "metadata": {"resourceVersion": str(int(rv) + 1)},
            },
        ),
    ]
    final = api.objs["gpu"]
    assert final["metadata"]["finalizers"] == [FINALIZER]
    assert final["status"]["allocation"] == allocation
    # What the kubelet checks before it prepares the devices: allocated, and reserved for this pod's UID.
    assert [r["uid"] for r in final["status"]["reservedFor"]] == ["trainer-uid"]
    assert all(set(r) <= RESULT_FIELDS for r in final["status"]["allocation"]["devices"]["results"])
    # The JSON round-trips through the v1 structs unchanged: no field is misspelt or dropped.
    assert msgspec.to_builtins(decode("ResourceClaim", final)) == {
        k: v for k, v in final.items() if k not in ("apiVersion", "kind")
    }


def test_prebind_of_a_claim_allocated_earlier_only_appends_the_reservation() -> None:
    allocation = {
        "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]},
        "nodeSelector": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]
        },
    }
    first = {"resource": "pods", "name": "first", "uid": "first-uid"}
    team = _claim("team")
    team["metadata"]["finalizers"] = [FINALIZER]
    team["status"] = {"allocation": allocation, "reservedFor": [first]}
    env, raw = _env(team, gpus=1)
    api = FakeApi(raw)
    node, st = _reserve_then_prebind(env, _pod("second", "team"), api)
    assert node == "n1" and st is None
    second = {"resource": "pods", "name": "second", "uid": "second-uid"}
    assert api.requests == [
        ("GET", f"{CLAIMS}/team", None, None),
        (
            "PATCH",
            f"{CLAIMS}/team/status",
            MERGE_PATCH,
            {
                "status": {"reservedFor": [first, second]},
                "metadata": {"resourceVersion": raw["metadata"]["resourceVersion"]},
            },
        ),
    ]
    assert api.objs["team"]["status"]["allocation"] == allocation


# ---------------------------------------------------------------- against `kubesched serve`


def _embedded_message(scenario: str, *pods: dict[str, Any]) -> str:
    """The last pod's FailedScheduling message in a simulation of the same cluster (sequential)."""
    from kubesched.simulate.runner import Simulation
    from kubesched.simulate.scenario import parse_scenario

    head = {
        "kind": "Scenario",
        "config": {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "kubesched"}],
        },
    }
    text = "---\n".join([yaml.safe_dump(head), scenario, *(yaml.safe_dump(p) for p in pods)])
    return str(Simulation(parse_scenario(text, "test")).run().results[-1].message)


def _claim_pod(name: str, claim: str) -> dict[str, Any]:
    pod = make_pod(name)
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return pod


def test_run_allocates_claims_through_serve(cluster: Cluster) -> None:
    scenario = nodes_yaml(2) + "---\n" + yaml.safe_dump_all([_class(), _slice("node-1", 2)])
    scenario += "---\n" + yaml.safe_dump_all([_claim("team"), _claim("three", count=3)])
    api = cluster.start_serve(scenario)
    # serve keeps a status written to the object itself out, as the API server does.
    wrong = {"status": {"reservedFor": [{"resource": "pods", "name": "x", "uid": "x"}]}}
    assert api.call("PATCH", f"{CLAIMS}/team", wrong, MERGE_PATCH)[0] == 200
    assert not api.get(f"{CLAIMS}/team").get("status")
    run = cluster.start_run(sched_config())
    wait_ready(run)
    api.create("/api/v1/namespaces/default/pods", _claim_pod("p1", "team"))
    wait_until(lambda: bound_nodes(api).get("p1"), what="p1 bound")
    api.create("/api/v1/namespaces/default/pods", _claim_pod("p2", "team"))
    wait_until(lambda: bound_nodes(api).get("p2"), what="p2 bound")
    assert bound_nodes(api) == {"p1": "node-1", "p2": "node-1"}, "the only node with GPUs; p2 follows the claim"
    claim = api.get(f"{CLAIMS}/team")
    pods = api.pods()
    assert claim["metadata"]["finalizers"] == [FINALIZER]
    assert claim["status"]["allocation"] == {
        "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "node-1", "device": "gpu-0"}]},
        "nodeSelector": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]
        },
    }
    assert claim["status"]["reservedFor"] == [
        {"resource": "pods", "name": n, "uid": pods[n]["metadata"]["uid"]} for n in ("p1", "p2")
    ]
    # Three GPUs on a node of two (one held by "team"): FailedScheduling with simulate's words.
    api.create("/api/v1/namespaces/default/pods", _claim_pod("p3", "three"))

    def condition() -> dict[str, Any] | None:
        pod = api.pod("p3")
        return next((c for c in pod["status"].get("conditions", []) if c["type"] == "PodScheduled"), None)

    cond = wait_until(condition, what="p3's PodScheduled condition")
    assert cond["reason"] == "Unschedulable"
    assert cond["message"] == _embedded_message(
        scenario, _claim_pod("p1", "team"), _claim_pod("p2", "team"), _claim_pod("p3", "three")
    )
    assert cond["message"].startswith("0/2 nodes are available: 2 cannot allocate all claims.")
    assert "allocation" not in (api.get(f"{CLAIMS}/three").get("status") or {})
    assert run.stop() == 0
