"""VolumeRestrictions (framework/plugins/volumerestrictions).

Two rules. In-tree disks a node's pods already mount (GCE PD, AWS EBS, ISCSI,
Ceph RBD) conflict with the same disk in the pod, unless every mount is
read-only (never for EBS). A ReadWriteOncePod claim may be used by one pod in
the whole cluster: if any scheduled pod uses it, every node fails with
Unschedulable, so that preemption (which removes pods through
RemovePod) can free it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubesched.api.core import Pod, Volume
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
)
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.plugins import names
from kubesched.plugins.volumebinding.pv_util import GR_PVC, READ_WRITE_ONCE_POD, NotFoundError, get_or_raise

_PRE_FILTER_KEY = "PreFilter" + names.VOLUME_RESTRICTIONS

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)


class _PreFilterState:
    """The pod's ReadWriteOncePod claims and how many references scheduled pods hold to them."""

    __slots__ = ("conflicting_pvc_ref_count", "rwop_pvcs")

    def __init__(self, rwop_pvcs: frozenset[str], count: int) -> None:
        self.rwop_pvcs = rwop_pvcs
        self.conflicting_pvc_ref_count = count

    def update_with_pod(self, pod: Pod, multiplier: int) -> None:
        n = 0
        for v in pod.spec.volumes:
            if v.persistent_volume_claim is not None and v.persistent_volume_claim.claim_name in self.rwop_pvcs:
                n += 1
        self.conflicting_pvc_ref_count += multiplier * n

    def clone(self) -> _PreFilterState:
        return _PreFilterState(self.rwop_pvcs, self.conflicting_pvc_ref_count)


def needs_restrictions_check(v: Volume) -> bool:
    return (
        v.gce_persistent_disk is not None
        or v.aws_elastic_block_store is not None
        or v.rbd is not None
        or v.iscsi is not None
    )


def is_volume_conflict(volume: Volume, pod: Pod) -> bool:
    """Whether `volume` conflicts with a volume of `pod` (same disk, not all read-only)."""
    for ev in pod.spec.volumes:
        gce, egce = volume.gce_persistent_disk, ev.gce_persistent_disk
        if (
            gce is not None
            and egce is not None
            and gce.pd_name == egce.pd_name
            and not (gce.read_only and egce.read_only)
        ):
            return True
        ebs, eebs = volume.aws_elastic_block_store, ev.aws_elastic_block_store
        if ebs is not None and eebs is not None and ebs.volume_id == eebs.volume_id:
            return True
        iscsi, eiscsi = volume.iscsi, ev.iscsi
        if (
            iscsi is not None
            and eiscsi is not None
            and iscsi.iqn == eiscsi.iqn
            and not (iscsi.read_only and eiscsi.read_only)
        ):
            return True
        rbd, erbd = volume.rbd, ev.rbd
        if (
            rbd is not None
            and erbd is not None
            and not set(rbd.monitors).isdisjoint(erbd.monitors)
            and rbd.pool == erbd.pool
            and rbd.image == erbd.image
            and not (rbd.read_only and erbd.read_only)
        ):
            return True
    return False


def satisfy_volume_conflicts(pod: Pod, pods: Sequence[Pod]) -> bool:
    for v in pod.spec.volumes:
        if not needs_restrictions_check(v):
            continue
        for other in pods:
            if is_volume_conflict(v, other):
                return False
    return True


class VolumeRestrictions(PreFilterPlugin, FilterPlugin, PreFilterExtensions, EnqueueExtensions):
    name = names.VOLUME_RESTRICTIONS

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    @classmethod
    def new(cls, args: Any, handle: Any) -> VolumeRestrictions:
        return cls(handle)

    # ------------------------------------------------------------ PreFilter

    def _rwop_pvcs(self, pod: Pod) -> frozenset[str]:
        """The pod's claims with the ReadWriteOncePod access mode; raises NotFoundError for a missing claim."""
        lister = self.handle.lister("PersistentVolumeClaim")
        ns = pod.metadata.namespace
        out = set()
        for v in pod.spec.volumes:
            src = v.persistent_volume_claim
            if src is None:
                continue
            pvc = get_or_raise(lister, GR_PVC, f"{ns}/{src.claim_name}", src.claim_name)
            if READ_WRITE_ONCE_POD in pvc.spec.access_modes:
                out.add(pvc.metadata.name)
        return frozenset(out)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        volumes = pod.pod.spec.volumes
        if not volumes:
            return None, SKIP
        needs_check = any(needs_restrictions_check(v) for v in volumes)
        try:
            pvcs = self._rwop_pvcs(pod.pod)
        except NotFoundError as err:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(err))
        count = 0
        if pvcs:
            snapshot = self.handle.snapshot()
            for name in pvcs:
                if snapshot.is_pvc_used_by_pods(f"{pod.namespace}/{name}"):
                    count += 1
        if not needs_check and count == 0:
            return None, SKIP
        state.write(_PRE_FILTER_KEY, _PreFilterState(pvcs, count))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def _state(self, state: CycleState) -> _PreFilterState:
        s = state.get(_PRE_FILTER_KEY)
        if s is None:
            raise LookupError(f'cannot read "{_PRE_FILTER_KEY}" from cycleState')
        return s

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node_info: NodeInfo) -> Status | None:
        try:
            self._state(state).update_with_pod(pod_to_add.pod, 1)
        except LookupError as err:
            return Status.as_error(err)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node_info: NodeInfo) -> Status | None:
        try:
            self._state(state).update_with_pod(pod_to_remove.pod, -1)
        except LookupError as err:
            return Status.as_error(err)
        return None

    # ------------------------------------------------------------ Filter

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        if not satisfy_volume_conflicts(pod.pod, [p.pod for p in node_info.pods]):
            return Status(Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)
        try:
            s = self._state(state)
        except LookupError as err:
            return Status.as_error(err)
        if s.conflicting_pvc_ref_count > 0:
            return Status(Code.UNSCHEDULABLE, ERR_REASON_RWOP_CONFLICT)
        return None

    # ------------------------------------------------------------ queueing

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE), _after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD), _after_pvc_added),
        ]


def _after_pvc_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A claim the pod uses was created (its access mode could not be read before)."""
    if new.metadata.namespace != pod.metadata.namespace:
        return QueueingHint.QUEUE_SKIP
    for v in pod.spec.volumes:
        if v.persistent_volume_claim is not None and v.persistent_volume_claim.claim_name == new.metadata.name:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """The deleted pod held a conflicting disk, or a claim the pod uses (maybe ReadWriteOncePod)."""
    deleted: Pod = old
    if deleted.metadata.namespace != pod.metadata.namespace:
        return QueueingHint.QUEUE_SKIP
    if not satisfy_volume_conflicts(pod, [deleted]):
        return QueueingHint.QUEUE
    claims = {v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.persistent_volume_claim is not None}
    for v in deleted.spec.volumes:
        if v.persistent_volume_claim is not None and v.persistent_volume_claim.claim_name in claims:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
