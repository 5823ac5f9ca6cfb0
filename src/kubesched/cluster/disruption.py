"""The disruption controller, as the embedded cluster needs it (pkg/controller/disruption).

A PodDisruptionBudget whose manifest gives no status gets one computed the way
the controller would: expected pods (the matching pods; or, for a percentage or
maxUnavailable, the replicas of their owning ReplicaSet/StatefulSet/RC when
known), desired healthy pods from minAvailable/maxUnavailable (percentages
rounded up), healthy pods (bound and not terminating), and
disruptionsAllowed = healthy - desired, never below zero. It is recomputed
whenever a matching pod comes, goes or changes, so preemption sees the budget
shrink as victims are evicted. PDBs that carry a status keep it.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from kubesched.api.core import Pod
from kubesched.api.labels import SelectorError, label_selector
from kubesched.api.scheduling import PodDisruptionBudget, PodDisruptionBudgetStatus
from kubesched.cluster.store import ClusterStore

PDB = "PodDisruptionBudget"
_OWNER_KINDS = ("ReplicaSet", "StatefulSet", "ReplicationController")


def scaled_value(v: int | str, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent with rounding up."""
    if isinstance(v, int):
        return v
    s = v.strip()
    if s.endswith("%"):
        return math.ceil(int(s[:-1]) * total / 100)
    return int(s)


def _healthy(pod: Pod) -> bool:
    return (
        bool(pod.spec.node_name)
        and pod.metadata.deletion_timestamp is None
        and pod.status.phase
        not in (
            "Succeeded",
            "Failed",
        )
    )


class DisruptionController:
    def __init__(self, store: ClusterStore) -> None:
        self.store = store
        # Keys of PDBs whose status we own (their manifest had none).
        self.managed: set[str] = set()

    def adopt(self, pdb: PodDisruptionBudget) -> bool:
        """Take over the status of a PDB created without one."""
        if pdb.status is not None:
            return False
        self.managed.add(f"{pdb.metadata.namespace}/{pdb.metadata.name}")
        return True

    def _expected_scale(self, pdb: PodDisruptionBudget, pods: list[Pod]) -> int:
        owners: dict[tuple[str, str], int] = {}
        loose = 0
        for p in pods:
            ref = next((o for o in p.metadata.owner_references if o.controller and o.kind in _OWNER_KINDS), None)
            if ref is None:
                loose += 1
                continue
            owner: Any = self.store.find(ref.kind, f"{p.metadata.namespace}/{ref.name}")
            replicas = owner.spec.replicas if owner is not None and owner.spec.replicas is not None else None
            owners.setdefault((ref.kind, ref.name), replicas if replicas is not None else 0)
            if replicas is None:
                owners[(ref.kind, ref.name)] += 1
        return sum(owners.values()) + loose

    def compute(self, pdb: PodDisruptionBudget) -> PodDisruptionBudgetStatus:
        try:
            sel = label_selector(pdb.spec.selector)
        except SelectorError:
            sel = None
        ns = pdb.metadata.namespace
        pods = [
            p
            for p in self.store.iter("Pod")
            if sel is not None and not sel.is_empty() and p.metadata.namespace == ns and sel.matches(p.metadata.labels)
        ]
        spec = pdb.spec
        expected = len(pods)
        desired = 0
        if spec.max_unavailable is not None:
            expected = self._expected_scale(pdb, pods)
            desired = max(expected - scaled_value(spec.max_unavailable, expected), 0)
        elif spec.min_available is not None:
            if isinstance(spec.min_available, int):
                desired = spec.min_available
            else:
                expected = self._expected_scale(pdb, pods)
                desired = scaled_value(spec.min_available, expected)
        healthy = sum(1 for p in pods if _healthy(p))
        allowed = max(healthy - desired, 0) if expected > 0 else 0
        return PodDisruptionBudgetStatus(
            disruptions_allowed=allowed, current_healthy=healthy, desired_healthy=desired, expected_pods=expected
        )

    def sync(self) -> None:
        """Recompute every managed PDB; write only those whose status changed."""
        for key in sorted(self.managed):
            pdb: PodDisruptionBudget | None = self.store.find(PDB, key)
            if pdb is None:
                self.managed.discard(key)
                continue
            status = self.compute(pdb)
            if pdb.status != status:
                self.store.update(PDB, msgspec.structs.replace(pdb, status=status))
