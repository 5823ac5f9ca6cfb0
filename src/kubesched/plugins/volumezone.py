"""VolumeZone (framework/plugins/volumezone).

A bound PV labelled with zones or regions (GA or beta keys; several zones
joined by "__") admits only nodes whose label for that key (or its GA
equivalent) is one of them. Nodes without any zone/region label are not
constrained. Unbound WaitForFirstConsumer claims are VolumeBinding's business.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kubesched.api.core import PersistentVolume, Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterVerdicts,
    PreFilterPlugin,
    PreFilterResult,
    VectorFilterPlugin,
)
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.gocompat.strconv import go_quote
from kubesched.plugins import names
from kubesched.plugins.volumebinding.pv_util import (
    GR_PV,
    GR_PVC,
    GR_STORAGE_CLASS,
    WAIT_FOR_FIRST_CONSUMER,
    NotFoundError,
    claim_class,
    get_or_raise,
)

_PRE_FILTER_KEY = "PreFilter" + names.VOLUME_ZONE

ERR_REASON_CONFLICT = "node(s) had no available volume zone"

ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
REGION_BETA = "failure-domain.beta.kubernetes.io/region"
ZONE_GA = "topology.kubernetes.io/zone"
REGION_GA = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (ZONE_BETA, REGION_BETA, ZONE_GA, REGION_GA)
_GA_OF = {ZONE_BETA: ZONE_GA, REGION_BETA: REGION_GA}


class PVTopology:
    """One topology label of a bound PV: the key and the values it admits."""

    __slots__ = ("key", "pv_name", "values")

    def __init__(self, pv_name: str, key: str, values: frozenset[str]) -> None:
        self.pv_name = pv_name
        self.key = key
        self.values = values

    def _tuple(self) -> tuple[str, str, frozenset[str]]:
        return self.pv_name, self.key, self.values

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PVTopology) and self._tuple() == other._tuple()

    def __hash__(self) -> int:
        return hash(self._tuple())


class _State:
    __slots__ = ("topologies",)

    def __init__(self, topologies: list[PVTopology]) -> None:
        self.topologies = topologies

    def clone(self) -> _State:
        return self


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """volumehelpers.LabelZonesToSet: "__"-separated zones; None when one of them is empty."""
    out = set()
    for zone in value.split("__"):
        z = zone.strip()
        if not z:
            return None
        out.add(z)
    return frozenset(out)


def pv_topologies(pv: PersistentVolume) -> list[PVTopology]:
    """The PV's zone/region constraints, in the order of TOPOLOGY_LABELS; unparsable labels are ignored."""
    out = []
    labels = pv.metadata.labels
    for key in TOPOLOGY_LABELS:
        value = labels.get(key)
        if value is None:
            continue
        zones = label_zones_to_set(value)
        if zones is None:
            continue
        out.append(PVTopology(pv.metadata.name, key, zones))
    return out


def node_satisfies(labels: dict[str, str], topologies: list[PVTopology]) -> bool:
    if not any(k in labels for k in TOPOLOGY_LABELS):
        return True
    for t in topologies:
        v = labels.get(t.key)
        if v is None:
            v = labels.get(_GA_OF.get(t.key, t.key))
        if v is None or v not in t.values:
            return False
    return True


class VolumeZone(PreFilterPlugin, VectorFilterPlugin, EnqueueExtensions):
    name = names.VOLUME_ZONE
    # The verdict reads the node's labels and the pod's PVs, never the node's pods.
    depends_on_node_pods = False

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    @classmethod
    def new(cls, args: Any, handle: Any) -> VolumeZone:
        return cls(handle)

    # ------------------------------------------------------------ PreFilter

    def _topologies(self, pod: Pod) -> tuple[list[PVTopology], Status | None]:
        """getPVbyPod: the topologies of the pod's bound PVs, or why the pod cannot be scheduled."""
        out: list[PVTopology] = []
        ns = pod.metadata.namespace
        pvcs = self.handle.lister("PersistentVolumeClaim")
        for v in pod.spec.volumes:
            if v.persistent_volume_claim is None:
                continue
            claim_name = v.persistent_volume_claim.claim_name
            if not claim_name:
                return [], Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "PersistentVolumeClaim had no name")
            try:
                pvc = get_or_raise(pvcs, GR_PVC, f"{ns}/{claim_name}", claim_name)
                pv_name = pvc.spec.volume_name
                if not pv_name:
                    sc_name = claim_class(pvc)
                    if not sc_name:
                        return [], Status(
                            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                            "PersistentVolumeClaim had no pv name and storageClass name",
                        )
                    sc = get_or_raise(self.handle.lister("StorageClass"), GR_STORAGE_CLASS, sc_name, sc_name)
                    if sc.volume_binding_mode is None:
                        return [], Status(
                            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                            f"VolumeBindingMode not set for StorageClass {go_quote(sc_name)}",
                        )
                    if sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER:
                        continue
                    return [], Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "PersistentVolume had no name")
                pv = get_or_raise(self.handle.lister("PersistentVolume"), GR_PV, pv_name, pv_name)
            except NotFoundError as err:
                return [], Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(err))
            out.extend(pv_topologies(pv))
        return out, None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.pod.spec.volumes:
            return None, SKIP
        topologies, status = self._topologies(pod.pod)
        if status is not None:
            return None, status
        if not topologies:
            return None, SKIP
        state.write(_PRE_FILTER_KEY, _State(topologies))
        return None, None

    # ------------------------------------------------------------ Filter

    def _state_topologies(self, state: CycleState, pod: PodInfo) -> tuple[list[PVTopology], Status | None]:
        s = state.get(_PRE_FILTER_KEY)
        if s is not None:
            return s.topologies, None
        return self._topologies(pod.pod)

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        if not pod.pod.spec.volumes:
            return None
        topologies, status = self._state_topologies(state, pod)
        if status is not None:
            return status
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        if not node_satisfies(node.metadata.labels, topologies):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)
        return None

    def filter_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> FilterVerdicts | None:
        if not pod.pod.spec.volumes:
            return None
        topologies, status = self._state_topologies(state, pod)
        if status is not None:
            return FilterVerdicts.uniform(np.ones(snapshot.num_nodes, bool), status)
        if not topologies:
            return None
        key = ("volume-zone", tuple(sorted((t.key, tuple(sorted(t.values))) for t in topologies)))

        def build() -> np.ndarray:
            return np.array(
                [
                    ni.node is not None and not node_satisfies(ni.node.metadata.labels, topologies)
                    for ni in snapshot.nodes
                ],
                dtype=bool,
            )

        failed = snapshot.node_cache(key, build)
        if not failed.any():
            return None
        return FilterVerdicts.uniform(failed, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT))

    # ------------------------------------------------------------ queueing

    def events_to_register(self) -> list[ClusterEventWithHint]:
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(ClusterEvent(Resource.STORAGE_CLASS, ActionType.ADD), _after_storage_class_added),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, add_update), _after_pvc_change),
            ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME, add_update), _after_pv_change),
        ]


def _after_pvc_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A claim the pod uses was created or changed (e.g. got bound)."""
    if new is None or new.metadata.namespace != pod.metadata.namespace:
        return QueueingHint.QUEUE_SKIP
    for v in pod.spec.volumes:
        if v.persistent_volume_claim is not None and v.persistent_volume_claim.claim_name == new.metadata.name:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _after_storage_class_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Only a new WaitForFirstConsumer class can help (the claim is then left to VolumeBinding)."""
    if new.volume_binding_mode != WAIT_FOR_FIRST_CONSUMER:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def _after_pv_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A new PV, or a PV whose zone/region labels changed."""
    if old is None:
        return QueueingHint.QUEUE
    if pv_topologies(old) != pv_topologies(new):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
