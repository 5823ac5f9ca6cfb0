"""storage.k8s.io/v1 objects: StorageClass, CSINode, CSIDriver, CSIStorageCapacity, VolumeAttachment."""

from __future__ import annotations

import msgspec

from kubesched.api.core import PersistentVolumeSpec
from kubesched.api.meta import K8sStruct, LabelSelector, ObjectMeta


class TopologySelectorLabelRequirement(K8sStruct):
    key: str = ""
    values: list[str] = []


class TopologySelectorTerm(K8sStruct):
    match_label_expressions: list[TopologySelectorLabelRequirement] = []


class StorageClass(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    provisioner: str = ""
    parameters: dict[str, str] = {}
    reclaim_policy: str | None = None
    volume_binding_mode: str | None = None
    allowed_topologies: list[TopologySelectorTerm] = []


class VolumeNodeResources(K8sStruct):
    count: int | None = None


class CSINodeDriver(K8sStruct):
    name: str = ""
    node_id: str = msgspec.field(default="", name="nodeID")
    topology_keys: list[str] = []
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(K8sStruct):
    drivers: list[CSINodeDriver] = []


class CSINode(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSINodeSpec = msgspec.field(default_factory=CSINodeSpec)


class TokenRequest(K8sStruct):
    audience: str = ""
    expiration_seconds: int | None = None


class CSIDriverSpec(K8sStruct):
    attach_required: bool | None = None
    storage_capacity: bool | None = None
    fs_group_policy: str | None = None
    volume_lifecycle_modes: list[str] = []
    token_requests: list[TokenRequest] = []


class CSIDriver(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSIDriverSpec = msgspec.field(default_factory=CSIDriverSpec)


class CSIStorageCapacity(K8sStruct):
    """Storage a CSI driver can still provision in a topology segment (namespaced)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    node_topology: LabelSelector | None = None
    storage_class_name: str = ""
    capacity: str | int | float | None = None
    maximum_volume_size: str | int | float | None = None


class VolumeAttachmentSource(K8sStruct):
    persistent_volume_name: str | None = None
    inline_volume_spec: PersistentVolumeSpec | None = None


class VolumeAttachmentSpec(K8sStruct):
    attacher: str = ""
    node_name: str = ""
    source: VolumeAttachmentSource = msgspec.field(default_factory=VolumeAttachmentSource)


class VolumeAttachmentStatus(K8sStruct):
    attached: bool = False


class VolumeAttachment(K8sStruct):
    """A volume attached (or being attached/detached) to a node by a CSI driver."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: VolumeAttachmentSpec = msgspec.field(default_factory=VolumeAttachmentSpec)
    status: VolumeAttachmentStatus = msgspec.field(default_factory=VolumeAttachmentStatus)
