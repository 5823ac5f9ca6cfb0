"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), the internal, defaulted form.

Field names follow the v1 API in snake_case. A plugin weight of 0 means
"not given" (upstream's internal type holds a plain integer). Plugin args are
typed dataclasses for the in-tree plugins that take args, and the raw mapping
for plugins the scheduler does not know (kept, never validated).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"


@dataclass
class PluginRef:
    name: str
    weight: int = 0


@dataclass
class PluginSet:
    enabled: list[PluginRef] = field(default_factory=list)
    disabled: list[PluginRef] = field(default_factory=list)


# Extension points in the order the v1 API lists them.
EXTENSION_POINT_FIELDS = (
    "pre_enqueue",
    "queue_sort",
    "pre_filter",
    "filter",
    "post_filter",
    "pre_score",
    "score",
    "reserve",
    "permit",
    "pre_bind",
    "bind",
    "post_bind",
)


@dataclass
class Plugins:
    pre_enqueue: PluginSet = field(default_factory=PluginSet)
    queue_sort: PluginSet = field(default_factory=PluginSet)
    pre_filter: PluginSet = field(default_factory=PluginSet)
    filter: PluginSet = field(default_factory=PluginSet)
    post_filter: PluginSet = field(default_factory=PluginSet)
    pre_score: PluginSet = field(default_factory=PluginSet)
    score: PluginSet = field(default_factory=PluginSet)
    reserve: PluginSet = field(default_factory=PluginSet)
    permit: PluginSet = field(default_factory=PluginSet)
    pre_bind: PluginSet = field(default_factory=PluginSet)
    bind: PluginSet = field(default_factory=PluginSet)
    post_bind: PluginSet = field(default_factory=PluginSet)
    multi_point: PluginSet = field(default_factory=PluginSet)

    def extension_point(self, name: str) -> PluginSet:
        return getattr(self, name)


# ---------------------------------------------------------------- plugin args


@dataclass
class ResourceSpec:
    name: str
    weight: int = 0


@dataclass
class UtilizationShapePoint:
    utilization: int
    score: int


@dataclass
class RequestedToCapacityRatioParam:
    shape: list[UtilizationShapePoint] = field(default_factory=list)


@dataclass
class ScoringStrategy:
    type: str = "LeastAllocated"
    resources: list[ResourceSpec] = field(default_factory=list)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None


@dataclass
class NodeResourcesFitArgs:
    ignored_resources: list[str] = field(default_factory=list)
    ignored_resource_groups: list[str] = field(default_factory=list)
    scoring_strategy: ScoringStrategy | None = None


@dataclass
class NodeResourcesBalancedAllocationArgs:
    resources: list[ResourceSpec] = field(default_factory=list)


@dataclass
class DefaultPreemptionArgs:
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


@dataclass
class InterPodAffinityArgs:
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


@dataclass
class NodeAffinityArgs:
    # A v1 NodeAffinity (kubesched.api.core.NodeAffinity) applied to every pod of the profile.
    added_affinity: Any = None


@dataclass
class TopologySpreadConstraintArg:
    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: Any = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = field(default_factory=list)


@dataclass
class PodTopologySpreadArgs:
    default_constraints: list[TopologySpreadConstraintArg] = field(default_factory=list)
    defaulting_type: str = "System"


@dataclass
class VolumeBindingArgs:
    bind_timeout_seconds: int = 600
    shape: list[UtilizationShapePoint] = field(default_factory=list)


@dataclass
class DynamicResourcesArgs:
    filter_timeout: float = 10.0


@dataclass
class PluginConfig:
    name: str
    args: Any = None


@dataclass
class Profile:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    percentage_of_nodes_to_score: int | None = None
    plugins: Plugins = field(default_factory=Plugins)
    plugin_config: list[PluginConfig] = field(default_factory=list)

    def args_for(self, plugin: str) -> Any:
        for pc in self.plugin_config:
            if pc.name == plugin:
                return pc.args
        return None


# ---------------------------------------------------------------- scheduler-wide


@dataclass
class LeaderElection:
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"


@dataclass
class ClientConnection:
    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = "application/vnd.kubernetes.protobuf"
    qps: float = 50.0
    burst: int = 100


@dataclass
class ExtenderTLSConfig:
    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: str = ""
    key_data: str = ""
    ca_data: str = ""


@dataclass
class ExtenderManagedResource:
    name: str
    ignored_by_scheduler: bool = False


@dataclass
class Extender:
    url_prefix: str = ""
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    bind_verb: str = ""
    enable_https: bool = False
    tls_config: ExtenderTLSConfig | None = None
    http_timeout: float = 30.0
    node_cache_capable: bool = False
    managed_resources: list[ExtenderManagedResource] = field(default_factory=list)
    ignorable: bool = False


@dataclass
class KubeSchedulerConfiguration:
    parallelism: int = 16
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    profiles: list[Profile] = field(default_factory=list)
    extenders: list[Extender] = field(default_factory=list)
    delay_cache_until_active: bool = False
