"""v1 defaulting (pkg/scheduler/apis/config/v1/defaults.go and default_plugins.go).

Works on the decoded v1 object (plain dicts, a missing key or None meaning
"not given"), because upstream's defaults depend on pointers being nil.
"""

from __future__ import annotations

import copy
from typing import Any

from kubesched.config.schema import ARGS_KINDS, EXTENSION_POINTS_V1
from kubesched.config.types import API_VERSION, DEFAULT_SCHEDULER_NAME, KIND, KubeSchedulerConfiguration

# v1.34 default plugins, all in multiPoint (DynamicResourceAllocation is GA, so
# DynamicResources sits right before DefaultPreemption). None = no weight given.
DEFAULT_MULTI_POINT: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", None),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)

DEFAULT_RESOURCE_SPEC = ({"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1})
DEFAULT_FILTER_TIMEOUT_NS = 10 * 1_000_000_000  # DRASchedulerFilterTimeout is on by default in v1.34
SECOND_NS = 1_000_000_000


def default_plugins() -> dict[str, dict[str, list[dict[str, Any]]]]:
    """getDefaultPlugins(): every extension point empty except multiPoint."""
    plugins: dict[str, dict[str, list[dict[str, Any]]]] = {ep: {} for ep in EXTENSION_POINTS_V1}
    plugins["multiPoint"] = {"enabled": [{"name": n, "weight": w} for n, w in DEFAULT_MULTI_POINT]}
    return plugins


def merge_plugin_set(default_set: dict[str, Any], custom_set: dict[str, Any] | None) -> dict[str, Any]:
    """mergePluginSet: defaults minus disabled ones (all for "*"), a re-enabled default keeps its
    position but takes the custom entry (weight included), other custom plugins are appended."""
    custom_set = custom_set or {}
    custom_enabled = custom_set.get("enabled") or []
    disabled_names: set[str] = set()
    disabled: list[dict[str, Any]] = []
    for p in list(custom_set.get("disabled") or []) + list(default_set.get("disabled") or []):
        disabled.append({"name": p.get("name", ""), "weight": None})  # weights of disabled plugins are dropped
        disabled_names.add(p.get("name", ""))
    by_name: dict[str, tuple[int, dict[str, Any]]] = {}
    for i, p in enumerate(custom_enabled):
        by_name[p.get("name", "")] = (i, p)
    replaced: set[int] = set()
    enabled: list[dict[str, Any]] = []
    if "*" not in disabled_names:
        for p in default_set.get("enabled") or []:
            if p["name"] in disabled_names:
                continue
            if p["name"] in by_name:
                idx, custom = by_name[p["name"]]
                p = custom
                replaced.add(idx)
            enabled.append(_plugin(p))
    for i, p in enumerate(custom_enabled):
        if i not in replaced:
            enabled.append(_plugin(p))
    out: dict[str, Any] = {}
    if enabled:
        out["enabled"] = enabled
    if disabled:
        out["disabled"] = disabled
    return out


def _plugin(p: dict[str, Any]) -> dict[str, Any]:
    return {"name": p.get("name", ""), "weight": p.get("weight")}


def merge_plugins(default: dict[str, Any], custom: dict[str, Any] | None) -> dict[str, Any]:
    if custom is None:
        return default
    return {ep: merge_plugin_set(default.get(ep, {}), custom.get(ep)) for ep in EXTENSION_POINTS_V1}


def enabled_plugin_names(plugins: dict[str, Any]) -> list[str]:
    """pluginsNames(): the sorted set of names enabled at any extension point."""
    names = {p["name"] for ep in plugins.values() for p in (ep.get("enabled") or [])}
    return sorted(names, key=lambda s: s.encode("utf-8"))


# ---------------------------------------------------------------- plugin args


def default_args(kind: str, args: dict[str, Any]) -> dict[str, Any]:
    """scheme.Default() for a typed v1 args object (mutates and returns it)."""
    if kind == "DefaultPreemptionArgs":
        if args.get("minCandidateNodesPercentage") is None:
            args["minCandidateNodesPercentage"] = 10
        if args.get("minCandidateNodesAbsolute") is None:
            args["minCandidateNodesAbsolute"] = 100
    elif kind == "InterPodAffinityArgs":
        if args.get("hardPodAffinityWeight") is None:
            args["hardPodAffinityWeight"] = 1
    elif kind == "VolumeBindingArgs":
        if args.get("bindTimeoutSeconds") is None:
            args["bindTimeoutSeconds"] = 600
        # The default shape needs the StorageCapacityScoring gate (off in v1.34).
    elif kind == "NodeResourcesBalancedAllocationArgs":
        resources = args.get("resources") or []
        if not resources:
            args["resources"] = copy.deepcopy(list(DEFAULT_RESOURCE_SPEC))
        else:
            for r in resources:
                if not r.get("weight"):
                    r["weight"] = 1
    elif kind == "PodTopologySpreadArgs":
        if not args.get("defaultingType"):
            args["defaultingType"] = "System"
    elif kind == "NodeResourcesFitArgs":
        if args.get("scoringStrategy") is None:
            args["scoringStrategy"] = {
                "type": "LeastAllocated",
                "resources": copy.deepcopy(list(DEFAULT_RESOURCE_SPEC)),
            }
        strategy = args["scoringStrategy"]
        if not strategy.get("resources"):
            strategy["resources"] = copy.deepcopy(list(DEFAULT_RESOURCE_SPEC))
        for r in strategy["resources"]:
            if not r.get("weight"):
                r["weight"] = 1
    elif kind == "DynamicResourcesArgs" and args.get("filterTimeout") is None:
        args["filterTimeout"] = DEFAULT_FILTER_TIMEOUT_NS
    return args


def set_defaults_profile(prof: dict[str, Any]) -> None:
    """setDefaults_KubeSchedulerProfile: merged plugins, defaulted user args, then default args
    for every other enabled plugin that takes args (alphabetically)."""
    prof["plugins"] = merge_plugins(default_plugins(), prof.get("plugins"))
    configs = prof.get("pluginConfig") or []
    existing: set[str] = set()
    for pc in configs:
        existing.add(pc.get("name", ""))
        args = pc.get("args")
        if isinstance(args, dict) and "_kind" in args:
            default_args(args["_kind"], args)
    for name in enabled_plugin_names(prof["plugins"]):
        if name in existing:
            continue
        kind = name + "Args"
        if kind not in ARGS_KINDS:
            continue
        configs.append({"name": name, "args": default_args(kind, {"_kind": kind})})
    prof["pluginConfig"] = configs


def set_defaults(cfg: dict[str, Any]) -> dict[str, Any]:
    """SetDefaults_KubeSchedulerConfiguration (mutates and returns the v1 object)."""
    if cfg.get("parallelism") is None:
        cfg["parallelism"] = 16
    profiles = cfg.get("profiles") or []
    if not profiles:
        profiles = [{}]
    cfg["profiles"] = profiles
    if len(profiles) == 1 and profiles[0].get("schedulerName") is None:
        profiles[0]["schedulerName"] = DEFAULT_SCHEDULER_NAME
    for prof in profiles:
        set_defaults_profile(prof)
    if cfg.get("percentageOfNodesToScore") is None:
        cfg["percentageOfNodesToScore"] = 0
    le = cfg.setdefault("leaderElection", {})
    if not le.get("resourceLock"):
        le["resourceLock"] = "leases"
    if not le.get("resourceNamespace"):
        le["resourceNamespace"] = "kube-system"
    if not le.get("resourceName"):
        le["resourceName"] = "kube-scheduler"
    cc = cfg.setdefault("clientConnection", {})
    if not cc.get("contentType"):
        cc["contentType"] = "application/vnd.kubernetes.protobuf"
    if not cc.get("qps"):
        cc["qps"] = 50.0
    if not cc.get("burst"):
        cc["burst"] = 100
    # RecommendedDefaultLeaderElectionConfiguration: zero durations take the defaults.
    if not le.get("leaseDuration"):
        le["leaseDuration"] = 15 * SECOND_NS
    if not le.get("renewDeadline"):
        le["renewDeadline"] = 10 * SECOND_NS
    if not le.get("retryPeriod"):
        le["retryPeriod"] = 2 * SECOND_NS
    if le.get("leaderElect") is None:
        le["leaderElect"] = True
    if cfg.get("podInitialBackoffSeconds") is None:
        cfg["podInitialBackoffSeconds"] = 1
    if cfg.get("podMaxBackoffSeconds") is None:
        cfg["podMaxBackoffSeconds"] = 10
    if cfg.get("enableProfiling") is None:
        cfg["enableProfiling"] = True
    if cfg["enableProfiling"] and cfg.get("enableContentionProfiling") is None:
        cfg["enableContentionProfiling"] = True
    return cfg


def default_configuration() -> KubeSchedulerConfiguration:
    """What kube-scheduler runs with when no --config is given (latest.Default())."""
    from kubesched.config.convert import to_internal

    cfg: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}
    return to_internal(set_defaults(cfg))
