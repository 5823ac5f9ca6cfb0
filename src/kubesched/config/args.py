"""Typed plugin args: v1 wire form (camelCase dicts) to the internal dataclasses and back.

Also home of validate_node_resources_fit_args, the check NodeResourcesFit's
constructor runs (the config validation never sees those args, see README).
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.core import NodeAffinity
from kubesched.api.meta import LabelSelector
from kubesched.config.types import (
    API_VERSION,
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    TopologySpreadConstraintArg,
    UtilizationShapePoint,
    VolumeBindingArgs,
)
from kubesched.gocompat.duration import format_duration, seconds_to_ns

# The plugins whose args kube-scheduler decodes into a typed object ("<Name>Args" kinds).
ARGS_PLUGINS = (
    "DefaultPreemption",
    "DynamicResources",
    "InterPodAffinity",
    "NodeAffinity",
    "NodeResourcesBalancedAllocation",
    "NodeResourcesFit",
    "PodTopologySpread",
    "VolumeBinding",
)

# ---------------------------------------------------------------- v1 -> internal


def _resources(items: list[dict[str, Any]] | None) -> list[ResourceSpec]:
    return [ResourceSpec(name=r.get("name", ""), weight=r.get("weight", 0)) for r in items or []]


def _shape(items: list[dict[str, Any]] | None) -> list[UtilizationShapePoint]:
    return [UtilizationShapePoint(utilization=p.get("utilization", 0), score=p.get("score", 0)) for p in items or []]


def _fill_node_selector_term(term: dict[str, Any]) -> dict[str, Any]:
    for key in ("matchExpressions", "matchFields"):
        reqs = term.get(key) or []
        term[key] = [{"key": "", "operator": "", **r, "values": r.get("values") or []} for r in reqs]
    return term


def node_affinity_from_v1(v: dict[str, Any] | None) -> NodeAffinity | None:
    if v is None:
        return None
    v = dict(v)
    req = v.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is not None:
        v["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [_fill_node_selector_term(dict(t)) for t in req.get("nodeSelectorTerms") or []]
        }
    else:
        v.pop("requiredDuringSchedulingIgnoredDuringExecution", None)
    v["preferredDuringSchedulingIgnoredDuringExecution"] = [
        {"weight": t.get("weight", 0), "preference": _fill_node_selector_term(dict(t.get("preference") or {}))}
        for t in v.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    ]
    return msgspec.convert(v, NodeAffinity)


def label_selector_from_v1(v: dict[str, Any] | None) -> LabelSelector | None:
    if v is None:
        return None
    return msgspec.convert(
        {
            "matchLabels": v.get("matchLabels") or {},
            "matchExpressions": [
                {"key": "", "operator": "", **r, "values": r.get("values") or []}
                for r in v.get("matchExpressions") or []
            ],
        },
        LabelSelector,
    )


def _constraint(c: dict[str, Any]) -> TopologySpreadConstraintArg:
    return TopologySpreadConstraintArg(
        max_skew=c.get("maxSkew", 0),
        topology_key=c.get("topologyKey", ""),
        when_unsatisfiable=c.get("whenUnsatisfiable", ""),
        label_selector=label_selector_from_v1(c.get("labelSelector")),
        min_domains=c.get("minDomains"),
        node_affinity_policy=c.get("nodeAffinityPolicy"),
        node_taints_policy=c.get("nodeTaintsPolicy"),
        match_label_keys=list(c.get("matchLabelKeys") or []),
    )


def args_from_v1(kind: str, a: dict[str, Any]) -> Any:
    """Convert defaulted v1 args (a dict) into the internal dataclass for `kind`."""
    if kind == "DefaultPreemptionArgs":
        return DefaultPreemptionArgs(
            min_candidate_nodes_percentage=a.get("minCandidateNodesPercentage", 0),
            min_candidate_nodes_absolute=a.get("minCandidateNodesAbsolute", 0),
        )
    if kind == "InterPodAffinityArgs":
        return InterPodAffinityArgs(
            hard_pod_affinity_weight=a.get("hardPodAffinityWeight", 0),
            ignore_preferred_terms_of_existing_pods=a.get("ignorePreferredTermsOfExistingPods", False),
        )
    if kind == "NodeResourcesFitArgs":
        ss = a.get("scoringStrategy")
        strategy = None
        if ss is not None:
            rtcr = ss.get("requestedToCapacityRatio")
            strategy = ScoringStrategy(
                type=ss.get("type", ""),
                resources=_resources(ss.get("resources")),
                requested_to_capacity_ratio=None
                if rtcr is None
                else RequestedToCapacityRatioParam(shape=_shape(rtcr.get("shape"))),
            )
        return NodeResourcesFitArgs(
            ignored_resources=list(a.get("ignoredResources") or []),
            ignored_resource_groups=list(a.get("ignoredResourceGroups") or []),
            scoring_strategy=strategy,
        )
    if kind == "NodeResourcesBalancedAllocationArgs":
        return NodeResourcesBalancedAllocationArgs(resources=_resources(a.get("resources")))
    if kind == "PodTopologySpreadArgs":
        return PodTopologySpreadArgs(
            default_constraints=[_constraint(c) for c in a.get("defaultConstraints") or []],
            defaulting_type=a.get("defaultingType", ""),
        )
    if kind == "VolumeBindingArgs":
        out = VolumeBindingArgs(bind_timeout_seconds=a.get("bindTimeoutSeconds", 0), shape=_shape(a.get("shape")))
        # upstream tells a given-but-empty shape from none (the gate check looks at nil)
        out.__dict__["_shape_given"] = a.get("shape") is not None
        return out
    if kind == "NodeAffinityArgs":
        return NodeAffinityArgs(added_affinity=node_affinity_from_v1(a.get("addedAffinity")))
    if kind == "DynamicResourcesArgs":
        ft = a.get("filterTimeout")
        out_d = DynamicResourcesArgs(filter_timeout=0.0 if ft is None else ft / 1e9)
        if ft is None:
            out_d.__dict__["_filter_timeout_unset"] = True
        return out_d
    raise KeyError(kind)


# ---------------------------------------------------------------- internal -> v1 (encoding)


def _resources_v1(items: list[ResourceSpec]) -> list[dict[str, Any]]:
    out = []
    for r in items:
        d: dict[str, Any] = {"name": r.name}
        if r.weight:
            d["weight"] = r.weight
        out.append(d)
    return out


def _shape_v1(items: list[UtilizationShapePoint]) -> list[dict[str, Any]]:
    return [{"utilization": p.utilization, "score": p.score} for p in items]


def _struct_v1(obj: Any) -> Any:
    return msgspec.to_builtins(obj) if isinstance(obj, msgspec.Struct) else obj


def node_affinity_to_v1(na: Any) -> dict[str, Any]:
    d = _struct_v1(na)
    if not isinstance(d, dict):
        return d
    req = d.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is not None and "nodeSelectorTerms" not in req:
        req["nodeSelectorTerms"] = None  # Go: nil slice without omitempty
    return d


def args_to_v1(args: Any) -> Any:
    """The v1 JSON of internal args (with apiVersion/kind), or raw args as they are."""
    kind = type(args).__name__
    d: dict[str, Any] = {"kind": kind, "apiVersion": API_VERSION}
    if isinstance(args, DefaultPreemptionArgs):
        d["minCandidateNodesPercentage"] = args.min_candidate_nodes_percentage
        d["minCandidateNodesAbsolute"] = args.min_candidate_nodes_absolute
    elif isinstance(args, InterPodAffinityArgs):
        d["hardPodAffinityWeight"] = args.hard_pod_affinity_weight
        d["ignorePreferredTermsOfExistingPods"] = args.ignore_preferred_terms_of_existing_pods
    elif isinstance(args, NodeResourcesFitArgs):
        if args.ignored_resources:
            d["ignoredResources"] = list(args.ignored_resources)
        if args.ignored_resource_groups:
            d["ignoredResourceGroups"] = list(args.ignored_resource_groups)
        ss = args.scoring_strategy
        if ss is not None:
            s: dict[str, Any] = {}
            if ss.type:
                s["type"] = ss.type
            if ss.resources:
                s["resources"] = _resources_v1(ss.resources)
            if ss.requested_to_capacity_ratio is not None:
                shape = ss.requested_to_capacity_ratio.shape
                s["requestedToCapacityRatio"] = {"shape": _shape_v1(shape)} if shape else {}
            d["scoringStrategy"] = s
    elif isinstance(args, NodeResourcesBalancedAllocationArgs):
        if args.resources:
            d["resources"] = _resources_v1(args.resources)
    elif isinstance(args, PodTopologySpreadArgs):
        if args.default_constraints:
            d["defaultConstraints"] = [_constraint_v1(c) for c in args.default_constraints]
        if args.defaulting_type:
            d["defaultingType"] = args.defaulting_type
    elif isinstance(args, VolumeBindingArgs):
        d["bindTimeoutSeconds"] = args.bind_timeout_seconds
        if args.shape:
            d["shape"] = _shape_v1(args.shape)
    elif isinstance(args, NodeAffinityArgs):
        if args.added_affinity is not None:
            d["addedAffinity"] = node_affinity_to_v1(args.added_affinity)
    elif isinstance(args, DynamicResourcesArgs):
        unset = args.__dict__.get("_filter_timeout_unset", False)
        d["filterTimeout"] = None if unset else format_duration(seconds_to_ns(args.filter_timeout))
    else:
        return args
    return d


def _constraint_v1(c: TopologySpreadConstraintArg) -> dict[str, Any]:
    d: dict[str, Any] = {
        "maxSkew": c.max_skew,
        "topologyKey": c.topology_key,
        "whenUnsatisfiable": c.when_unsatisfiable,
    }
    if c.label_selector is not None:
        d["labelSelector"] = _struct_v1(c.label_selector)
    if c.min_domains is not None:
        d["minDomains"] = c.min_domains
    if c.node_affinity_policy is not None:
        d["nodeAffinityPolicy"] = c.node_affinity_policy
    if c.node_taints_policy is not None:
        d["nodeTaintsPolicy"] = c.node_taints_policy
    if c.match_label_keys:
        d["matchLabelKeys"] = list(c.match_label_keys)
    return d


def validate_node_resources_fit_args(args: NodeResourcesFitArgs) -> list[str]:
    """The errors NodeResourcesFit's constructor returns for its args, paths relative to the args.

    Empty when the args are fine. The caller wraps them as
    `initializing plugin "NodeResourcesFit": <e>` (several as "[e1, e2]").
    """
    from kubesched.config.validation_pluginargs import validate_node_resources_fit_args as _validate

    return _validate(args)
