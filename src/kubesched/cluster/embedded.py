"""The embedded cluster: a store, its API client and its virtual clock, as one object."""

from __future__ import annotations

from typing import Any

from kubesched.cluster.client import EmbeddedClient
from kubesched.cluster.clock import VirtualClock
from kubesched.cluster.disruption import DisruptionController
from kubesched.cluster.store import ClusterStore


class EmbeddedCluster:
    """The store, its API client, its clock and the controllers a simulation needs (PDB status)."""

    def __init__(self, graceful_deletion: bool = False) -> None:
        self.clock = VirtualClock()
        self.store = ClusterStore(self.clock)
        self.client = EmbeddedClient(self.store, graceful_deletion=graceful_deletion)
        self._start_controllers()

    def _start_controllers(self) -> None:
        """The disruption controller: PDB status computed on creation and kept up to date as pods change."""
        self.disruption = DisruptionController(self.store)
        self.client.on_create["PodDisruptionBudget"] = self._adopt_pdb
        self.store.subscribe("Pod", self._pod_changed)

    def _adopt_pdb(self, pdb: Any) -> Any:
        if self.disruption.adopt(pdb):
            import msgspec

            return msgspec.structs.replace(pdb, status=self.disruption.compute(pdb))
        return pdb

    def _pod_changed(self, _etype: str, _old: Any, _new: Any) -> None:
        if self.disruption.managed:
            self.disruption.sync()
