"""The plugin args validators (upstream's validation_pluginargs.go, v1.34), apart from the configuration's
own checks because NodeResourcesFit's constructor runs one of them without loading the rest.

Each function returns the error strings in upstream's order (to_aggregate drops exact repeats).
"""

from __future__ import annotations

from typing import Any

from kubesched.config.types import (
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    ResourceSpec,
    UtilizationShapePoint,
    VolumeBindingArgs,
)
from kubesched.gocompat.duration import format_seconds
from kubesched.gocompat.field import (
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
from kubesched.gocompat.names import is_qualified_name

SCORING_STRATEGY_TYPES = ["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]
MAX_CUSTOM_PRIORITY_SCORE = 10


def duration_value(seconds: float) -> GoJSON:
    """A metav1.Duration as a bad value: encoding/json prints its String() quoted."""
    return GoJSON(format_seconds(seconds))


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
            str(invalid(child(path, "filterTimeout"), duration_value(args.filter_timeout), "must be zero or positive"))
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


# Plugin name (or args kind) -> (the args type it takes, its validator), as upstream dispatches them.
ARGS_VALIDATORS: dict[str, tuple[type, Any]] = {
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
