"""apps/v1 owners whose selectors feed the system default topology spreading."""

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
