"""VolumeBinding (volumebinding/volume_binding.go).

PreFilter: a pod without claims is skipped; a missing, lost or deleting claim
makes it UnschedulableAndUnresolvable, as does an unbound Immediate claim.
Filter: bound claims' PVs must admit the node (node affinity); each
WaitForFirstConsumer claim needs a matching available PV on the node, or a
class that can provision there. Reserve assumes the node's decision,
Unreserve reverts it, PreBind writes it through the API. Scoring needs the
StorageCapacityScoring gate (off in v1.34), so PreScore skips.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubesched.api.core import Pod
from kubesched.config.types import VolumeBindingArgs
from kubesched.framework.cycle_state import BIND_NOT_BEFORE, CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.gocompat.strconv import go_quote
from kubesched.plugins import names
from kubesched.plugins.volumebinding.binder import (
    BinderError,
    PodVolumeClaims,
    PodVolumes,
    VolumeBinder,
    volume_limit,
)
from kubesched.plugins.volumebinding.pv_util import (
    CLAIM_LOST,
    GR_PVC,
    MIGRATED_PLUGINS_ANNOTATION,
    check_ephemeral_owner,
    pod_claim_names,
    storage_value,
)
from kubesched.plugins.volumebinding.scorer import STORAGE_CAPACITY_SCORING, ClassResources, Scorer, build_scorer

_STATE_KEY = names.VOLUME_BINDING
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
# How often BindPodVolumes checks whether the claims it wrote are bound (seconds).
BIND_POLL_INTERVAL = 1.0


class _State:
    """Written at PreFilter; Filter fills the per-node decisions. Shared (not copied) by clones, as upstream."""

    __slots__ = ("all_bound", "has_static_bindings", "pod_volume_claims", "pod_volumes_by_node")

    def __init__(self, claims: PodVolumeClaims | None = None) -> None:
        self.all_bound = False
        self.pod_volume_claims = claims
        self.pod_volumes_by_node: dict[str, PodVolumes] = {}
        self.has_static_bindings = False

    def clone(self) -> _State:
        return self


def _has_no_claims(pod: PodInfo) -> bool:
    """Cached per pod object: the cheap test that lets PreFilter skip most pods."""
    v = pod.cache.get(_STATE_KEY)
    if v is None:
        v = not any(
            vol.persistent_volume_claim is not None or vol.ephemeral is not None for vol in pod.pod.spec.volumes
        )
        pod.cache[_STATE_KEY] = v
    return bool(v)


class VolumeBinding(
    PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ReservePlugin, PreBindPlugin, EnqueueExtensions
):
    name = names.VOLUME_BINDING
    # The verdict reads PVs, claims, classes and the node's labels, never the node's pods.
    depends_on_node_pods = False

    def __init__(self, handle: Any, args: VolumeBindingArgs | None = None) -> None:
        self.handle = handle
        self.args = args or VolumeBindingArgs()
        self.binder = VolumeBinder(handle.lister, handle.client)
        self.scorer: Scorer | None = None
        if STORAGE_CAPACITY_SCORING:
            self.scorer = build_scorer(self.args.shape)

    @classmethod
    def new(cls, args: Any, handle: Any) -> VolumeBinding:
        return cls(handle, args)

    # ------------------------------------------------------------ PreFilter

    def _pod_has_pvcs(self, pod: Pod) -> tuple[bool, str | None]:
        """podHasPVCs: whether the pod uses claims, and why it cannot be scheduled if a claim is unusable."""
        lister = self.handle.lister("PersistentVolumeClaim")
        ns = pod.metadata.namespace
        has = False
        for claim_name, ephemeral in pod_claim_names(pod):
            has = True
            pvc = lister.get(f"{ns}/{claim_name}")
            if pvc is None:
                if ephemeral:
                    return has, (
                        "waiting for ephemeral volume controller to create the persistentvolumeclaim "
                        f"{go_quote(claim_name)}"
                    )
                return has, f"{GR_PVC} {go_quote(claim_name)} not found"
            if pvc.status.phase == CLAIM_LOST:
                return has, (
                    f"persistentvolumeclaim {go_quote(pvc.metadata.name)} bound to non-existent persistentvolume "
                    f"{go_quote(pvc.spec.volume_name)}"
                )
            if pvc.metadata.deletion_timestamp is not None:
                return has, f"persistentvolumeclaim {go_quote(pvc.metadata.name)} is being deleted"
            if ephemeral:
                msg = check_ephemeral_owner(pod, pvc)
                if msg is not None:
                    return has, msg
        return has, None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if _has_no_claims(pod):
            state.write(_STATE_KEY, _State())
            return None, SKIP
        has, err = self._pod_has_pvcs(pod.pod)
        if err is not None:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, err)
        if not has:
            state.write(_STATE_KEY, _State())
            return None, SKIP
        try:
            claims = self.binder.get_pod_volume_claims(pod.pod)
        except BinderError as e:
            return None, Status.as_error(e)
        if claims.unbound_claims_immediate:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_UNBOUND_IMMEDIATE)
        state.write(_STATE_KEY, _State(claims))
        return None, None

    # ------------------------------------------------------------ Filter

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        try:
            s: _State = state.read(_STATE_KEY)
        except KeyError as e:
            return Status.as_error(e)
        if s.pod_volume_claims is None:
            return None
        try:
            pod_volumes, reasons = self.binder.find_pod_volumes(pod.pod, s.pod_volume_claims, node)
        except BinderError as e:
            return Status.as_error(e)
        if reasons:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)
        s.pod_volumes_by_node[node.metadata.name] = pod_volumes
        s.has_static_bindings = s.has_static_bindings or bool(pod_volumes.static_bindings)
        return None

    # ------------------------------------------------------------ Score

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        if self.scorer is None:
            return SKIP
        try:
            s: _State = state.read(_STATE_KEY)
        except KeyError as e:
            return Status.as_error(e)
        if s.has_static_bindings or STORAGE_CAPACITY_SCORING:
            return None
        return SKIP

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        if self.scorer is None:
            return 0, None
        try:
            s: _State = state.read(_STATE_KEY)
        except KeyError as e:
            return 0, Status.as_error(e)
        pod_volumes = s.pod_volumes_by_node.get(node_info.name)
        if pod_volumes is None:
            return 0, None
        classes: ClassResources = {}
        if pod_volumes.static_bindings or not STORAGE_CAPACITY_SCORING:
            for b in pod_volumes.static_bindings or ():
                requested, capacity = b.storage_resource()
                acc = classes.setdefault(b.storage_class_name(), [0, 0])
                acc[0] += requested
                acc[1] += capacity
        else:
            for p in pod_volumes.dynamic_provisions or ():
                if p.node_capacity is None:
                    continue
                acc = classes.setdefault(p.pvc.spec.storage_class_name or "", [0, 0])
                cap = p.node_capacity.capacity
                acc[1] = storage_value({"storage": cap}) if cap is not None else 0
                acc[0] += storage_value(p.pvc.spec.resources.requests)
        return self.scorer(classes), None

    # ------------------------------------------------------------ Reserve / PreBind

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        try:
            s: _State = state.read(_STATE_KEY)
        except KeyError as e:
            return Status.as_error(e)
        pod_volumes = s.pod_volumes_by_node.get(node_name)
        if pod_volumes is None:
            s.all_bound = True
            return None
        try:
            s.all_bound = self.binder.assume_pod_volumes(pod.pod, node_name, pod_volumes)
        except BinderError as e:
            return Status.as_error(e)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s: _State | None = state.get(_STATE_KEY)
        if s is None:
            return
        pod_volumes = s.pod_volumes_by_node.get(node_name)
        if pod_volumes is not None:
            self.binder.revert_assumed_pod_volumes(pod_volumes)

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        try:
            s: _State = state.read(_STATE_KEY)
        except KeyError as e:
            return Status.as_error(e)
        if s.all_bound:
            return None
        pod_volumes = s.pod_volumes_by_node.get(node_name)
        if pod_volumes is None:
            return Status.as_error(f"no pod volumes found for node {go_quote(node_name)}")
        try:
            self.binder.bind_pod_volumes(pod.pod, pod_volumes)
        except BinderError as e:
            return Status.as_error(e)
        # Upstream then polls the claims once a second until the PV controller has bound them (the first
        # look comes after a second): Bind follows a second later at the earliest.
        state.write(BIND_NOT_BEFORE, self.handle.now() + BIND_POLL_INTERVAL)
        return None

    # ------------------------------------------------------------ queueing

    def events_to_register(self) -> list[ClusterEventWithHint]:
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(ClusterEvent(Resource.STORAGE_CLASS, add_update), _after_storage_class_change),
            ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, add_update), _after_pvc_change),
            ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME, add_update)),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, add_update), _after_csi_node_change),
            ClusterEventWithHint(ClusterEvent(Resource.CSI_DRIVER, ActionType.UPDATE), _after_csi_driver_change),
            ClusterEventWithHint(ClusterEvent(Resource.CSI_STORAGE_CAPACITY, add_update), _after_capacity_change),
        ]


def _after_csi_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A new CSINode, or a change of its migrated plugins, may change how bound in-tree PVs are checked."""
    if old is None:
        return QueueingHint.QUEUE
    before = old.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
    after = new.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
    return QueueingHint.QUEUE if before != after else QueueingHint.QUEUE_SKIP


def _after_pvc_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A claim the pod uses was created or changed."""
    if pod.metadata.namespace != new.metadata.namespace:
        return QueueingHint.QUEUE_SKIP
    for claim_name, _ in pod_claim_names(pod):
        if claim_name == new.metadata.name:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _after_storage_class_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Any new class, or a change of allowedTopologies (the binding mode is immutable)."""
    if old is None:
        return QueueingHint.QUEUE
    if new.allowed_topologies != old.allowed_topologies:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _after_capacity_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A new CSIStorageCapacity, or a larger volume limit in one."""
    if old is None:
        return QueueingHint.QUEUE
    before, after = volume_limit(old), volume_limit(new)
    if after is not None and (before is None or after.value() > before.value()):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _after_csi_driver_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A driver of an inline CSI volume of the pod stopped publishing storage capacity."""
    for vol in pod.spec.volumes:
        if vol.csi is None or vol.csi.driver != new.metadata.name:
            continue
        if old.spec.storage_capacity and not new.spec.storage_capacity:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
