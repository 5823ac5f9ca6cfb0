"""The core/v1 objects the scheduler reads: Pod, Node, Namespace, Service, volumes.

Only the fields the scheduler (or the embedded API server's defaulting) looks at
are declared; everything else in a manifest is ignored on decode.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from kubesched.api.meta import K8sStruct, LabelSelector, ObjectMeta

# A ResourceList as written in YAML: quantities may be strings or numbers.
ResourceList = dict[str, str | int | float]


# ---------------------------------------------------------------- node affinity


class NodeSelectorRequirement(K8sStruct):
    key: str = ""
    operator: str = ""
    values: list[str] = []


class NodeSelectorTerm(K8sStruct):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(K8sStruct):
    node_selector_terms: list[NodeSelectorTerm] = []


class PreferredSchedulingTerm(K8sStruct):
    weight: int = 0
    preference: NodeSelectorTerm = msgspec.field(default_factory=NodeSelectorTerm)


class NodeAffinity(K8sStruct):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


# ---------------------------------------------------------------- pod affinity


class PodAffinityTerm(K8sStruct):
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = []
    mismatch_label_keys: list[str] = []


class WeightedPodAffinityTerm(K8sStruct):
    weight: int = 0
    pod_affinity_term: PodAffinityTerm = msgspec.field(default_factory=PodAffinityTerm)


class PodAffinity(K8sStruct):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class PodAntiAffinity(K8sStruct):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(K8sStruct):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAntiAffinity | None = None


# ---------------------------------------------------------------- taints


class Taint(K8sStruct):
    key: str = ""  # required, but the API server's validation (not its decoder) says so
    value: str = ""
    effect: str = ""
    time_added: datetime | None = None


class Toleration(K8sStruct):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """Toleration.ToleratesTaint: effect, key, then operator (empty means Equal)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


# ---------------------------------------------------------------- containers


class ContainerPort(K8sStruct):
    container_port: int = 0
    host_port: int = 0
    # camel renaming would give "hostIp"; the API field keeps the acronym upper-case.
    host_ip: str = msgspec.field(default="", name="hostIP")
    protocol: str = "TCP"
    name: str = ""


class ResourceClaimRef(K8sStruct):
    name: str = ""
    request: str = ""


class ResourceRequirements(K8sStruct):
    requests: ResourceList = {}
    limits: ResourceList = {}
    claims: list[ResourceClaimRef] = []


class Container(K8sStruct):
    name: str = ""
    image: str = ""
    ports: list[ContainerPort] = []
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    restart_policy: str | None = None


class PodSchedulingGate(K8sStruct):
    name: str = ""


class TopologySpreadConstraint(K8sStruct):
    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


# ---------------------------------------------------------------- volumes


class PersistentVolumeClaimVolumeSource(K8sStruct):
    claim_name: str = ""
    read_only: bool = False


class GCEPersistentDiskVolumeSource(K8sStruct):
    pd_name: str = ""
    read_only: bool = False
    fs_type: str = ""
    partition: int = 0


class AWSElasticBlockStoreVolumeSource(K8sStruct):
    volume_id: str = msgspec.field(default="", name="volumeID")
    read_only: bool = False
    fs_type: str = ""
    partition: int = 0


class RBDVolumeSource(K8sStruct):
    monitors: list[str] = []
    image: str = ""
    pool: str = "rbd"
    read_only: bool = False


class ISCSIVolumeSource(K8sStruct):
    target_portal: str = ""
    iqn: str = ""
    lun: int = 0
    read_only: bool = False


class CSIVolumeSource(K8sStruct):
    driver: str = ""
    read_only: bool = False
    volume_attributes: dict[str, str] = {}


class PersistentVolumeClaimTemplate(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec | None = None


class EphemeralVolumeSource(K8sStruct):
    volume_claim_template: PersistentVolumeClaimTemplate | None = None


class Volume(K8sStruct):
    name: str = ""
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None
    csi: CSIVolumeSource | None = None
    ephemeral: EphemeralVolumeSource | None = None


class PodResourceClaim(K8sStruct):
    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodResourceClaimStatus(K8sStruct):
    name: str
    resource_claim_name: str | None = None


# ---------------------------------------------------------------- pod


class PodSpec(K8sStruct):
    containers: list[Container] = []
    init_containers: list[Container] = []
    node_name: str = ""
    node_selector: dict[str, str] = {}
    restart_policy: str = ""
    scheduler_name: str = ""
    priority_class_name: str = ""
    priority: int | None = None
    preemption_policy: str | None = None
    affinity: Affinity | None = None
    tolerations: list[Toleration] = []
    topology_spread_constraints: list[TopologySpreadConstraint] = []
    scheduling_gates: list[PodSchedulingGate] = []
    host_network: bool = False
    volumes: list[Volume] = []
    overhead: ResourceList = {}
    resources: ResourceRequirements | None = None
    termination_grace_period_seconds: int | None = None
    resource_claims: list[PodResourceClaim] = []
    active_deadline_seconds: int | None = None


class PodCondition(K8sStruct):
    type: str
    status: str
    # The pod's metadata.generation its writer saw (PodObservedGenerationTracking, on by default in 1.34).
    observed_generation: int = 0
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None


class PodStatus(K8sStruct):
    phase: str = ""
    nominated_node_name: str = ""
    conditions: list[PodCondition] = []
    start_time: datetime | None = None
    resource_claim_statuses: list[PodResourceClaimStatus] = []


class Pod(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


# ---------------------------------------------------------------- node


class NodeSpec(K8sStruct):
    unschedulable: bool = False
    taints: list[Taint] = []


class ContainerImage(K8sStruct):
    names: list[str] = []
    size_bytes: int = 0


class NodeCondition(K8sStruct):
    type: str
    status: str
    reason: str = ""
    message: str = ""


class NodeStatus(K8sStruct):
    capacity: ResourceList = {}
    allocatable: ResourceList = {}
    images: list[ContainerImage] = []
    conditions: list[NodeCondition] = []


class Node(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


# ---------------------------------------------------------------- others


class PodTemplateSpec(K8sStruct):
    """The pod template of a controller (ReplicationController, ReplicaSet, StatefulSet)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)


class NamespaceSpec(K8sStruct):
    finalizers: list[str] = []


class Namespace(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NamespaceSpec = msgspec.field(default_factory=NamespaceSpec)


class ServicePort(K8sStruct):
    name: str = ""
    protocol: str = ""
    app_protocol: str | None = None
    port: int = 0
    target_port: int | str | None = None
    node_port: int = 0


class ServiceSpec(K8sStruct):
    selector: dict[str, str] = {}
    # Read only by validation.
    type: str = ""
    ports: list[ServicePort] = []
    cluster_ip: str = msgspec.field(default="", name="clusterIP")
    cluster_ips: list[str] = msgspec.field(default=[], name="clusterIPs")
    external_name: str = ""
    session_affinity: str = ""


class Service(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ServiceSpec = msgspec.field(default_factory=ServiceSpec)


class ReplicationControllerSpec(K8sStruct):
    selector: dict[str, str] = {}
    replicas: int | None = None
    min_ready_seconds: int = 0
    template: PodTemplateSpec | None = None


class ReplicationController(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ReplicationControllerSpec = msgspec.field(default_factory=ReplicationControllerSpec)


# ---------------------------------------------------------------- storage (core/v1)


class ObjectReference(K8sStruct):
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    resource_version: str = ""


class VolumeResourceRequirements(K8sStruct):
    requests: ResourceList = {}
    limits: ResourceList = {}


class PersistentVolumeClaimSpec(K8sStruct):
    access_modes: list[str] = []
    selector: LabelSelector | None = None
    resources: VolumeResourceRequirements = msgspec.field(default_factory=VolumeResourceRequirements)
    volume_name: str = ""
    storage_class_name: str | None = None
    volume_mode: str | None = None
    volume_attributes_class_name: str | None = None


class PersistentVolumeClaimStatus(K8sStruct):
    phase: str = ""
    access_modes: list[str] = []
    capacity: ResourceList = {}


class PersistentVolumeClaim(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = msgspec.field(default_factory=PersistentVolumeClaimStatus)


class VolumeNodeAffinity(K8sStruct):
    required: NodeSelector | None = None


class LocalVolumeSource(K8sStruct):
    path: str = ""


class HostPathVolumeSource(K8sStruct):
    path: str = ""
    type: str | None = None


class NFSVolumeSource(K8sStruct):
    server: str = ""
    path: str = ""
    read_only: bool = False


class CSIPersistentVolumeSource(K8sStruct):
    driver: str = ""
    volume_handle: str = ""
    read_only: bool = False
    fs_type: str = ""
    volume_attributes: dict[str, str] = {}


class PersistentVolumeSpec(K8sStruct):
    capacity: ResourceList = {}
    access_modes: list[str] = []
    claim_ref: ObjectReference | None = None
    persistent_volume_reclaim_policy: str = ""
    storage_class_name: str = ""
    node_affinity: VolumeNodeAffinity | None = None
    volume_mode: str | None = None
    local: LocalVolumeSource | None = None
    host_path: HostPathVolumeSource | None = None
    csi: CSIPersistentVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    nfs: NFSVolumeSource | None = None
    # Sources the scheduler never reads, kept only so that validation sees which one is set.
    glusterfs: Any = None
    flocker: Any = None
    rbd: Any = None
    quobyte: Any = None
    cephfs: Any = None
    iscsi: Any = None
    cinder: Any = None
    fc: Any = None
    flex_volume: Any = None
    azure_file: Any = None
    vsphere_volume: Any = None
    photon_persistent_disk: Any = None
    portworx_volume: Any = None
    azure_disk: Any = None
    scale_io: Any = msgspec.field(default=None, name="scaleIO")
    storageos: Any = None
    volume_attributes_class_name: str | None = None


class PersistentVolumeStatus(K8sStruct):
    phase: str = ""


class PersistentVolume(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeSpec = msgspec.field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = msgspec.field(default_factory=PersistentVolumeStatus)
