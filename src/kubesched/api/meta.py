"""Object metadata and label selectors (k8s.io/apimachinery/pkg/apis/meta/v1)."""

from __future__ import annotations

from datetime import datetime

import msgspec


class K8sStruct(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True, gc=False):
    """Base of every API struct: camelCase on the wire, unknown fields ignored.

    API objects are trees (never part of a reference cycle), so the garbage
    collector need not track them: with hundreds of thousands of pods loaded,
    its full passes would otherwise walk every one.
    """


class OwnerReference(K8sStruct):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(K8sStruct):
    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    # Set by the API server: 1 at creation, +1 on each change of a pod's spec (never by status writes).
    generation: int = 0
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: list[OwnerReference] = []
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    deletion_grace_period_seconds: int | None = None
    finalizers: list[str] = []


class LabelSelectorRequirement(K8sStruct):
    key: str = ""  # both required, but the API server's validation (not its decoder) says so
    operator: str = ""
    values: list[str] = []


class LabelSelector(K8sStruct):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []
