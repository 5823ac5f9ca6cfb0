"""apps/v1 workload controllers: the owners whose selectors feed the system default topology spreading
(ReplicaSet, StatefulSet) and the Deployments and DaemonSets a manifest may hold (k8s.io/api/apps/v1)."""

from __future__ import annotations

import msgspec

from kubesched.api.core import PersistentVolumeClaimTemplate, PodTemplateSpec
from kubesched.api.meta import K8sStruct, LabelSelector, ObjectMeta


class ReplicaSetSpec(K8sStruct):
    selector: LabelSelector | None = None
    replicas: int | None = None
    # Read only by validation.
    min_ready_seconds: int = 0
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)


class ReplicaSet(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ReplicaSetSpec = msgspec.field(default_factory=ReplicaSetSpec)


class RollingUpdateStatefulSetStrategy(K8sStruct):
    partition: int = 0


class StatefulSetUpdateStrategy(K8sStruct):
    type: str = ""
    rolling_update: RollingUpdateStatefulSetStrategy | None = None


class StatefulSetPersistentVolumeClaimRetentionPolicy(K8sStruct):
    when_deleted: str = ""
    when_scaled: str = ""


class StatefulSetOrdinals(K8sStruct):
    start: int = 0


class StatefulSetSpec(K8sStruct):
    selector: LabelSelector | None = None
    replicas: int | None = None
    # Read only by validation.
    service_name: str = ""
    pod_management_policy: str = ""
    update_strategy: StatefulSetUpdateStrategy = msgspec.field(default_factory=StatefulSetUpdateStrategy)
    persistent_volume_claim_retention_policy: StatefulSetPersistentVolumeClaimRetentionPolicy | None = None
    min_ready_seconds: int = 0
    ordinals: StatefulSetOrdinals | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    volume_claim_templates: list[PersistentVolumeClaimTemplate] = []


class StatefulSet(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: StatefulSetSpec = msgspec.field(default_factory=StatefulSetSpec)


# ---------------------------------------------------------------- Deployment


class RollingUpdateDeployment(K8sStruct):
    # intstr.IntOrString: a count or a percentage ("25%"); None when not given (defaulted to 25%).
    max_unavailable: int | str | None = None
    max_surge: int | str | None = None


class DeploymentStrategy(K8sStruct):
    type: str = ""
    rolling_update: RollingUpdateDeployment | None = None


class DeploymentSpec(K8sStruct):
    replicas: int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    # Read only by validation.
    strategy: DeploymentStrategy = msgspec.field(default_factory=DeploymentStrategy)
    min_ready_seconds: int = 0
    revision_history_limit: int | None = None
    progress_deadline_seconds: int | None = None
    paused: bool = False


class Deployment(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeploymentSpec = msgspec.field(default_factory=DeploymentSpec)


# ---------------------------------------------------------------- DaemonSet


class RollingUpdateDaemonSet(K8sStruct):
    # intstr.IntOrString; None when not given (defaulted to maxUnavailable 1, maxSurge 0).
    max_unavailable: int | str | None = None
    max_surge: int | str | None = None


class DaemonSetUpdateStrategy(K8sStruct):
    type: str = ""
    rolling_update: RollingUpdateDaemonSet | None = None


class DaemonSetSpec(K8sStruct):
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    # Read only by validation.
    update_strategy: DaemonSetUpdateStrategy = msgspec.field(default_factory=DaemonSetUpdateStrategy)
    min_ready_seconds: int = 0
    revision_history_limit: int | None = None


class DaemonSet(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DaemonSetSpec = msgspec.field(default_factory=DaemonSetSpec)
