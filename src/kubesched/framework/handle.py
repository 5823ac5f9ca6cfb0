"""The Handle: what plugins may reach besides their arguments (framework.Handle upstream).

One per profile, given to each plugin's `new(args, handle)`. It gives read
access to the snapshot and to the cluster's objects (listers), the API client
for the writes plugins make (binding, volume and claim updates, preemption),
the nominator, the clock and the seeded random source, the pods waiting at
Permit, the profile's own Framework (preemption runs its filters), and the
scheduler's hooks for work done off the scheduling cycle and for metrics.

`Handle` is the contract plugins type against; framework.profile_handle holds
its one implementation and the factory every caller builds handles with.
`PodNominator` is what plugins and the runtime read of the nominator
(framework.PodNominator upstream); queue.nominator.Nominator implements it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kubesched.framework.cluster_client import ClusterClient
    from kubesched.framework.pod_sums import ExtraSums
    from kubesched.framework.runtime import Framework
    from kubesched.framework.snapshot import Snapshot
    from kubesched.framework.types import NodeInfo, PodInfo
    from kubesched.framework.waiting_pods import WaitingPod


class Lister:
    """Read access to one kind of object of the cluster, by key ("ns/name" or "name")."""

    def __init__(self, get: Callable[[str], Any | None], items: Callable[[], Iterable[Any]]) -> None:
        self._get = get
        self._items = items

    def get(self, key: str) -> Any | None:
        return self._get(key)

    def list(self) -> list[Any]:
        return list(self._items())


class PodNominator(Protocol):
    """The pods nominated to nodes by earlier preemptions, as plugins and the runtime read them."""

    @property
    def nominated_pods(self) -> Mapping[str, list[str]]:
        """Node name -> the uids of the pods nominated to it, in nomination order."""
        ...

    @property
    def pods(self) -> Mapping[str, PodInfo]:
        """Uid -> the latest PodInfo of each nominated pod."""
        ...

    def nominated_pods_for_node(self, node: str) -> list[PodInfo]:
        """The pods nominated to `node`, in nomination order."""
        ...

    def has_nominations(self) -> bool:
        """Whether any pod is nominated anywhere."""
        ...

    def sums_at_least(self, nodes: list[NodeInfo], pod: PodInfo) -> ExtraSums | None:
        """Per node of `nodes`, the nominated pods `pod` must yield to, summed; None when there are none."""
        ...


class Handle(Protocol):
    """Everything a plugin reaches through its handle (the in-tree plugins and preemption included)."""

    profile_name: str
    # The API the scheduler writes through: the embedded store's or a real API server's.
    client: ClusterClient
    # The seeded random source: the same scenario and seed give the same choices.
    rng: random.Random
    # The profile's framework; None only while its plugins are being constructed.
    framework: Framework | None
    # State other scheduler parts share with plugins, across profiles (e.g. DRA's in-flight allocations).
    extra: dict[str, Any]

    def snapshot(self) -> Snapshot:
        """The cluster as this scheduling cycle sees it."""
        ...

    def whole_snapshot(self, nodes: object) -> Snapshot | None:
        """The snapshot, when `nodes` is its whole node list and the profile runs its whole-snapshot paths."""
        ...

    def lister(self, kind: str) -> Lister:
        """The cluster's objects of one kind, any kind (including kinds a plugin registers)."""
        ...

    def nominator(self) -> PodNominator | None:
        """The pods nominated to nodes by earlier preemptions (None outside a scheduler)."""
        ...

    def nominated_pods_for_node(self, node: str) -> list[PodInfo]:
        """The pods nominated to `node`: Filter counts those of equal or higher priority as if there."""
        ...

    def now(self) -> float:
        """The scheduler's clock (virtual in simulations), in seconds."""
        ...

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """Move pods back to the active queue."""
        ...

    def extenders(self) -> list[Any]:
        """The configured scheduler extenders (preemption asks them about its victims)."""
        ...

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        """A namespace's labels ({} when it does not exist), for namespace selectors."""
        ...

    def waiting_pods(self) -> list[WaitingPod]:
        """The pods of this profile held at Permit (IterateOverWaitingPods): allow or reject them."""
        ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        """The pod with this uid held at Permit, if it is."""
        ...

    def reject_waiting_pod(self, uid: str) -> bool:
        """Reject the pod held at Permit; False when it was not waiting."""
        ...

    def run_after_cycles(self, cycles: int, fn: Callable[[], None]) -> None:
        """Run `fn` once `cycles` more scheduling cycles have ended (0: at the end of this one).

        Upstream runs such work (asynchronous preemption's API calls) in a goroutine while
        the scheduling loop goes on; here it runs between cycles, after as many as it takes.
        """
        ...

    def metrics_inc_preemption_attempts(self) -> None:
        """scheduler_preemption_attempts_total, one more."""
        ...

    def metrics_observe_victims(self, victims: int) -> None:
        """scheduler_preemption_victims, one preemption's number of victims."""
        ...
