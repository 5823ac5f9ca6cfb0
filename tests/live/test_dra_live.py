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
from tests.live.dra_stress import DRIVER, device_class, node_slice

from kubesched.api.decode import decode
from kubesched.api.resource import FINALIZER
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Lister
from kubesched.framework.profile_handle import new_handle
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.live.client import LiveClient
from kubesched.live.mirror import MirrorStore
from kubesched.live.rest import MERGE_PATCH
from kubesched.plugins.dynamicresources.plugin import DynamicResources
from kubesched.serve.patch import merge_patch
from kubesched.testing import Env, make_node
from kubesched.testing import make_pod as make_typed_pod

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


def _slice(node: str, n: int) -> dict[str, Any]:
    return node_slice(node, n, {"model": {"string": "a100"}})


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
        ("DeviceClass", decode("DeviceClass", device_class())),
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


# ---------------------------------------------------------------- the claim informer lags behind PreBind


class WatchedApi(FakeApi):
    """FakeApi that also keeps every version it wrote, in order: what a watch delivers, later."""

    def __init__(self, *claims: dict[str, Any]) -> None:
        super().__init__(*claims)
        self.written: list[dict[str, Any]] = []

    async def call(self, method: str, path: str, **kw: Any) -> Any:
        out = await super().call(method, path, **kw)
        if method == "PATCH":
            self.written.append(copy.deepcopy(out))
        return out


class Lagging:
    """A scheduler's view as in `kubesched run`: listers read the mirror, writes go to the API server.

    Nothing reaches the mirror unless the test delivers it (`watch`), so the order in which
    PreBind's writes and the informer's events interleave is the test's choice.
    """

    def __init__(self, gpus: int, *claims: str) -> None:
        self.mirror = MirrorStore()
        raw = [_claim(name) for name in claims]
        for i, c in enumerate(raw):
            c["metadata"].update(uid=f"{c['metadata']['name']}-uid", resourceVersion=str(10 + i))
        for kind, obj in (
            ("DeviceClass", device_class()),
            ("ResourceSlice", _slice("n1", gpus)),
            *[("ResourceClaim", c) for c in raw],
        ):
            self.mirror.apply(kind, "ADDED", decode(kind, obj))
        self.api = WatchedApi(*raw)
        self.snapshot = Env([make_node("n1", cpu="8")]).snapshot
        client = LiveClient(self.api, SyncIo(), self.mirror, None)  # type: ignore[arg-type]
        handle = new_handle("kubesched", client, snapshot=lambda: self.snapshot, lister=self._lister)
        self.plugin = DynamicResources.new(None, handle)
        self.delivered = 0

    def _lister(self, kind: str) -> Lister:
        return Lister(lambda key: self.mirror.find(kind, key), lambda: self.mirror.iter(kind))

    def cycle(self, pod: Any) -> Status | None:
        """PreFilter, Filter, Reserve and PreBind on n1; the first failing status."""
        pl, pi, state = self.plugin, PodInfo(pod), CycleState()
        _, st = pl.pre_filter(state, pi, self.snapshot.nodes)
        st = st or pl.filter(state, pi, self.snapshot.nodes[0]) or pl.reserve(state, pi, "n1")
        return st or pl.pre_bind(state, pi, "n1")

    def watch(self, n: int | None = None) -> None:
        """The informer catches up with the next `n` writes (all of them by default)."""
        end = len(self.api.written) if n is None else self.delivered + n
        for raw in self.api.written[self.delivered : end]:
            self.mirror.apply("ResourceClaim", "MODIFIED", decode("ResourceClaim", raw))
        self.delivered = end

    def devices(self) -> dict[str, list[str]]:
        """The devices of each claim, as the API server has them."""
        out = {}
        for name, c in self.api.objs.items():
            alloc = (c.get("status") or {}).get("allocation")
            out[name] = [r["device"] for r in alloc["devices"]["results"]] if alloc else []
        return out


def test_next_cycle_sees_the_devices_prebind_wrote_before_the_informer_shows_them() -> None:
    """The interleaving of the issue: PreBind of p1 wrote gpu-0, the watch has delivered only the finalizer
    update, and p2's cycle starts. The written claim stays assumed until the informer has it, so p2 gets gpu-1."""
    live = Lagging(2, "a", "b", "c")
    assert live.cycle(_pod("p1", "a")) is None
    assert [m for m, *_ in live.api.requests] == ["GET", "PATCH", "PATCH"]
    live.watch(1)  # the finalizer; `status.allocation` is still on its way
    assert live.mirror.find("ResourceClaim", "default/a").status.allocation is None
    assert live.cycle(_pod("p2", "b")) is None
    assert live.devices() == {"a": ["gpu-0"], "b": ["gpu-1"], "c": []}
    # Both informer copies arrive: the claims now count as the informer's, and the node is full.
    live.watch()
    st = live.cycle(_pod("p3", "c"))
    assert st == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims")
    # Once the informer shows a newer version, the assumed one is gone: deallocating "a" frees gpu-0.
    raw = copy.deepcopy(live.api.objs["a"])
    raw["status"] = {}
    raw["metadata"]["resourceVersion"] = "100"
    live.api.objs["a"] = raw
    live.mirror.apply("ResourceClaim", "MODIFIED", decode("ResourceClaim", raw))
    assert live.cycle(_pod("p3", "c")) is None
    assert live.devices()["c"] == ["gpu-0"]


def test_pod_sharing_a_claim_prebind_just_allocated_only_adds_its_reservation() -> None:
    """Before the informer shows p1's allocation, p2 (same claim) follows it instead of allocating the claim again,
    which PreBind would refuse with "got allocated elsewhere in the meantime"."""
    live = Lagging(2, "team")
    assert live.cycle(_pod("p1", "team")) is None
    assert live.cycle(_pod("p2", "team")) is None
    team = live.api.objs["team"]
    assert [r["name"] for r in team["status"]["reservedFor"]] == ["p1", "p2"]
    assert live.devices() == {"team": ["gpu-0"]}


# ---------------------------------------------------------------- against `kubesched serve`


def _embedded_message(scenario: str, *pods: dict[str, Any]) -> str:
    """The last pod's FailedScheduling message in a simulation of the same cluster (sequential)."""
    from kubesched.scenario import parse_scenario
    from kubesched.simulate.runner import Simulation

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
    scenario = nodes_yaml(2) + "---\n" + yaml.safe_dump_all([device_class(), _slice("node-1", 2)])
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


# ---------------------------------------------------------------- serve's resourceclaim controller


def _template(name: str = "gpu") -> dict[str, Any]:
    req = {"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": 1}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"metadata": {"labels": {"team": "ml"}}, "spec": {"devices": {"requests": [req]}}},
    }


def _template_pod(name: str, template: str = "gpu") -> dict[str, Any]:
    pod = make_pod(name)
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return pod


def test_run_schedules_pods_whose_claims_serve_makes_from_a_template(cluster: Cluster) -> None:
    scenario = nodes_yaml(2) + "---\n" + yaml.safe_dump_all([device_class(), _slice("node-1", 2), _template()])
    api = cluster.start_serve(scenario)
    run = cluster.start_run(sched_config())
    wait_ready(run)
    for name in ("p1", "p2"):
        api.create("/api/v1/namespaces/default/pods", _template_pod(name))
    wait_until(lambda: all(bound_nodes(api).get(n) for n in ("p1", "p2")), what="p1 and p2 bound")
    assert bound_nodes(api) == {"p1": "node-1", "p2": "node-1"}, "the only node with GPUs"
    pods = api.pods()
    claims = {c["metadata"]["name"]: c for c in api.get(CLAIMS)["items"]}
    devices = set()
    for name in ("p1", "p2"):
        pod = pods[name]
        # What the resourceclaim controller records, read back through the REST API (no kubectl).
        [entry] = pod["status"]["resourceClaimStatuses"]
        assert entry["name"] == "gpu" and entry["resourceClaimName"].startswith(f"{name}-gpu-")
        assert pod["spec"]["containers"][0]["image"] == "registry.k8s.io/pause:3.10", "the status write kept the rest"
        claim = claims[entry["resourceClaimName"]]
        meta = claim["metadata"]
        assert meta["generateName"] == f"{name}-gpu-" and len(meta["name"]) == len(meta["generateName"]) + 5
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": name,
                "uid": pod["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert meta["annotations"] == {"resource.kubernetes.io/pod-claim-name": "gpu"}
        assert meta["labels"] == {"team": "ml"}
        assert claim["spec"] == _template()["spec"]["spec"]
        assert meta["finalizers"] == [FINALIZER]
        [result] = claim["status"]["allocation"]["devices"]["results"]
        assert (result["driver"], result["pool"], result["request"]) == (DRIVER, "node-1", "gpu")
        devices.add(result["device"])
        assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": name, "uid": pod["metadata"]["uid"]}]
    assert devices == {"gpu-0", "gpu-1"}, "one GPU each"

    # A third pod: its claim is made, but both GPUs are taken: FailedScheduling with simulate's words.
    api.create("/api/v1/namespaces/default/pods", _template_pod("p3"))

    def condition() -> dict[str, Any] | None:
        pod = api.pod("p3")
        return next((c for c in pod["status"].get("conditions", []) if c["type"] == "PodScheduled"), None)

    cond = wait_until(condition, what="p3's PodScheduled condition")
    assert cond["reason"] == "Unschedulable"
    assert cond["message"] == _embedded_message(scenario, _template_pod("p1"), _template_pod("p2"), _template_pod("p3"))
    assert cond["message"].startswith("0/2 nodes are available: 2 cannot allocate all claims.")
    [entry] = api.pod("p3")["status"]["resourceClaimStatuses"]
    assert "allocation" not in (api.get(f"{CLAIMS}/{entry['resourceClaimName']}").get("status") or {})
    assert not bound_nodes(api)["p3"]

    # Deleting p1: the controller drops its reservation and deallocates its claim (which requeues p3), and the
    # claim, owned by p1, is deleted as the garbage collector would; p3 gets the GPU p1 had.
    p1_claim = pods["p1"]["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    p1_device = claims[p1_claim]["status"]["allocation"]["devices"]["results"][0]["device"]
    assert api.call("DELETE", "/api/v1/namespaces/default/pods/p1")[0] == 200
    assert api.call("GET", f"{CLAIMS}/{p1_claim}")[0] == 404
    wait_until(lambda: bound_nodes(api).get("p3"), what="p3 bound once p1's GPU is free")
    p3_claim = api.get(f"{CLAIMS}/{entry['resourceClaimName']}")
    assert p3_claim["status"]["allocation"]["devices"]["results"][0]["device"] == p1_device
    assert len(api.get(CLAIMS)["items"]) == 2
    assert run.stop() == 0


def _served(text: str) -> Any:
    """A served cluster loaded from `text` as `kubesched serve` loads its scenario, controllers caught up."""
    from kubesched.scenario import parse_scenario
    from kubesched.serve.cluster import ServedCluster
    from kubesched.serve.server import load_cluster

    c = ServedCluster()
    load_cluster(c, parse_scenario(text, "test"))
    c.store.deliver()
    return c


def _post(c: Any, kind: str, body: dict[str, Any]) -> None:
    """A create as the REST handler makes it: the JSON next to the typed object, then the watchers."""
    body = {k: v for k, v in copy.deepcopy(body).items() if k not in ("apiVersion", "kind")}
    body["metadata"].setdefault("namespace", "default")
    c.store.incoming[(kind, f"default/{body['metadata']['name']}")] = body
    c.client.create(kind, decode(kind, body))
    c.store.deliver()


def test_serve_makes_claims_for_scenario_pods_and_for_pods_whose_template_comes_later() -> None:
    c = _served(yaml.safe_dump_all([device_class(), _template(), _template_pod("early")]))
    [claim] = c.store.list("ResourceClaim")
    pod = c.store.get("Pod", "default/early")
    assert [(s.name, s.resource_claim_name) for s in pod.status.resource_claim_statuses] == [
        ("gpu", claim.metadata.name)
    ]
    # No template yet: the pod waits without a claim, as upstream's controller retries it.
    _post(c, "Pod", _template_pod("late", template="later"))
    assert not c.store.get("Pod", "default/late").status.resource_claim_statuses
    rv = c.store.last_rv
    _post(c, "ResourceClaimTemplate", _template("later"))
    late = c.store.get_raw("Pod", "default/late")
    [entry] = late["status"]["resourceClaimStatuses"]
    assert entry["resourceClaimName"].startswith("late-gpu-")
    assert late["spec"]["containers"][0]["image"] == "registry.k8s.io/pause:3.10"
    changes = [(ch.kind, ch.etype, (ch.new or {})["metadata"]["name"]) for ch in c.store.changes if ch.rv > rv]
    assert changes == [
        ("ResourceClaimTemplate", "ADDED", "later"),
        ("ResourceClaim", "ADDED", entry["resourceClaimName"]),
        ("Pod", "MODIFIED", "late"),
    ]


def test_serve_claims_follow_their_pod() -> None:
    c = _served(yaml.safe_dump_all([device_class(), _template(), _template_pod("a"), _template_pod("b")]))
    owned = {cl.metadata.owner_references[0].name: cl.metadata.name for cl in c.store.list("ResourceClaim")}
    assert set(owned) == {"a", "b"}
    # A status write that drops the entry: the claim the pod owns is recorded again, not made twice.
    a = c.store.get("Pod", "default/a")
    c.client.update(
        "Pod", msgspec.structs.replace(a, status=msgspec.structs.replace(a.status, resource_claim_statuses=[]))
    )
    c.store.deliver()
    assert [s.resource_claim_name for s in c.store.get("Pod", "default/a").status.resource_claim_statuses] == [
        owned["a"]
    ]
    assert c.store.count("ResourceClaim") == 2
    c.client.delete_pod("default", "a")
    c.store.deliver()
    assert [cl.metadata.name for cl in c.store.list("ResourceClaim")] == [owned["b"]]


def test_serve_releases_the_claims_of_a_deleted_pod() -> None:
    """syncClaim: a deleted pod's reservations go; a claim nobody holds is deallocated but, named, not deleted."""
    c = _served(yaml.safe_dump_all([device_class(), _claim("shared"), _claim("solo")]))
    for name, claims in (("x", ["shared", "solo"]), ("y", ["shared"])):
        pod = make_pod(name)
        pod["spec"]["resourceClaims"] = [{"name": n, "resourceClaimName": n} for n in claims]
        _post(c, "Pod", pod)
    uid = {n: c.store.get("Pod", f"default/{n}").metadata.uid for n in ("x", "y")}
    allocation = {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}}
    for name, users in (("shared", ["x", "y"]), ("solo", ["x"])):
        raw = copy.deepcopy(c.store.get_raw("ResourceClaim", f"default/{name}"))
        raw["metadata"]["finalizers"] = [FINALIZER]
        reserved = [{"resource": "pods", "name": u, "uid": uid[u]} for u in users]
        raw["status"] = {"allocation": allocation, "reservedFor": reserved}
        c.client.update("ResourceClaim", decode("ResourceClaim", raw))
    c.store.deliver()
    rv = c.store.last_rv
    c.client.delete_pod("default", "x")
    c.store.deliver()
    shared = c.store.get_raw("ResourceClaim", "default/shared")
    assert shared["status"] == {
        "allocation": allocation,
        "reservedFor": [{"resource": "pods", "name": "y", "uid": uid["y"]}],
    }
    assert shared["metadata"]["finalizers"] == [FINALIZER]
    solo = c.store.get_raw("ResourceClaim", "default/solo")
    assert not solo.get("status") and not solo["metadata"].get("finalizers")
    changes = [
        (ch.kind, ch.etype, (ch.old or ch.new or {})["metadata"]["name"]) for ch in c.store.changes if ch.rv > rv
    ]
    assert changes == [
        ("Pod", "DELETED", "x"),
        ("ResourceClaim", "MODIFIED", "shared"),
        ("ResourceClaim", "MODIFIED", "solo"),
        ("ResourceClaim", "MODIFIED", "solo"),
    ]
