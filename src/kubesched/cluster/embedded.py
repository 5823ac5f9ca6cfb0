"""The embedded cluster: a store, its API client and its virtual clock, as one object."""

from __future__ import annotations

from kubesched.cluster.client import EmbeddedClient
from kubesched.cluster.clock import VirtualClock
from kubesched.cluster.store import ClusterStore


class EmbeddedCluster:
    def __init__(self, graceful_deletion: bool = False) -> None:
        self.clock = VirtualClock()
        self.store = ClusterStore(self.clock)
        self.client = EmbeddedClient(self.store, graceful_deletion=graceful_deletion)
