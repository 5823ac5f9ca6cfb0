"""apps/v1 owners whose selectors feed the system default topology spreading."""

from __future__ import annotations

import msgspec

from kubesched.api.meta import K8sStruct, LabelSelector, ObjectMeta


class ReplicaSetSpec(K8sStruct):
    selector: LabelSelector | None = None
    replicas: int | None = None


class ReplicaSet(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ReplicaSetSpec = msgspec.field(default_factory=ReplicaSetSpec)


class StatefulSet(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ReplicaSetSpec = msgspec.field(default_factory=ReplicaSetSpec)
