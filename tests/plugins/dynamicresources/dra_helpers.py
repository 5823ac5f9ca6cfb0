"""Builders for the DynamicResources tests: classes, slices, claims, pods, and a one-pod scheduling cycle."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import kubesched.api.resource  # noqa: F401  (registers the resource.k8s.io kinds)
from kubesched.api.core import Pod
from kubesched.api.decode import decode
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.dynamicresources.plugin import DynamicResources
from kubesched.testing import Env, make_node, make_pod

DRIVER = "gpu.example.com"


def device_class(name: str, *expressions: str, config: list[dict[str, Any]] | None = None) -> tuple[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in expressions]}
    if config:
        spec["config"] = config
    return "DeviceClass", decode("DeviceClass", {"metadata": {"name": name}, "spec": spec})


def gpu(name: str, model: str = "a100", mem_gi: int = 40, **attrs: Any) -> dict[str, Any]:
    """A device with model/memoryGi attributes and a memory capacity, plus extra typed attributes."""
    attributes: dict[str, Any] = {"model": {"string": model}, "memoryGi": {"int": mem_gi}}
    for k, v in attrs.items():
        if isinstance(v, bool):
            attributes[k] = {"bool": v}
        elif isinstance(v, int):
            attributes[k] = {"int": v}
        else:
            attributes[k] = {"string": v}
    return {"name": name, "attributes": attributes, "capacity": {"memory": {"value": f"{mem_gi}Gi"}}}


def resource_slice(
    name: str,
    devices: Sequence[dict[str, Any]],
    *,
    node: str | None = None,
    pool: str | None = None,
    driver: str = DRIVER,
    generation: int = 1,
    count: int = 1,
    node_selector: dict[str, Any] | None = None,
    all_nodes: bool = False,
) -> tuple[str, Any]:
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool or node or name, "generation": generation, "resourceSliceCount": count},
        "devices": list(devices),
    }
    if node is not None:
        spec["nodeName"] = node
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if all_nodes:
        spec["allNodes"] = True
    return "ResourceSlice", decode("ResourceSlice", {"metadata": {"name": name}, "spec": spec})


def node_slice(node: str, n: int, model: str = "a100", mem_gi: int = 40, **kw: Any) -> tuple[str, Any]:
    """A node-local slice with n identical GPUs gpu-0..gpu-(n-1)."""
    return resource_slice(f"{node}-gpu", [gpu(f"gpu-{i}", model, mem_gi) for i in range(n)], node=node, **kw)


def request(
    name: str = "gpu",
    cls: str = "gpu",
    count: int | None = 1,
    *,
    mode: str = "ExactCount",
    selectors: Iterable[str] = (),
    admin: bool | None = None,
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls, "allocationMode": mode}
    if count is not None and mode == "ExactCount":
        exactly["count"] = count
    sels = [{"cel": {"expression": e}} for e in selectors]
    if sels:
        exactly["selectors"] = sels
    if admin is not None:
        exactly["adminAccess"] = admin
    return {"name": name, "exactly": exactly}


def first_available(name: str, *subs: tuple[str, str, int, Iterable[str]]) -> dict[str, Any]:
    """A prioritized list: (name, class, count, selectors) per subrequest."""
    return {
        "name": name,
        "firstAvailable": [
            {
                "name": n,
                "deviceClassName": c,
                "allocationMode": "ExactCount",
                "count": k,
                "selectors": [{"cel": {"expression": e}} for e in sels],
            }
            for n, c, k, sels in subs
        ],
    }


def claim(
    name: str,
    *requests: dict[str, Any],
    constraints: list[dict[str, Any]] | None = None,
    namespace: str = "default",
    status: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> tuple[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests) or [request()]}
    if constraints:
        devices["constraints"] = constraints
    raw: dict[str, Any] = {
        "metadata": {"name": name, "namespace": namespace, **(meta or {})},
        "spec": {"devices": devices},
    }
    if status:
        raw["status"] = status
    return "ResourceClaim", decode("ResourceClaim", raw)


def allocated_status(node: str, *devices: tuple[str, str], pool: str | None = None) -> dict[str, Any]:
    """status.allocation for devices (request, device) of the node's pool."""
    return {
        "allocation": {
            "devices": {
                "results": [{"request": r, "driver": DRIVER, "pool": pool or node, "device": d} for r, d in devices]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
            },
        }
    }


def claim_pod(name: str, *claims: str, cpu: str = "1", templates: dict[str, str] | None = None, **kw: Any) -> Pod:
    """A pod referencing ResourceClaims by name (pod claim name = claim name) and templates (pod claim -> template)."""
    rcs: list[dict[str, Any]] = [{"name": c, "resourceClaimName": c} for c in claims]
    rcs += [{"name": pc, "resourceClaimTemplateName": t} for pc, t in (templates or {}).items()]
    return make_pod(name, cpu, "1Gi", spec={"resourceClaims": rcs}, **kw)


def gpu_env(nodes: dict[str, int], *objects: tuple[str, Any], classes: bool = True) -> Env:
    """Nodes with n GPUs each (node-local slices) and the class `gpu`, plus the given objects."""
    objs: list[tuple[str, Any]] = []
    if classes:
        objs.append(device_class("gpu", f'device.driver == "{DRIVER}"'))
    objs += [node_slice(n, k) for n, k in nodes.items() if k > 0]
    objs += list(objects)
    return Env([make_node(n, cpu="16", mem="64Gi") for n in nodes], objects=objs)


@dataclass
class Outcome:
    """What one scheduling cycle of a pod did."""

    node: str | None = None
    pre_enqueue: Status | None = None
    pre_filter: Status | None = None
    filters: dict[str, Status | None] = field(default_factory=dict)
    post_filter: Status | None = None
    error: Status | None = None
    state: CycleState | None = None

    @property
    def feasible(self) -> list[str]:
        return [n for n, s in self.filters.items() if s is None]


def plugin_for(env: Env) -> DynamicResources:
    return DynamicResources.new(None, env.handle)


def schedule(env: Env, pl: DynamicResources, pod: Pod, *, bind: bool = True, prefer: str | None = None) -> Outcome:
    """One cycle of the DRA extension points for `pod`: the first feasible node (or `prefer`) wins."""
    pi = PodInfo(pod)
    out = Outcome()
    out.pre_enqueue = pl.pre_enqueue(pi)
    if out.pre_enqueue is not None:
        return out
    state = CycleState()
    out.state = state
    _, st = pl.pre_filter(state, pi, env.snapshot.nodes)
    out.pre_filter = st
    if st is not None and st.code != Code.SKIP:
        _, out.post_filter = pl.post_filter(state, pi, {})
        return out
    skip = st is not None
    for ni in env.snapshot.nodes:
        out.filters[ni.name] = None if skip else pl.filter(state, pi, ni)
    errors = [s for s in out.filters.values() if s is not None and s.code == Code.ERROR]
    if errors:
        out.error = errors[0]
        return out
    feasible = out.feasible
    if not feasible:
        _, out.post_filter = pl.post_filter(state, pi, {})
        return out
    node = prefer if prefer in feasible else feasible[0]
    s = pl.reserve(state, pi, node)
    if s is not None:
        out.error = s
        pl.unreserve(state, pi, node)
        return out
    if not bind:
        out.node = node
        return out
    s = pl.pre_bind(state, pi, node)
    if s is not None:
        out.error = s
        pl.unreserve(state, pi, node)
        return out
    out.node = node
    env.add_pod(make_bound(pod, node))
    return out


def make_bound(pod: Pod, node: str) -> Pod:
    import msgspec

    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node))


def get_claim(env: Env, name: str, namespace: str = "default") -> Any:
    return env.store.get("ResourceClaim", f"{namespace}/{name}")


def devices_of(env: Env, name: str) -> list[str]:
    alloc = get_claim(env, name).status.allocation
    return [] if alloc is None else [f"{r.pool}/{r.device}" for r in alloc.devices.results]


# ---------------------------------------------------------------- scenario documents (plain dicts for YAML)

CLASS = "gpu.example.com"


def doc_class(name: str = CLASS) -> dict[str, Any]:
    """A DeviceClass selecting every device of the driver."""
    sel = [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": sel},
    }


def doc_node(name: str, cpu: str = "32", pods: str = "110") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": cpu, "memory": "64Gi", "pods": pods}},
    }


def doc_slice(node: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    """The node's own pool (named after the node) with these devices."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def doc_claim_spec(
    count: int = 1, selector: str | None = None, match: str | None = None, mode: str = "ExactCount", name: str = "gpu"
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": CLASS, "allocationMode": mode}
    if mode == "ExactCount":
        exactly["count"] = count
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    devices: dict[str, Any] = {"requests": [{"name": name, "exactly": exactly}]}
    if match:
        devices["constraints"] = [{"matchAttribute": match}]
    return {"devices": devices}


def doc_template(name: str, **kw: Any) -> dict[str, Any]:
    spec = {"spec": doc_claim_spec(**kw)}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": spec,
    }


def doc_claim(name: str, **kw: Any) -> dict[str, Any]:
    spec = doc_claim_spec(**kw)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name}, "spec": spec}


def doc_pod(
    name: str, cpu: str = "1", templates: dict[str, str] | None = None, claims: dict[str, str] | None = None
) -> dict[str, Any]:
    """A pod with claims from templates and named claims (pod claim name -> template / claim name)."""
    rcs = [{"name": pc, "resourceClaimTemplateName": t} for pc, t in (templates or {}).items()]
    rcs += [{"name": pc, "resourceClaimName": c} for pc, c in (claims or {}).items()]
    container = {
        "name": "c",
        "image": "x",
        "resources": {"requests": {"cpu": cpu}, "claims": [{"name": r["name"]} for r in rcs]},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container], "resourceClaims": rcs},
    }
