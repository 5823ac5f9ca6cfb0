"""What a random cluster may contain (Shape), and the labels, apps and namespaces its objects draw from:
shared by the cluster generator and its add-ons (storage, devices)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


@dataclass
class Shape:
    """What a random cluster may contain."""

    nodes: int = 12
    zones: int = 3
    running_pods: int = 20
    pending_pods: int = 30
    taint_fraction: float = 0.2
    selector_fraction: float = 0.2
    port_fraction: float = 0.1
    priorities: tuple[int, ...] = (0,)
    images: int = 4
    mode: str = "sequential"
    # Pending pods with inter-pod (anti-)affinity terms, and with topology spread constraints.
    pod_affinity_fraction: float = 0.25
    spread_fraction: float = 0.25
    # Each app gets a PodDisruptionBudget with this probability (preemption then weighs violations).
    pdb_fraction: float = 0.5
    # PDBs carry a status (disruptionsAllowed 0..2), as in the conformance cases: kube-scheduler run
    # against a bare API server has no disruption controller to compute one, while kubesched's
    # embedded cluster computes a missing status the way that controller would.
    pdb_status: bool = False
    # Add-ons, each drawn from its own generator so the rest of a (shape, seed) cluster stays the same:
    # persistent volumes (local WaitForFirstConsumer PVs, zonal and CSI-limited bound PVs, ReadWriteOncePod),
    # DRA devices (ResourceSlices, DeviceClasses, claims and claim templates), and a random scheduler
    # configuration (scoring strategy, weights, disabled score plugins, plugin args) in the header.
    volumes: bool = False
    dra: bool = False
    config: bool = False
    # Extended resources example.com/r0.. offered by nodes (some nodes lack some) and requested by pods.
    extended_resources: int = 0


APPS = ("web", "db", "cache")
NAMESPACES = ("default", "team")


def pods_of(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in docs if d.get("kind") == "Pod"]
