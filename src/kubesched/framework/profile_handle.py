"""The one implementation of the plugin Handle, and `new_handle`, the one way to build it.

The scheduler builds one handle per profile over its cache, queue, clock and
metrics. Tools build handles too, without a scheduling loop: kubesched.testing's
Env (plugin tests) and configcheck (profiles built to check a configuration).
new_handle's defaults are theirs: no objects, an empty snapshot, time 0, no
nominator, no extenders, metrics not recorded, and work meant for after the
cycle run at once; the scheduler passes its own for each.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kubesched.framework.handle import Lister, PodNominator
from kubesched.framework.snapshot import Snapshot

if TYPE_CHECKING:
    from kubesched.framework.cluster_client import ClusterClient
    from kubesched.framework.runtime import Framework
    from kubesched.framework.types import PodInfo
    from kubesched.framework.waiting_pods import WaitingPod

_NO_OBJECTS = Lister(lambda _key: None, tuple)


def _no_objects(_kind: str) -> Lister:
    return _NO_OBJECTS


def _no_nominator() -> PodNominator | None:
    return None


def _time_zero() -> float:
    return 0.0


def _activate_nothing(_pods: Iterable[PodInfo]) -> None:
    return None


def _no_extenders() -> list[Any]:
    return []


def _constant(snapshot: Snapshot) -> Callable[[], Snapshot]:
    return lambda: snapshot


def run_now(_cycles: int, fn: Callable[[], None]) -> None:
    """Without a scheduling loop there are no cycles to wait for: the work runs at once."""
    fn()


def _not_counted() -> None:
    return None


def _not_observed(_value: int) -> None:
    return None


class ProfileHandle:
    """A profile's Handle (see framework.handle.Handle for what each member is for)."""

    def __init__(
        self,
        profile_name: str,
        client: ClusterClient,
        snapshot: Callable[[], Snapshot],
        lister: Callable[[str], Lister],
        nominator: Callable[[], PodNominator | None],
        now: Callable[[], float],
        rng: random.Random,
        activate: Callable[[Iterable[PodInfo]], None],
        extenders: Callable[[], list[Any]],
        extra: dict[str, Any],
        run_after_cycles: Callable[[int, Callable[[], None]], None],
        count_preemption_attempt: Callable[[], None],
        observe_victims: Callable[[int], None],
    ) -> None:
        self.profile_name = profile_name
        self.client = client
        self.rng = rng
        self.framework: Framework | None = None
        self.extra = extra
        self._snapshot = snapshot
        self._lister = lister
        self._nominator = nominator
        self._now = now
        self._activate = activate
        self._extenders = extenders
        self._run_after_cycles = run_after_cycles
        self._count_preemption_attempt = count_preemption_attempt
        self._observe_victims = observe_victims

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

    def nominator(self) -> PodNominator | None:
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
        return list(self.framework.waiting_pods) if self.framework is not None else []

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.framework.waiting_pods.get(uid) if self.framework is not None else None

    def reject_waiting_pod(self, uid: str) -> bool:
        wp = self.get_waiting_pod(uid)
        if wp is None:
            return False
        wp.reject("", "removed")
        return True

    def run_after_cycles(self, cycles: int, fn: Callable[[], None]) -> None:
        self._run_after_cycles(cycles, fn)

    def metrics_inc_preemption_attempts(self) -> None:
        self._count_preemption_attempt()

    def metrics_observe_victims(self, victims: int) -> None:
        self._observe_victims(victims)


def new_handle(
    profile_name: str,
    client: ClusterClient,
    *,
    snapshot: Callable[[], Snapshot] | None = None,
    lister: Callable[[str], Lister] = _no_objects,
    nominator: Callable[[], PodNominator | None] = _no_nominator,
    now: Callable[[], float] = _time_zero,
    rng: random.Random | None = None,
    activate: Callable[[Iterable[PodInfo]], None] = _activate_nothing,
    extenders: Callable[[], list[Any]] = _no_extenders,
    extra: dict[str, Any] | None = None,
    run_after_cycles: Callable[[int, Callable[[], None]], None] = run_now,
    count_preemption_attempt: Callable[[], None] = _not_counted,
    observe_victims: Callable[[int], None] = _not_observed,
) -> ProfileHandle:
    """A profile's handle; what is not given is what a tool without a scheduling loop has (see the module doc).

    `snapshot` defaults to one empty Snapshot, `rng` to random.Random(0), `extra` to a dict of its own.
    """
    return ProfileHandle(
        profile_name,
        client,
        snapshot if snapshot is not None else _constant(Snapshot()),
        lister,
        nominator,
        now,
        rng if rng is not None else random.Random(0),
        activate,
        extenders,
        extra if extra is not None else {},
        run_after_cycles,
        count_preemption_attempt,
        observe_victims,
    )
