"""The PodGroup kind (scheduling.x-k8s.io/v1alpha1, from kubernetes-sigs/scheduler-plugins), known to scenarios.

Importing this module teaches kubesched's scenario loader the kind
(plugin_api.register_kind), so a scenario may hold PodGroup documents next to
its pods, and has `kubesched run` watch PodGroups (plugin_api.register_watched);
the Coscheduling plugin reads them through the handle's lister.
Only the spec fields the plugin uses are decoded; others are ignored, as
for every kind kubesched reads.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import msgspec

from kubesched.plugin_api import (
    APIResource,
    K8sStruct,
    ObjectMeta,
    QuantityError,
    parse_quantity,
    register_kind,
    register_watched,
)

API_VERSION = "scheduling.x-k8s.io/v1alpha1"
KIND = "PodGroup"
# Pods join a group by this label, whose value is the PodGroup's name (in the pod's namespace).
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


class PodGroupSpec(K8sStruct):
    # How many pods must be placed together before any of them binds.
    min_member: Annotated[int, msgspec.Meta(ge=0)] = 0
    # Resources the whole group needs at least, checked against the cluster's free capacity in PreFilter.
    min_resources: dict[str, Any] | None = None
    # How long the group's pods wait at Permit for the rest (default: the plugin's permitWaitingTimeSeconds).
    schedule_timeout_seconds: int | None = None

    def __post_init__(self) -> None:
        # Checked when the scenario is read, so PreFilter can trust them.
        for name, q in (self.min_resources or {}).items():
            try:
                parse_quantity(q)
            except QuantityError as err:
                raise ValueError(f"minResources.{name}: {err}") from None


class PodGroup(K8sStruct):
    api_version: str = API_VERSION
    kind: str = KIND
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)

    @property
    def creation_time(self) -> datetime | None:
        return self.metadata.creation_timestamp


register_kind(KIND, PodGroup, namespaced=True)
# `kubesched run` lists and watches PodGroups too (none when the cluster lacks the CRD).
POD_GROUPS = APIResource(KIND, "scheduling.x-k8s.io", "v1alpha1", "podgroups", namespaced=True, short_names=("pg",))
register_watched(POD_GROUPS)
