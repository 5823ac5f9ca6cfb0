"""ValidateKubeSchedulerConfiguration and the plugin args validators (v1.34).

Each function returns the error strings in upstream's order; lists that
upstream builds as a field.ErrorList and turns into an aggregate drop exact
repeats (to_aggregate). The extension points are checked in a fixed order
where upstream iterates a Go map.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kubesched.config.types import (
    API_VERSION,
    ClientConnection,
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    Extender,
    InterPodAffinityArgs,
    KubeSchedulerConfiguration,
    LeaderElection,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PluginSet,
    PodTopologySpreadArgs,
    Profile,
    ResourceSpec,
    UtilizationShapePoint,
    VolumeBindingArgs,
)
from kubesched.gocompat.duration import format_seconds
from kubesched.gocompat.field import (
    PATH_VALUE,
    FieldError,
    GoJSON,
    child,
    duplicate,
    forbidden,
    index,
    invalid,
    not_supported,
    required,
    to_aggregate,
)
from kubesched.gocompat.names import is_extended_resource_name, is_qualified_name

# Plugins removed from v1 ("v1" below is what upstream prints: it formats k8s.io/api/core/v1's group version).
INVALID_PLUGINS = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")
INVALID_PLUGINS_VERSION = "v1"

# Map keys of upstream's stagesToPluginSet (v1 names -> internal attribute names).
STAGES = (
    ("preEnqueue", "pre_enqueue"),
    ("queueSort", "queue_sort"),
    ("preFilter", "pre_filter"),
    ("filter", "filter"),
    ("postFilter", "post_filter"),
    ("preScore", "pre_score"),
    ("score", "score"),
    ("reserve", "reserve"),
    ("permit", "permit"),
    ("preBind", "pre_bind"),
    ("bind", "bind"),
    ("postBind", "post_bind"),
)

SCORING_STRATEGY_TYPES = ["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]
MAX_CUSTOM_PRIORITY_SCORE = 10


def _duration_value(seconds: float) -> GoJSON:
    """A metav1.Duration as a bad value: encoding/json prints its String() quoted."""
    return GoJSON(format_seconds(seconds))


def _strs(errs: list[FieldError]) -> list[str]:
    return [str(e) for e in errs]


# ---------------------------------------------------------------- component-base


def validate_client_connection(cc: ClientConnection, path: str) -> list[str]:
    errs = []
    if cc.burst < 0:
        errs.append(invalid(child(path, "burst"), cc.burst, "must be non-negative"))
    return to_aggregate(errs)


def validate_leader_election(le: LeaderElection, path: str) -> list[str]:
    errs: list[FieldError] = []
    if not le.leader_elect:
        return []
    if le.lease_duration <= 0:
        errs.append(
            invalid(child(path, "leaseDuration"), _duration_value(le.lease_duration), "must be greater than zero")
        )
    if le.renew_deadline <= 0:
        errs.append(
            invalid(child(path, "renewDeadline"), _duration_value(le.renew_deadline), "must be greater than zero")
        )
    if le.retry_period <= 0:
        errs.append(invalid(child(path, "retryPeriod"), _duration_value(le.retry_period), "must be greater than zero"))
    if le.lease_duration <= le.renew_deadline:
        errs.append(
            invalid(
                child(path, "leaseDuration"), _duration_value(le.renew_deadline), "must be greater than `RenewDeadline`"
            )
        )
    if not le.resource_lock:
        errs.append(required(child(path, "resourceLock")))
    if not le.resource_namespace:
        errs.append(required(child(path, "resourceNamespace")))
    if not le.resource_name:
        errs.append(required(child(path, "resourceName")))
    return to_aggregate(errs)


# ---------------------------------------------------------------- KubeSchedulerConfiguration


def validate_kube_scheduler_configuration(cfg: KubeSchedulerConfiguration) -> list[str]:
    """The flattened errors of upstream's ValidateKubeSchedulerConfiguration, in its order."""
    errs: list[str] = []
    errs += validate_client_connection(cfg.client_connection, "clientConnection")
    errs += validate_leader_election(cfg.leader_election, "leaderElection")
    le = cfg.leader_election
    if le.leader_elect and le.resource_lock != "leases":
        errs.append(
            str(invalid("leaderElection.resourceLock", le.resource_lock, 'resourceLock value must be "leases"'))
        )
    if cfg.parallelism <= 0:
        errs.append(str(invalid("parallelism", cfg.parallelism, "should be an integer value greater than zero")))
    if not cfg.profiles:
        errs.append(str(required("profiles")))
    else:
        seen: dict[str, int] = {}
        for i, prof in enumerate(cfg.profiles):
            path = index("profiles", i)
            errs += _validate_profile(path, API_VERSION, prof)
            if prof.scheduler_name in seen:
                errs.append(str(duplicate(child(path, "schedulerName"), PATH_VALUE)))
            seen[prof.scheduler_name] = i
        errs += _validate_common_queue_sort("profiles", cfg.profiles)
    errs += _validate_percentage("percentageOfNodesToScore", cfg.percentage_of_nodes_to_score)
    if cfg.pod_initial_backoff_seconds <= 0:
        errs.append(str(invalid("podInitialBackoffSeconds", cfg.pod_initial_backoff_seconds, "must be greater than 0")))
    if cfg.pod_max_backoff_seconds < cfg.pod_initial_backoff_seconds:
        errs.append(
            str(
                invalid(
                    "podMaxBackoffSeconds",
                    cfg.pod_max_backoff_seconds,
                    "must be greater than or equal to PodInitialBackoffSeconds",
                )
            )
        )
    errs += _validate_extenders("extenders", cfg.extenders)
    return errs


def _validate_percentage(path: str, value: int | None) -> list[str]:
    if value is not None and not 0 <= value <= 100:
        return [str(invalid(path, value, "not in valid range [0-100]"))]
    return []


def _invalid_plugin_msg(api_version: str) -> str:
    return f'was invalid in version "{INVALID_PLUGINS_VERSION}" (KubeSchedulerConfiguration is version "{api_version}")'


def _validate_profile(path: str, api_version: str, prof: Profile) -> list[str]:
    errs: list[str] = []
    if not prof.scheduler_name:
        errs.append(str(required(child(path, "schedulerName"))))
    errs += _validate_percentage(child(path, "percentageOfNodesToScore"), prof.percentage_of_nodes_to_score)
    errs += _validate_plugin_config(path, api_version, prof)
    return errs


_ARGS_VALIDATORS: dict[str, tuple[type, Any]] = {}


def _validate_plugin_config(path: str, api_version: str, prof: Profile) -> list[str]:
    errs: list[str] = []
    plugins_path = child(path, "plugins")
    for stage, attr in STAGES:
        ps: PluginSet = prof.plugins.extension_point(attr)
        for i, p in enumerate(ps.enabled):
            if p.name in INVALID_PLUGINS:
                errs.append(
                    str(
                        invalid(
                            index(child(plugins_path, stage, "enabled"), i), p.name, _invalid_plugin_msg(api_version)
                        )
                    )
                )
    seen: set[str] = set()
    for i, pc in enumerate(prof.plugin_config):
        pc_path = index(child(path, "pluginConfig"), i)
        if pc.name in seen:
            errs.append(str(duplicate(pc_path, pc.name)))
        else:
            seen.add(pc.name)
        if pc.name in INVALID_PLUGINS:
            errs.append(str(invalid(pc_path, pc.name, _invalid_plugin_msg(api_version))))
        elif pc.name in _ARGS_VALIDATORS:
            want, fn = _ARGS_VALIDATORS[pc.name]
            if not isinstance(pc.args, want):
                errs.append(str(invalid(child(pc_path, "args"), _object_value(pc.args), "has to match plugin args")))
            else:
                errs += fn(child(pc_path, "args"), pc.args)
    return errs


def _object_value(args: Any) -> GoJSON:
    """A runtime.Object bad value as encoding/json prints the internal Go value."""
    if args is None:
        return GoJSON(None)
    if dataclasses.is_dataclass(args):
        return GoJSON(_go_fields(args))
    # runtime.Unknown (raw args): Raw is not encoded, only the content metadata.
    return GoJSON({"ContentEncoding": "", "ContentType": "application/json"})


def _go_name(snake: str) -> str:
    return "".join(
        p.upper() if p in ("api", "url", "http", "https", "tls", "qps", "ca") else p.capitalize()
        for p in snake.split("_")
    )


def _go_fields(v: Any) -> Any:
    """An internal value with Go's field names (the internal types have no json tags)."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {_go_name(f.name): _go_fields(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, list):
        return [_go_fields(x) for x in v] if v else None
    return v


def _plugin_set_value(ps: PluginSet) -> GoJSON:
    def refs(items: list) -> Any:
        return [{"Name": p.name, "Weight": p.weight} for p in items] if items else None

    return GoJSON({"Enabled": refs(ps.enabled), "Disabled": refs(ps.disabled)})


def _validate_common_queue_sort(path: str, profiles: list[Profile]) -> list[str]:
    errs: list[str] = []
    canon = profiles[0].plugins.queue_sort
    name = canon.enabled[0].name if canon.enabled else ""
    if len(canon.enabled) > 1:
        errs.append(
            str(
                invalid(
                    child(index(path, 0), "plugins", "queueSort", "Enabled"),
                    len(canon.enabled),
                    "only one queue sort plugin can be enabled",
                )
            )
        )
    canon_args: Any = None
    for pc in profiles[0].plugin_config:
        if name and pc.name == name:
            canon_args = pc.args
    for i in range(1, len(profiles)):
        curr = profiles[i].plugins.queue_sort
        if curr != canon:
            errs.append(
                str(
                    invalid(
                        child(index(path, i), "plugins", "queueSort"),
                        _plugin_set_value(curr),
                        "must be the same for all profiles",
                    )
                )
            )
        for pc in profiles[i].plugin_config:
            if pc.name == name and pc.args != canon_args:
                errs.append(
                    str(
                        invalid(
                            child(index(path, i), "pluginConfig", "args"),
                            _object_value(pc.args),
                            "queueSort must be the same for all profiles",
                        )
                    )
                )
    return errs


def _validate_extenders(path: str, extenders: list[Extender]) -> list[str]:
    errs: list[str] = []
    binders = 0
    managed: set[str] = set()
    for i, ext in enumerate(extenders):
        p = index(path, i)
        if ext.prioritize_verb and ext.weight <= 0:
            errs.append(str(invalid(child(p, "weight"), ext.weight, "must have a positive weight applied to it")))
        if ext.bind_verb:
            binders += 1
        for j, res in enumerate(ext.managed_resources):
            rp = child(index(child(p, "managedResources"), j), "name")
            errs += _validate_extended_resource_name(rp, res.name)
            if res.name in managed:
                errs.append(str(invalid(rp, res.name, "duplicate extender managed resource name")))
            managed.add(res.name)
    if binders > 1:
        errs.append(
            str(invalid(path, f"found {binders} extenders implementing bind", "only one extender can implement bind"))
        )
    return errs


def _validate_extended_resource_name(path: str, name: str) -> list[str]:
    msgs = is_qualified_name(name)
    if msgs:
        return [str(invalid(path, GoJSON(name), m)) for m in msgs]  # a v1.ResourceName value
    if not is_extended_resource_name(name):
        return [str(invalid(path, name, "is an invalid extended resource name"))]
    return []


# ---------------------------------------------------------------- plugin args


def validate_default_preemption_args(path: str, args: DefaultPreemptionArgs) -> list[str]:
    errs: list[FieldError] = []
    pct_path = child(path, "minCandidateNodesPercentage")
    abs_path = child(path, "minCandidateNodesAbsolute")
    pct, absolute = args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute
    if pct < 0 or pct > 100:
        errs.append(invalid(pct_path, pct, "not in valid range [0, 100]"))
    if absolute < 0:
        errs.append(invalid(abs_path, absolute, "not in valid range [0, inf)"))
    if pct == 0 and absolute == 0:
        errs.append(invalid(pct_path, pct, "cannot be zero at the same time as minCandidateNodesAbsolute"))
        errs.append(invalid(abs_path, absolute, "cannot be zero at the same time as minCandidateNodesPercentage"))
    return to_aggregate(errs)


def validate_inter_pod_affinity_args(path: str, args: InterPodAffinityArgs) -> list[str]:
    w = args.hard_pod_affinity_weight
    if w < 0 or w > 100:
        return [str(invalid(child(path, "hardPodAffinityWeight"), w, "not in valid range [0, 100]"))]
    return []


def _validate_label_name(path: str, name: str) -> list[FieldError]:
    return [invalid(path, name, m) for m in is_qualified_name(name)]


def validate_pod_topology_spread_args(path: str, args: PodTopologySpreadArgs) -> list[str]:
    errs: list[FieldError] = []
    dt_path = child(path, "defaultingType")
    dt = args.defaulting_type
    if dt not in ("System", "List"):
        errs.append(not_supported(dt_path, GoJSON(dt), ["System", "List"]))
    elif dt == "System" and args.default_constraints:
        errs.append(invalid(dt_path, GoJSON(dt), "when .defaultConstraints are not empty"))
    dc_path = child(path, "defaultConstraints")
    constraints = args.default_constraints
    for i, c in enumerate(constraints):
        p = index(dc_path, i)
        if c.max_skew <= 0:
            errs.append(invalid(child(p, "maxSkew"), c.max_skew, "not in valid range (0, inf)"))
        tk_path = child(p, "topologyKey")
        if not c.topology_key:
            errs.append(required(tk_path, "can not be empty"))
        else:
            errs += _validate_label_name(tk_path, c.topology_key)
        wu_path = child(p, "whenUnsatisfiable")
        if not c.when_unsatisfiable:
            errs.append(required(wu_path, "can not be empty"))
        elif c.when_unsatisfiable not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.append(not_supported(wu_path, GoJSON(c.when_unsatisfiable), ["DoNotSchedule", "ScheduleAnyway"]))
        if c.label_selector is not None:
            errs.append(
                forbidden(
                    child(p, "labelSelector"), "constraint must not define a selector, as they deduced for each pod"
                )
            )
        for other in constraints[:i]:
            if c.topology_key == other.topology_key and c.when_unsatisfiable == other.when_unsatisfiable:
                errs.append(duplicate(index(dc_path, i), f"{{{c.topology_key}, {c.when_unsatisfiable}}}"))
                break
    return to_aggregate(errs)


def _validate_function_shape(shape: list[UtilizationShapePoint], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not shape:
        return [required(path, "at least one point must be specified")]
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errs.append(
                invalid(
                    child(index(path, i), "utilization"),
                    shape[i].utilization,
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, point in enumerate(shape):
        if point.utilization < 0 or point.utilization > 100:
            errs.append(invalid(child(index(path, i), "utilization"), point.utilization, "not in valid range [0, 100]"))
        if point.score < 0 or point.score > MAX_CUSTOM_PRIORITY_SCORE:
            errs.append(
                invalid(
                    child(index(path, i), "score"), point.score, f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"
                )
            )
    return errs


def _validate_resources(resources: list[ResourceSpec], path: str) -> list[FieldError]:
    errs = []
    for i, r in enumerate(resources):
        if r.weight <= 0 or r.weight > 100:
            errs.append(
                invalid(
                    child(index(path, i), "weight"),
                    r.weight,
                    f"resource weight of {r.name} not in valid range (0, 100]",
                )
            )
    return errs


def validate_node_resources_balanced_allocation_args(path: str, args: NodeResourcesBalancedAllocationArgs) -> list[str]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    rpath = child(path, "resources")
    for i, r in enumerate(args.resources):
        if r.name in seen:
            errs.append(duplicate(child(index(rpath, i), "name"), r.name))
        else:
            seen.add(r.name)
        if r.weight != 1:
            errs.append(invalid(child(index(rpath, i), "weight"), r.weight, "must be 1"))
    return to_aggregate(errs)


def validate_volume_binding_args(path: str, args: VolumeBindingArgs) -> list[str]:
    errs: list[FieldError] = []
    if args.bind_timeout_seconds < 0:
        errs.append(
            invalid(
                child(path, "bindTimeoutSeconds"),
                args.bind_timeout_seconds,
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
        )
    # StorageCapacityScoring is off in v1.34: any shape is refused.
    if args.shape or args.__dict__.get("_shape_given", False):
        value = GoJSON([{"Utilization": p.utilization, "Score": p.score} for p in args.shape])
        errs.append(
            invalid(
                child(path, "shape"),
                value,
                "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
            )
        )
    return to_aggregate(errs)


def validate_dynamic_resources_args(path: str, args: DynamicResourcesArgs) -> list[str]:
    # DRASchedulerFilterTimeout is on in v1.34.
    if not args.__dict__.get("_filter_timeout_unset", False) and args.filter_timeout < 0:
        return [
            str(invalid(child(path, "filterTimeout"), _duration_value(args.filter_timeout), "must be zero or positive"))
        ]
    return []


def validate_node_resources_fit_args(args: NodeResourcesFitArgs, path: str = "") -> list[str]:
    """ValidateNodeResourcesFitArgs (as NodeResourcesFit's constructor calls it, with a nil path)."""
    errs: list[FieldError] = []
    res_path = child(path, "ignoredResources")
    for i, res in enumerate(args.ignored_resources):
        errs += _validate_label_name(index(res_path, i), res)
    group_path = child(path, "ignoredResourceGroups")
    for i, group in enumerate(args.ignored_resource_groups):
        p = index(group_path, i)
        if "/" in group:
            errs.append(invalid(p, group, "resource group name can't contain '/'"))
        errs += _validate_label_name(p, group)
    ss = args.scoring_strategy
    if ss is not None:
        sp = child(path, "scoringStrategy")
        if ss.type not in SCORING_STRATEGY_TYPES:
            errs.append(not_supported(child(sp, "type"), GoJSON(ss.type), SCORING_STRATEGY_TYPES))
        errs += _validate_resources(ss.resources, child(sp, "resources"))
        if ss.requested_to_capacity_ratio is not None:
            errs += _validate_function_shape(ss.requested_to_capacity_ratio.shape, child(sp, "shape"))
    return to_aggregate(errs)


# ---------------------------------------------------------------- NodeAffinity (component-helpers nodeaffinity)


def _node_selector_term_errors(term: Any, path: str) -> list[str]:
    """newNodeSelectorTerm's parse errors: the scheduler compiles the added affinity the same way."""
    # api.labels imports this package (field errors, name checks), so it is imported on use.
    from kubesched.api.labels import parse_term

    return parse_term(term, path)[1]


def _is_empty_term(term: Any) -> bool:
    return not term.match_expressions and not term.match_fields


def validate_node_affinity_args(path: str, args: NodeAffinityArgs) -> list[str]:
    affinity = args.added_affinity
    if affinity is None:
        return []
    errs: list[str] = []
    ns = affinity.required_during_scheduling_ignored_during_execution
    if ns is not None:
        p = child(path, "addedAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
        for i, term in enumerate(ns.node_selector_terms):
            if _is_empty_term(term):
                continue
            errs += _node_selector_term_errors(term, index(p, i))
    terms = affinity.preferred_during_scheduling_ignored_during_execution
    if terms:
        p = child(path, "addedAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
        for i, t in enumerate(terms):
            if t.weight == 0 or _is_empty_term(t.preference):
                continue
            errs += _node_selector_term_errors(t.preference, index(p, i))
    return errs


_ARGS_VALIDATORS.update(
    {
        "DefaultPreemption": (DefaultPreemptionArgs, validate_default_preemption_args),
        "InterPodAffinity": (InterPodAffinityArgs, validate_inter_pod_affinity_args),
        "NodeAffinity": (NodeAffinityArgs, validate_node_affinity_args),
        "NodeResourcesBalancedAllocation": (
            NodeResourcesBalancedAllocationArgs,
            validate_node_resources_balanced_allocation_args,
        ),
        # Upstream keys this one by the kind, not the plugin name, so it never runs for NodeResourcesFit.
        "NodeResourcesFitArgs": (NodeResourcesFitArgs, lambda p, a: validate_node_resources_fit_args(a, p)),
        "PodTopologySpread": (PodTopologySpreadArgs, validate_pod_topology_spread_args),
        "VolumeBinding": (VolumeBindingArgs, validate_volume_binding_args),
        "DynamicResources": (DynamicResourcesArgs, validate_dynamic_resources_args),
    }
)
