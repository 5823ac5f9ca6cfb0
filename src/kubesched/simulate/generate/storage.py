"""The storage add-on of a random cluster: StorageClasses, CSINodes, local and zonal PersistentVolumes and
claims on pods, for VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits to decide on."""

from __future__ import annotations

import random
from typing import Any

from kubesched.simulate.generate.shape import HOSTNAME, ZONE, pods_of

CSI_DRIVER = "pd.csi.example.com"


def _bound_pvc(name: str, ns: str, pv: str, size: str, modes: list[str], sc: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": ns, "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
        "spec": {
            "accessModes": modes,
            "resources": {"requests": {"storage": size}},
            "storageClassName": sc,
            "volumeName": pv,
        },
        "status": {"phase": "Bound", "accessModes": modes, "capacity": {"storage": size}},
    }


def _mount(pod: dict[str, Any], claim: str) -> None:
    vols = pod["spec"].setdefault("volumes", [])
    vols.append({"name": f"v{len(vols)}", "persistentVolumeClaim": {"claimName": claim}})


def add_volumes(docs: list[dict[str, Any]], node_names: list[str], zones: int, rng: random.Random) -> None:
    """Storage for VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits to decide on."""
    docs += [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "local"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "zonal"},
            "provisioner": CSI_DRIVER,
            "volumeBindingMode": "Immediate",
        },
    ]
    for name in node_names:
        if rng.random() < 0.7:
            docs.append(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "CSINode",
                    "metadata": {"name": name},
                    "spec": {
                        "drivers": [
                            {"name": CSI_DRIVER, "nodeID": name, "allocatable": {"count": rng.choice([1, 2, 3])}}
                        ]
                    },
                }
            )
        for j in range(rng.choice([0, 1, 2])):
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": f"local-{name}-{j}"},
                    "spec": {
                        "capacity": {"storage": rng.choice(["5Gi", "20Gi", "50Gi"])},
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": "local",
                        "persistentVolumeReclaimPolicy": "Retain",
                        "local": {"path": f"/mnt/{j}"},
                        "nodeAffinity": {
                            "required": {
                                "nodeSelectorTerms": [
                                    {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [name]}]}
                                ]
                            }
                        },
                    },
                    "status": {"phase": "Available"},
                }
            )
    counter = 0

    def zonal(ns: str, modes: list[str]) -> str:
        """A CSI volume in one zone, bound to a new claim; returns the claim's name."""
        nonlocal counter
        counter += 1
        claim, pv = f"zonal-{counter}", f"zonal-pv-{counter}"
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": pv, "labels": {ZONE: f"zone-{rng.randrange(zones)}"}},
                "spec": {
                    "capacity": {"storage": "10Gi"},
                    "accessModes": modes,
                    "storageClassName": "zonal",
                    "csi": {"driver": CSI_DRIVER, "volumeHandle": f"vol-{counter}"},
                    "claimRef": {"namespace": ns, "name": claim},
                },
                "status": {"phase": "Bound"},
            }
        )
        docs.append(_bound_pvc(claim, ns, pv, "10Gi", modes, "zonal"))
        return claim

    rwop: list[tuple[str, str]] = []
    for pod in pods_of(docs):
        ns = pod["metadata"]["namespace"]
        running = "nodeName" in pod["spec"]
        r = rng.random()
        if running:
            if r < 0.3:
                _mount(pod, zonal(ns, ["ReadWriteOnce"]))
            elif r < 0.4:
                claim = zonal(ns, ["ReadWriteOncePod"])
                _mount(pod, claim)
                rwop.append((ns, claim))
            continue
        if r < 0.35:
            counter += 1
            claim = f"local-claim-{counter}"
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {"name": claim, "namespace": ns},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": rng.choice(["1Gi", "10Gi", "30Gi"])}},
                        "storageClassName": "local",
                    },
                }
            )
            _mount(pod, claim)
        elif r < 0.6:
            _mount(pod, zonal(ns, ["ReadWriteOnce"]))
        elif r < 0.65:
            _mount(pod, "missing-claim")
        elif r < 0.75 and any(n == ns for n, _ in rwop):
            _mount(pod, rng.choice([c for n, c in rwop if n == ns]))
