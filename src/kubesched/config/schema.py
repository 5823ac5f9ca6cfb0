"""The v1 wire types of KubeSchedulerConfiguration and its plugin args, as Go type descriptors.

The Go type names only serve the messages of the strict decoder (strictjson.py):
`json: cannot unmarshal ... into Go struct field NAME.path of type GO`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Scalar:
    kind: str  # int | float | bool | string | duration | bytes | raw
    go: str
    bits: int = 64


@dataclass(frozen=True)
class Ptr:
    elem: Any


@dataclass(frozen=True)
class Slice:
    elem: Any
    go: str


@dataclass(frozen=True)
class Map:
    elem: Any
    go: str


@dataclass(frozen=True)
class Struct:
    name: str  # reflect Name(), used in "Go struct field NAME.path"
    go: str  # reflect String(), used in "of type ..."
    fields: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


INT32 = Scalar("int", "int32", 32)
INT64 = Scalar("int", "int64", 64)
FLOAT32 = Scalar("float", "float32", 32)
BOOL = Scalar("bool", "bool")
STRING = Scalar("string", "string")
DURATION = Scalar("duration", "v1.Duration")
BYTES = Scalar("bytes", "[]uint8")
RAW = Scalar("raw", "runtime.RawExtension")
STRINGS = Slice(STRING, "[]string")
TYPE_META = {"apiVersion": STRING, "kind": STRING}


def named(go: str) -> Scalar:
    return Scalar("string", go)


# ---------------------------------------------------------------- core/v1 and meta/v1 pieces used by plugin args

LABEL_SELECTOR_REQUIREMENT = Struct(
    "LabelSelectorRequirement",
    "v1.LabelSelectorRequirement",
    {"key": STRING, "operator": named("v1.LabelSelectorOperator"), "values": STRINGS},
)
LABEL_SELECTOR = Struct(
    "LabelSelector",
    "v1.LabelSelector",
    {
        "matchLabels": Map(STRING, "map[string]string"),
        "matchExpressions": Slice(LABEL_SELECTOR_REQUIREMENT, "[]v1.LabelSelectorRequirement"),
    },
)
TOPOLOGY_SPREAD_CONSTRAINT = Struct(
    "TopologySpreadConstraint",
    "v1.TopologySpreadConstraint",
    {
        "maxSkew": INT32,
        "topologyKey": STRING,
        "whenUnsatisfiable": named("v1.UnsatisfiableConstraintAction"),
        "labelSelector": Ptr(LABEL_SELECTOR),
        "minDomains": Ptr(INT32),
        "nodeAffinityPolicy": Ptr(named("v1.NodeInclusionPolicy")),
        "nodeTaintsPolicy": Ptr(named("v1.NodeInclusionPolicy")),
        "matchLabelKeys": STRINGS,
    },
)
NODE_SELECTOR_REQUIREMENT = Struct(
    "NodeSelectorRequirement",
    "v1.NodeSelectorRequirement",
    {"key": STRING, "operator": named("v1.NodeSelectorOperator"), "values": STRINGS},
)
NODE_SELECTOR_TERM = Struct(
    "NodeSelectorTerm",
    "v1.NodeSelectorTerm",
    {
        "matchExpressions": Slice(NODE_SELECTOR_REQUIREMENT, "[]v1.NodeSelectorRequirement"),
        "matchFields": Slice(NODE_SELECTOR_REQUIREMENT, "[]v1.NodeSelectorRequirement"),
    },
)
NODE_SELECTOR = Struct(
    "NodeSelector", "v1.NodeSelector", {"nodeSelectorTerms": Slice(NODE_SELECTOR_TERM, "[]v1.NodeSelectorTerm")}
)
PREFERRED_SCHEDULING_TERM = Struct(
    "PreferredSchedulingTerm", "v1.PreferredSchedulingTerm", {"weight": INT32, "preference": NODE_SELECTOR_TERM}
)
NODE_AFFINITY = Struct(
    "NodeAffinity",
    "v1.NodeAffinity",
    {
        "requiredDuringSchedulingIgnoredDuringExecution": Ptr(NODE_SELECTOR),
        "preferredDuringSchedulingIgnoredDuringExecution": Slice(
            PREFERRED_SCHEDULING_TERM, "[]v1.PreferredSchedulingTerm"
        ),
    },
)

# ---------------------------------------------------------------- plugin args (kubescheduler.config.k8s.io/v1)

RESOURCE_SPEC = Struct("ResourceSpec", "v1.ResourceSpec", {"name": STRING, "weight": INT64})
SHAPE_POINT = Struct("UtilizationShapePoint", "v1.UtilizationShapePoint", {"utilization": INT32, "score": INT32})
SHAPE = Slice(SHAPE_POINT, "[]v1.UtilizationShapePoint")
RESOURCES = Slice(RESOURCE_SPEC, "[]v1.ResourceSpec")
SCORING_STRATEGY = Struct(
    "ScoringStrategy",
    "v1.ScoringStrategy",
    {
        "type": named("v1.ScoringStrategyType"),
        "resources": RESOURCES,
        "requestedToCapacityRatio": Ptr(
            Struct("RequestedToCapacityRatioParam", "v1.RequestedToCapacityRatioParam", {"shape": SHAPE})
        ),
    },
)

ARGS_KINDS: dict[str, Struct] = {
    "DefaultPreemptionArgs": Struct(
        "DefaultPreemptionArgs",
        "v1.DefaultPreemptionArgs",
        {**TYPE_META, "minCandidateNodesPercentage": Ptr(INT32), "minCandidateNodesAbsolute": Ptr(INT32)},
    ),
    "InterPodAffinityArgs": Struct(
        "InterPodAffinityArgs",
        "v1.InterPodAffinityArgs",
        {**TYPE_META, "hardPodAffinityWeight": Ptr(INT32), "ignorePreferredTermsOfExistingPods": BOOL},
    ),
    "NodeResourcesFitArgs": Struct(
        "NodeResourcesFitArgs",
        "v1.NodeResourcesFitArgs",
        {
            **TYPE_META,
            "ignoredResources": STRINGS,
            "ignoredResourceGroups": STRINGS,
            "scoringStrategy": Ptr(SCORING_STRATEGY),
        },
    ),
    "PodTopologySpreadArgs": Struct(
        "PodTopologySpreadArgs",
        "v1.PodTopologySpreadArgs",
        {
            **TYPE_META,
            "defaultConstraints": Slice(TOPOLOGY_SPREAD_CONSTRAINT, "[]v1.TopologySpreadConstraint"),
            "defaultingType": named("v1.PodTopologySpreadConstraintsDefaulting"),
        },
    ),
    "NodeResourcesBalancedAllocationArgs": Struct(
        "NodeResourcesBalancedAllocationArgs",
        "v1.NodeResourcesBalancedAllocationArgs",
        {**TYPE_META, "resources": RESOURCES},
    ),
    "VolumeBindingArgs": Struct(
        "VolumeBindingArgs", "v1.VolumeBindingArgs", {**TYPE_META, "bindTimeoutSeconds": Ptr(INT64), "shape": SHAPE}
    ),
    "NodeAffinityArgs": Struct(
        "NodeAffinityArgs", "v1.NodeAffinityArgs", {**TYPE_META, "addedAffinity": Ptr(NODE_AFFINITY)}
    ),
    "DynamicResourcesArgs": Struct(
        "DynamicResourcesArgs", "v1.DynamicResourcesArgs", {**TYPE_META, "filterTimeout": Ptr(DURATION)}
    ),
}

# ---------------------------------------------------------------- KubeSchedulerConfiguration

PLUGIN = Struct("Plugin", "v1.Plugin", {"name": STRING, "weight": Ptr(INT32)})
PLUGIN_SET = Struct(
    "PluginSet",
    "v1.PluginSet",
    {"enabled": Slice(PLUGIN, "[]v1.Plugin"), "disabled": Slice(PLUGIN, "[]v1.Plugin")},
)
# v1 field names of the extension points, in the order of the v1 Plugins struct.
EXTENSION_POINTS_V1 = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
    "multiPoint",
)
PLUGINS = Struct("Plugins", "v1.Plugins", {name: PLUGIN_SET for name in EXTENSION_POINTS_V1})
PLUGIN_CONFIG = Struct("PluginConfig", "v1.PluginConfig", {"name": STRING, "args": RAW})
PROFILE = Struct(
    "KubeSchedulerProfile",
    "v1.KubeSchedulerProfile",
    {
        "schedulerName": Ptr(STRING),
        "percentageOfNodesToScore": Ptr(INT32),
        "plugins": Ptr(PLUGINS),
        "pluginConfig": Slice(PLUGIN_CONFIG, "[]v1.PluginConfig"),
    },
)
EXTENDER = Struct(
    "Extender",
    "v1.Extender",
    {
        "urlPrefix": STRING,
        "filterVerb": STRING,
        "preemptVerb": STRING,
        "prioritizeVerb": STRING,
        "weight": INT64,
        "bindVerb": STRING,
        "enableHTTPS": BOOL,
        "tlsConfig": Ptr(
            Struct(
                "ExtenderTLSConfig",
                "v1.ExtenderTLSConfig",
                {
                    "insecure": BOOL,
                    "serverName": STRING,
                    "certFile": STRING,
                    "keyFile": STRING,
                    "caFile": STRING,
                    "certData": BYTES,
                    "keyData": BYTES,
                    "caData": BYTES,
                },
            )
        ),
        "httpTimeout": DURATION,
        "nodeCacheCapable": BOOL,
        "managedResources": Slice(
            Struct(
                "ExtenderManagedResource",
                "v1.ExtenderManagedResource",
                {"name": STRING, "ignoredByScheduler": BOOL},
            ),
            "[]v1.ExtenderManagedResource",
        ),
        "ignorable": BOOL,
    },
)
LEADER_ELECTION = Struct(
    "LeaderElectionConfiguration",
    "v1alpha1.LeaderElectionConfiguration",
    {
        "leaderElect": Ptr(BOOL),
        "leaseDuration": DURATION,
        "renewDeadline": DURATION,
        "retryPeriod": DURATION,
        "resourceLock": STRING,
        "resourceName": STRING,
        "resourceNamespace": STRING,
    },
)
CLIENT_CONNECTION = Struct(
    "ClientConnectionConfiguration",
    "v1alpha1.ClientConnectionConfiguration",
    {"kubeconfig": STRING, "acceptContentTypes": STRING, "contentType": STRING, "qps": FLOAT32, "burst": INT32},
)
KUBE_SCHEDULER_CONFIGURATION = Struct(
    "KubeSchedulerConfiguration",
    "v1.KubeSchedulerConfiguration",
    {
        **TYPE_META,
        "parallelism": Ptr(INT32),
        "leaderElection": LEADER_ELECTION,
        "clientConnection": CLIENT_CONNECTION,
        # inlined DebuggingConfiguration
        "enableProfiling": Ptr(BOOL),
        "enableContentionProfiling": Ptr(BOOL),
        "percentageOfNodesToScore": Ptr(INT32),
        "podInitialBackoffSeconds": Ptr(INT64),
        "podMaxBackoffSeconds": Ptr(INT64),
        "profiles": Slice(PROFILE, "[]v1.KubeSchedulerProfile"),
        "extenders": Slice(EXTENDER, "[]v1.Extender"),
        "delayCacheUntilActive": BOOL,
    },
)
