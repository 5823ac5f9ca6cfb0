"""Builders for the volume plugin tests: PVs, claims, classes, CSINodes, and a cycle runner."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesched.api.core import Pod
from kubesched.api.decode import decode
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo
from kubesched.testing import Env, make_pod


def pv(
    name: str,
    storage: str = "10Gi",
    *,
    sc: str = "",
    modes: Iterable[str] = ("ReadWriteOnce",),
    hostname: str | None = None,
    claim: tuple[str, str] | None = None,
    phase: str = "Available",
    labels: dict[str, str] | None = None,
    csi: tuple[str, str] | None = None,
    spec: dict[str, Any] | None = None,
) -> tuple[str, Any]:
    raw_spec: dict[str, Any] = {"capacity": {"storage": storage}, "accessModes": list(modes), "storageClassName": sc}
    if hostname is not None:
        raw_spec["local"] = {"path": f"/mnt/{name}"}
        raw_spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [hostname]}]}
                ]
            }
        }
    if claim is not None:
        raw_spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    if csi is not None:
        raw_spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    raw_spec.update(spec or {})
    raw = {"metadata": {"name": name, "labels": labels or {}}, "spec": raw_spec, "status": {"phase": phase}}
    return "PersistentVolume", decode("PersistentVolume", raw)


def pvc(
    name: str,
    storage: str = "10Gi",
    *,
    sc: str | None = None,
    modes: Iterable[str] = ("ReadWriteOnce",),
    volume: str = "",
    bound: bool = False,
    namespace: str = "default",
    annotations: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> tuple[str, Any]:
    ann = dict(annotations or {})
    if bound:
        ann["pv.kubernetes.io/bind-completed"] = "yes"
    raw_spec: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": storage}}}
    if sc is not None:
        raw_spec["storageClassName"] = sc
    if volume:
        raw_spec["volumeName"] = volume
    raw_spec.update(spec or {})
    raw = {
        "metadata": {"name": name, "namespace": namespace, "annotations": ann},
        "spec": raw_spec,
        "status": status or {"phase": "Bound" if bound else "Pending"},
    }
    return "PersistentVolumeClaim", decode("PersistentVolumeClaim", raw)


def storage_class(
    name: str, mode: str = "WaitForFirstConsumer", provisioner: str = "kubernetes.io/no-provisioner", **extra: Any
) -> tuple[str, Any]:
    raw = {"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": mode, **extra}
    return "StorageClass", decode("StorageClass", raw)


def csi_node(name: str, limits: dict[str, int | None], annotations: dict[str, str] | None = None) -> tuple[str, Any]:
    drivers = []
    for driver, count in limits.items():
        d: dict[str, Any] = {"name": driver, "nodeID": name}
        if count is not None:
            d["allocatable"] = {"count": count}
        drivers.append(d)
    raw = {"metadata": {"name": name, "annotations": annotations or {}}, "spec": {"drivers": drivers}}
    return "CSINode", decode("CSINode", raw)


def claim_pod(name: str, *claims: str, node: str = "", spec: dict[str, Any] | None = None, **kw: Any) -> Pod:
    """A pod using the given claims, one volume each."""
    volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    return make_pod(name, cpu="200m", node=node, spec={"volumes": volumes, **(spec or {})}, **kw)


def volume_pod(name: str, volumes: list[dict[str, Any]], node: str = "", **kw: Any) -> Pod:
    return make_pod(name, cpu="200m", node=node, spec={"volumes": volumes}, **kw)


class Cycle:
    """One scheduling cycle of a plugin for a pod: PreFilter, then Filter per node."""

    def __init__(self, plugin: Any, env: Env, pod: Pod) -> None:
        self.plugin = plugin
        self.env = env
        self.pod = PodInfo(pod)
        self.state = CycleState()
        self.pre_filter_status: Status | None = None
        _, self.pre_filter_status = plugin.pre_filter(self.state, self.pod, env.snapshot.nodes)

    def filter(self, node: str) -> Status | None:
        return self.plugin.filter(self.state, self.pod, self.env.node(node))

    def filters(self) -> dict[str, Status | None]:
        return {ni.name: self.filter(ni.name) for ni in self.env.snapshot.nodes}

    def messages(self) -> dict[str, str | None]:
        return {n: (s.message() if s is not None else None) for n, s in self.filters().items()}
