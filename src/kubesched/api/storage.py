"""storage.k8s.io/v1 objects: StorageClass, CSINode, CSIDriver."""

from __future__ import annotations

import msgspec

from kubesched.api.meta import K8sStruct, ObjectMeta


class TopologySelectorLabelRequirement(K8sStruct):
    key: str
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
    name: str
    node_id: str = ""
    topology_keys: list[str] = []
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(K8sStruct):
    drivers: list[CSINodeDriver] = []


class CSINode(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSINodeSpec = msgspec.field(default_factory=CSINodeSpec)


class CSIDriverSpec(K8sStruct):
    attach_required: bool | None = None
    storage_capacity: bool | None = None


class CSIDriver(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSIDriverSpec = msgspec.field(default_factory=CSIDriverSpec)
