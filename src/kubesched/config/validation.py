"""ValidateKubeSchedulerConfiguration (v1.34).

Each function returns the error strings in upstream's order; lists that
upstream builds as a field.ErrorList and turns into an aggregate drop exact
repeats (to_aggregate). The extension points are checked in a fixed order
where upstream iterates a Go map.

The plugin args validators are in validation_pluginargs.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kubesched.config.types import (
    API_VERSION,
    ClientConnection,
    Extender,
    KubeSchedulerConfiguration,
    LeaderElection,
    PluginSet,
    Profile,
)
from kubesched.config.validation_pluginargs import ARGS_VALIDATORS, duration_value
from kubesched.gocompat.field import (
    PATH_VALUE,
    FieldError,
    GoJSON,
    child,
    duplicate,
    index,
    invalid,
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
            invalid(child(path, "leaseDuration"), duration_value(le.lease_duration), "must be greater than zero")
        )
    if le.renew_deadline <= 0:
        errs.append(
            invalid(child(path, "renewDeadline"), duration_value(le.renew_deadline), "must be greater than zero")
        )
    if le.retry_period <= 0:
        errs.append(invalid(child(path, "retryPeriod"), duration_value(le.retry_period), "must be greater than zero"))
    if le.lease_duration <= le.renew_deadline:
        errs.append(
            invalid(
                child(path, "leaseDuration"), duration_value(le.renew_deadline), "must be greater than `RenewDeadline`"
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
        elif pc.name in ARGS_VALIDATORS:
            want, fn = ARGS_VALIDATORS[pc.name]
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
