"""The Handle: what plugins may reach besides their arguments (framework.Handle upstream).

One per profile. It gives read access to the snapshot and to the cluster's
objects (listers), the API client for the writes plugins make (binding, volume
and claim updates, preemption), the nominator, the clock and the seeded random
source, and the profile's own Framework (preemption runs its filters).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubesched.framework.runtime import Framework
    from kubesched.framework.snapshot import Snapshot
    from kubesched.framework.types import PodInfo
    from kubesched.framework.waiting_pods import WaitingPod
    from kubesched.queue.nominator import Nominator


class Lister:
    """Read access to one kind of object of the cluster, by key ("ns/name" or "name")."""

    def __init__(self, get: Callable[[str], Any | None], items: Callable[[], Iterable[Any]]) -> None:
        self._get = get
        self._items = items

    def get(self, key: str) -> Any | None:
        return self._get(key)

    def list(self) -> list[Any]:
        return list(self._items())


class Handle:
    def __init__(
        self,
        profile_name: str,
        snapshot: Callable[[], Snapshot],
        client: Any,
        lister: Callable[[str], Lister],
        nominator: Callable[[], Nominator | None],
        now: Callable[[], float],
        rng: random.Random,
        activate: Callable[[Iterable[PodInfo]], None],
        extenders: Callable[[], list[Any]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.profile_name = profile_name
        self._snapshot = snapshot
        self.client = client
        self._lister = lister
        self._nominator = nominator
        self._now = now
        self.rng = rng
        self._activate = activate
        self._extenders = extenders or (lambda: [])
        self.framework: Framework | None = None
        # Shared state other scheduler parts hand to plugins (e.g. the DRA allocation tracker).
        self.extra: dict[str, Any] = extra if extra is not None else {}

    def snapshot(self) -> Snapshot:
        return self._snapshot()

    def whole_snapshot(self, nodes: object) -> Snapshot | None:
        """The snapshot, when `nodes` is its whole node list and the profile runs its whole-snapshot paths.

        PreFilter and PreScore then read the snapshot's indexes instead of walking every pod.
        """
        fw = self.framework
        if fw is not None and not fw.use_vector_paths:
            return None
        snap = self._snapshot()
        return snap if nodes is snap.nodes else None

    def lister(self, kind: str) -> Lister:
        return self._lister(kind)

    def nominator(self) -> Nominator | None:
        return self._nominator()

    def nominated_pods_for_node(self, node: str) -> list[PodInfo]:
        n = self._nominator()
        return n.nominated_pods_for_node(node) if n is not None else []

    def now(self) -> float:
        return self._now()

    def activate(self, pods: Iterable[PodInfo]) -> None:
        self._activate(pods)

    def extenders(self) -> list[Any]:
        return self._extenders()

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        ns = self._lister("Namespace").get(namespace)
        return dict(ns.metadata.labels) if ns is not None else {}

    def waiting_pods(self) -> list[WaitingPod]:
        """The pods of this profile held at Permit (IterateOverWaitingPods): allow or reject them."""
        return list(self.framework.waiting_pods) if self.framework is not None else []

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.framework.waiting_pods.get(uid) if self.framework is not None else None

    def reject_waiting_pod(self, uid: str) -> bool:
        wp = self.get_waiting_pod(uid)
        if wp is None:
            return False
        wp.reject("", "removed")
        return True
