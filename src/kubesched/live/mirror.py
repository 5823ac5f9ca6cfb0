"""The scheduler's local copy of the remote cluster (the informers' indexers).

A ClusterStore whose objects come from the API server with their own
resourceVersions. The scheduler thread applies what the reflectors received
(`apply`, `replace`) and the store turns each change into the same buffered
ADDED / MODIFIED / DELETED events the embedded cluster produces, so the
scheduler's handlers cannot tell the difference.
"""

from __future__ import annotations

from typing import Any

from kubesched.cluster.clock import Clock
from kubesched.cluster.store import ADDED, DELETED, FINAL_STATE_UNKNOWN, MODIFIED, ClusterStore, object_key


class MirrorStore(ClusterStore):
    """Remote objects by kind and key; only changed on the scheduler thread."""

    def __init__(self, clock: Clock | None = None) -> None:
        super().__init__(clock)
        self.resource_versions: dict[str, str] = {}

    def apply(self, kind: str, etype: str, obj: Any) -> None:
        """One watch event. Idempotent: replays of what the mirror already holds change nothing."""
        key = object_key(obj)
        bucket = self.objects.setdefault(kind, {})
        old = bucket.get(key)
        if etype == DELETED:
            if old is None:
                return
            del bucket[key]
            self._emit(kind, DELETED, obj, None)
            return
        if old is None:
            bucket[key] = obj
            self._emit(kind, ADDED, None, obj)
            return
        if old.metadata.resource_version == obj.metadata.resource_version:
            return
        if old.metadata.uid and obj.metadata.uid and old.metadata.uid != obj.metadata.uid:
            # Deleted and re-created under the same name while we were not watching.
            bucket[key] = obj
            self._emit(kind, DELETED, old, FINAL_STATE_UNKNOWN)
            self._emit(kind, ADDED, None, obj)
            return
        bucket[key] = obj
        self._emit(kind, MODIFIED, old, obj)

    def replace(self, kind: str, objs: list[Any], resource_version: str = "") -> None:
        """A fresh LIST: what is gone is deleted (FINAL_STATE_UNKNOWN), what is new added, what changed modified."""
        bucket = self.objects.setdefault(kind, {})
        fresh = {object_key(o): o for o in objs}
        for key in [k for k in bucket if k not in fresh]:
            old = bucket.pop(key)
            self._emit(kind, DELETED, old, FINAL_STATE_UNKNOWN)
        for obj in fresh.values():
            self.apply(kind, MODIFIED, obj)
        if resource_version:
            self.resource_versions[kind] = resource_version


class MirrorCluster:
    """What the Scheduler needs of a cluster: a store to read and a client to write."""

    def __init__(self, store: MirrorStore, client: Any) -> None:
        self.store = store
        self.client = client
