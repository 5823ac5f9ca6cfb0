"""scheduling.k8s.io/v1 PriorityClass and policy/v1 PodDisruptionBudget."""

from __future__ import annotations

import msgspec

from kubesched.api.meta import K8sStruct, LabelSelector, ObjectMeta

# Built-in classes the API server creates in every cluster (pkg/apis/scheduling).
SYSTEM_CLUSTER_CRITICAL = "system-cluster-critical"
SYSTEM_NODE_CRITICAL = "system-node-critical"
SYSTEM_PRIORITY_CLASSES = {SYSTEM_CLUSTER_CRITICAL: 2000000000, SYSTEM_NODE_CRITICAL: 2000001000}
# HighestUserDefinablePriority: user classes may not go above one billion.
HIGHEST_USER_DEFINABLE_PRIORITY = 1000000000


class PriorityClass(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: int = 0
    global_default: bool = False
    preemption_policy: str | None = None
    description: str = ""


class PodDisruptionBudgetSpec(K8sStruct):
    selector: LabelSelector | None = None
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(K8sStruct):
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    disrupted_pods: dict[str, str] = {}


class PodDisruptionBudget(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus | None = None
