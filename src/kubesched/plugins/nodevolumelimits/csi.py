"""NodeVolumeLimits (nodevolumelimits/csi.go): a CSI driver's per-node volume limit.

The limit is the CSINode's `allocatable.count` of the driver. Volumes are
counted by unique `driver/volumeHandle`: those of the pods on the node, plus
those VolumeAttachments still hold there, plus the pod's new ones (a volume
already on the node is not counted twice). Claims without a PV yet count
against their class's provisioner. In-tree GCE PD / AWS EBS volumes count
against their CSI driver (CSI migration is complete in v1.34) when the node
has a CSINode.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from kubesched.api.core import PersistentVolumeClaim, Pod, Volume
from kubesched.api.storage import CSINode
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interface import EnqueueExtensions, FilterPlugin, PreFilterPlugin, PreFilterResult
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.plugins import names
from kubesched.plugins.volumebinding import csi_translation as trans
from kubesched.plugins.volumebinding.pv_util import (
    GR_PVC,
    NotFoundError,
    check_ephemeral_owner,
    claim_class,
    ephemeral_claim_name,
)

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"


class _LookupError(RuntimeError):
    """An error counting a pod's volumes; `not_found` when a claim is missing (UnschedulableAndUnresolvable)."""

    def __init__(self, message: str, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found


def _safe_list(handle: Any, kind: str) -> list[Any]:
    """Objects of a kind the cluster may not serve (e.g. VolumeAttachment): none then."""
    try:
        return handle.lister(kind).list()
    except (KeyError, ValueError):
        return []


def volume_limits(csi_node: CSINode | None) -> dict[str, int]:
    """Driver -> allocatable count, for drivers that report one."""
    if csi_node is None:
        return {}
    return {
        d.name: d.allocatable.count
        for d in csi_node.spec.drivers
        if d.allocatable is not None and d.allocatable.count is not None
    }


def _uses_counted_volume(vol: Volume) -> bool:
    return vol.persistent_volume_claim is not None or vol.ephemeral is not None or trans.is_inline_migratable(vol)


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name = names.NODE_VOLUME_LIMITS

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        # A claim not bound yet counts as a volume of its own (a random handle that matches no other).
        self.random_volume_id_prefix = uuid.uuid4().hex

    @classmethod
    def new(cls, args: Any, handle: Any) -> NodeVolumeLimits:
        return cls(handle)

    # ------------------------------------------------------------ PreFilter

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if any(_uses_counted_volume(v) for v in pod.pod.spec.volumes):
            return None, None
        return None, SKIP

    # ------------------------------------------------------------ Filter

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        if not pod.pod.spec.volumes:
            return None
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        csi_node: CSINode | None = self.handle.lister("CSINode").get(node.metadata.name)
        new_volumes: dict[str, str] = {}
        try:
            self._attachable_volumes(pod.pod, csi_node, True, new_volumes)
        except _LookupError as err:
            if err.not_found:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(err))
            return Status.as_error(err)
        if not new_volumes:
            return None
        limits = volume_limits(csi_node)
        if not limits:
            return None
        attached: dict[str, str] = {}
        for existing in node_info.pods:
            try:
                self._attachable_volumes(existing.pod, csi_node, False, attached)
            except _LookupError as err:
                return Status.as_error(err)
        attached_count: dict[str, int] = {}
        for unique, driver in attached.items():
            new_volumes.pop(unique, None)
            attached_count[driver] = attached_count.get(driver, 0) + 1
        for unique, driver in self._attachment_volumes(node.metadata.name).items():
            if unique not in attached:
                attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for driver in new_volumes.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return Status(Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None

    def _attachable_volumes(self, pod: Pod, csi_node: CSINode | None, new_pod: bool, result: dict[str, str]) -> None:
        """filterAttachableVolumes: add the pod's CSI volumes to `result` (unique name -> driver)."""
        ns = pod.metadata.namespace
        pvcs = self.handle.lister("PersistentVolumeClaim")
        for vol in pod.spec.volumes:
            ephemeral = False
            if vol.persistent_volume_claim is not None:
                claim_name = vol.persistent_volume_claim.claim_name
            elif vol.ephemeral is not None:
                claim_name = ephemeral_claim_name(pod, vol)
                ephemeral = True
            else:
                self._inline_volume(vol, csi_node, result)
                continue
            if not claim_name:
                raise _LookupError("PersistentVolumeClaim had no name")
            pvc = pvcs.get(f"{ns}/{claim_name}")
            if pvc is None:
                if new_pod:
                    err = NotFoundError(GR_PVC, claim_name)
                    raise _LookupError(f"looking up PVC {ns}/{claim_name}: {err}", not_found=True)
                continue
            if ephemeral:
                msg = check_ephemeral_owner(pod, pvc)
                if msg is not None:
                    raise _LookupError(msg)
            driver, handle = self._driver_info(csi_node, pvc)
            if not driver or not handle:
                continue
            result[f"{driver}/{handle}"] = driver

    def _inline_volume(self, vol: Volume, csi_node: CSINode | None, result: dict[str, str]) -> None:
        """checkAttachableInlineVolume: a migratable inline volume counts against its CSI driver."""
        plugin = trans.plugin_name_of_volume(vol)
        if not plugin or not trans.is_migration_on_for_limits(csi_node, plugin):
            return
        try:
            _, handle = trans.inline_volume_handle(vol)
        except trans.TranslationError as err:
            raise _LookupError(f"converting volume({vol.name}) from inline to csi: {err}") from err
        try:
            driver = trans.csi_name_of(plugin)
        except trans.TranslationError as err:
            raise _LookupError(f"looking up CSI driver name for provisioner {plugin}: {err}") from err
        result[f"{driver}/{handle}"] = driver

    def _driver_info(self, csi_node: CSINode | None, pvc: PersistentVolumeClaim) -> tuple[str, str]:
        """getCSIDriverInfo: the bound PV's driver and handle (translated if in-tree), else the class's."""
        pv_name = pvc.spec.volume_name
        if not pv_name:
            return self._driver_info_from_class(csi_node, pvc)
        pv = self.handle.lister("PersistentVolume").get(pv_name)
        if pv is None:
            return self._driver_info_from_class(csi_node, pvc)
        source = pv.spec.csi
        if source is None:
            plugin = trans.plugin_name_of_pv(pv)
            if not plugin or not trans.is_migration_on_for_limits(csi_node, plugin):
                return "", ""
            try:
                source = trans.pv_csi_source(pv)
            except trans.TranslationError:
                return "", ""
        return source.driver, source.volume_handle

    def _driver_info_from_class(self, csi_node: CSINode | None, pvc: PersistentVolumeClaim) -> tuple[str, str]:
        """getCSIDriverInfoFromSC: an unbound claim counts as a new volume of its class's provisioner."""
        sc_name = claim_class(pvc)
        if not sc_name:
            return "", ""
        sc = self.handle.lister("StorageClass").get(sc_name)
        if sc is None:
            return "", ""
        handle = f"{self.random_volume_id_prefix}-{pvc.metadata.namespace}/{pvc.metadata.name}"
        provisioner = sc.provisioner
        if trans.is_migratable_plugin(provisioner):
            if not trans.is_migration_on_for_limits(csi_node, provisioner):
                return "", ""
            return trans.csi_name_of(provisioner), handle
        return provisioner, handle

    def _attachment_volumes(self, node_name: str) -> dict[str, str]:
        """getNodeVolumeAttachmentInfo: volumes VolumeAttachments hold on the node (maybe still detaching)."""
        out: dict[str, str] = {}
        pvs = None
        for va in _safe_list(self.handle, "VolumeAttachment"):
            spec = va.spec
            if spec.node_name != node_name or not spec.attacher or spec.source.persistent_volume_name is None:
                continue
            if pvs is None:
                pvs = self.handle.lister("PersistentVolume")
            pv = pvs.get(spec.source.persistent_volume_name)
            if pv is None or pv.spec.csi is None:
                continue
            out[f"{spec.attacher}/{pv.spec.csi.volume_handle}"] = spec.attacher
        return out

    # ------------------------------------------------------------ queueing

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, ActionType.UPDATE), _after_csi_node_updated),
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE), _after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD), _after_pvc_added),
            ClusterEventWithHint(ClusterEvent(Resource.VOLUME_ATTACHMENT, ActionType.DELETE), _after_va_deleted),
        ]


def _after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A pod that was on a node (or nominated to one) freed counted volumes."""
    deleted: Pod = old
    if not deleted.spec.volumes:
        return QueueingHint.QUEUE_SKIP
    if not deleted.spec.node_name and not deleted.status.nominated_node_name:
        return QueueingHint.QUEUE_SKIP
    if any(_uses_counted_volume(v) for v in deleted.spec.volumes):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _after_pvc_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A claim the pod uses was created."""
    if new.metadata.namespace != pod.metadata.namespace:
        return QueueingHint.QUEUE_SKIP
    for v in pod.spec.volumes:
        if v.persistent_volume_claim is not None:
            name = v.persistent_volume_claim.claim_name
        elif v.ephemeral is not None:
            name = ephemeral_claim_name(pod, v)
        else:
            continue
        if name == new.metadata.name:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _after_va_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A detached volume frees a slot for a pod with claims or with an inline volume of that driver."""
    for v in pod.spec.volumes:
        if v.persistent_volume_claim is not None:
            return QueueingHint.QUEUE
        plugin = trans.plugin_name_of_volume(v)
        if not plugin:
            continue
        try:
            driver, _ = trans.inline_volume_handle(v)
        except trans.TranslationError:
            return QueueingHint.QUEUE
        if old.spec.attacher == driver:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _after_csi_node_updated(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A driver's limit went up."""
    before = {d.name: (d.allocatable.count or 0) if d.allocatable is not None else 0 for d in old.spec.drivers}
    for d in new.spec.drivers:
        after = (d.allocatable.count or 0) if d.allocatable is not None else 0
        if after > before.get(d.name, 0):
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
