"""A DRA stress run for `kubesched run`: many pods, one claim each, on nodes with few devices.

Each round creates more pods than there are devices, all at once, so that the
scheduler allocates claims back to back while its claim informer is behind its
own writes; then deletes the pods that got devices, so that the waiting ones
take the freed devices, again back to back. After every look at the cluster it
checks what a device plugin relies on: no device is in two claims'
allocations, no more pods are bound than there are devices, and a bound pod's
claim is allocated on its node and reserved for it.

The same run serves `kubesched serve` (claims from a template, made and
released by serve's resourceclaim controller) and a real kube-apiserver (no
controller there: `Ops` creates and releases the claims itself).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from tests.live.conftest import make_pod, wait_until
from tests.plugins.dynamicresources.dra_helpers import DRIVER, doc_slice

NS = "default"
PODS = f"/api/v1/namespaces/{NS}/pods"
CLAIMS = f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims"


class Client(Protocol):
    def get(self, path: str) -> Any: ...


def device_class() -> dict[str, Any]:
    sel = [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DRIVER},
        "spec": {"selectors": sel},
    }


def node_slice(node: str, n: int, attributes: dict[str, Any] | None = None) -> dict[str, Any]:
    """The node's own pool with n GPUs gpu-0..gpu-(n-1), each with these attributes (if any)."""
    device = {"attributes": attributes} if attributes else {}
    return doc_slice(node, [{"name": f"gpu-{i}", **device} for i in range(n)])


def claim_spec() -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": 1}}]}}


def gpu_pod(name: str, claim: dict[str, str]) -> dict[str, Any]:
    """A pod whose one container uses the pod claim "gpu" (`claim`: resourceClaimName or ...TemplateName)."""
    pod = make_pod(name, cpu="10m")
    pod["spec"]["resourceClaims"] = [{"name": "gpu", **claim}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return pod


def claim_of(pod: dict[str, Any]) -> str:
    """The ResourceClaim the pod uses: named in its spec, or generated and recorded in its status."""
    [ref] = pod["spec"]["resourceClaims"]
    if ref.get("resourceClaimName"):
        return str(ref["resourceClaimName"])
    statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
    return next((str(s.get("resourceClaimName", "")) for s in statuses if s["name"] == ref["name"]), "")


@dataclass
class Ops:
    """How pods come and go on one kind of server; `stress` calls them for many pods at once, from threads."""

    create: Callable[[str], None]  # a pod (and whatever claim it needs)
    delete: Callable[[str], None]  # a pod, and the release of its claim


def at_once(op: Callable[[str], None], names: list[str]) -> None:
    """`op` for every name, concurrently: the scheduler sees a burst, not a trickle."""
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        list(pool.map(op, names))


@dataclass
class Tally:
    """What the run saw, for the report."""

    checks: int = 0
    allocations: int = 0  # distinct (claim, device) allocations seen
    seen: set[tuple[str, str]] = field(default_factory=set)


def check(api: Client, devices: int, tally: Tally) -> dict[str, dict[str, Any]]:
    """One look at the cluster (pods first: a pod is bound only after its claim is written); the pods."""
    pods = {p["metadata"]["name"]: p for p in api.get(PODS)["items"]}
    claims = {c["metadata"]["name"]: c for c in api.get(CLAIMS)["items"]}
    holder: dict[tuple[str, str, str], str] = {}
    for name, c in sorted(claims.items()):
        alloc = (c.get("status") or {}).get("allocation")
        for r in (alloc or {}).get("devices", {}).get("results", []):
            dev = (r["driver"], r["pool"], r["device"])
            assert dev not in holder, f"device {'/'.join(dev)} allocated to both {holder[dev]} and {name}"
            holder[dev] = name
            tally.seen.add((c["metadata"]["uid"], dev[2]))
    bound = {n: p["spec"]["nodeName"] for n, p in pods.items() if p["spec"].get("nodeName")}
    assert len(bound) <= devices, f"{len(bound)} pods bound with {devices} devices: {sorted(bound)}"
    for name, node in bound.items():
        claim = claims.get(claim_of(pods[name]))
        assert claim is not None, f"bound pod {name} has no claim"
        status = claim.get("status") or {}
        pools = {r["pool"] for r in status["allocation"]["devices"]["results"]}
        assert pools == {node}, f"{name} bound to {node}, its claim allocated on {pools}"
        assert pods[name]["metadata"]["uid"] in {r["uid"] for r in status.get("reservedFor", [])}
    tally.checks += 1
    tally.allocations = len(tally.seen)
    return pods


def bound(pods: dict[str, dict[str, Any]], names: list[str]) -> list[str]:
    return [n for n in names if n in pods and pods[n]["spec"].get("nodeName")]


def unschedulable(pod: dict[str, Any]) -> bool:
    conds = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conds)


def stress(api: Client, ops: Ops, devices: int, rounds: int, pods_per_round: int, timeout: float = 90.0) -> Tally:
    """`rounds` rounds of `pods_per_round` pods (more than `devices`, at most twice as many)."""
    assert devices < pods_per_round <= 2 * devices
    tally = Tally()
    for r in range(rounds):
        one_round(api, ops, devices, [f"r{r}-p{i}" for i in range(pods_per_round)], tally, timeout)
    return tally


def one_round(api: Client, ops: Ops, devices: int, names: list[str], tally: Tally, timeout: float) -> None:
    at_once(ops.create, names)

    def first_fill() -> list[str] | None:
        pods = check(api, devices, tally)
        got = bound(pods, names)
        waiting = [pods[n] for n in names if n not in got and n in pods]
        return got if len(got) == devices and all(unschedulable(p) for p in waiting) else None

    first = wait_until(first_fill, timeout, 0.1, f"{names[0]}..: {devices} pods bound, the rest unschedulable")
    at_once(ops.delete, first)
    rest = [n for n in names if n not in first]
    wait_until(
        lambda: len(bound(check(api, devices, tally), rest)) == len(rest),
        timeout,
        0.1,
        f"{names[0]}..: the {len(rest)} waiting pods bound on the freed devices",
    )
    check(api, devices, tally)
    at_once(ops.delete, rest)
