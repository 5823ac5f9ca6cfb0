"""Conversion of the defaulted v1 object (plain dicts) into the internal dataclasses."""

from __future__ import annotations

from typing import Any

from kubesched.config.args import args_from_v1
from kubesched.config.schema import EXTENSION_POINTS_V1
from kubesched.config.types import (
    EXTENSION_POINT_FIELDS,
    ClientConnection,
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    KubeSchedulerConfiguration,
    LeaderElection,
    PluginConfig,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
)

_NS = 1e9
# v1 extension point name -> internal attribute (same order: the internal tuple lacks only multiPoint).
_EP_ATTR = dict(zip(EXTENSION_POINTS_V1, (*EXTENSION_POINT_FIELDS, "multi_point"), strict=True))


def _plugin_set(v: dict[str, Any] | None) -> PluginSet:
    v = v or {}
    return PluginSet(
        enabled=[PluginRef(p.get("name", ""), p.get("weight") or 0) for p in v.get("enabled") or []],
        disabled=[PluginRef(p.get("name", ""), p.get("weight") or 0) for p in v.get("disabled") or []],
    )


def _plugins(v: dict[str, Any]) -> Plugins:
    return Plugins(**{_EP_ATTR[ep]: _plugin_set(v.get(ep)) for ep in EXTENSION_POINTS_V1})


def _plugin_config(pc: dict[str, Any]) -> PluginConfig:
    args = pc.get("args")
    if isinstance(args, dict) and "_kind" in args:
        args = args_from_v1(args["_kind"], args)
    return PluginConfig(name=pc.get("name", ""), args=args)


def _profile(p: dict[str, Any]) -> Profile:
    return Profile(
        scheduler_name=p.get("schedulerName") or "",
        percentage_of_nodes_to_score=p.get("percentageOfNodesToScore"),
        plugins=_plugins(p.get("plugins") or {}),
        plugin_config=[_plugin_config(pc) for pc in p.get("pluginConfig") or []],
    )


def _extender(e: dict[str, Any]) -> Extender:
    tls = e.get("tlsConfig")
    return Extender(
        url_prefix=e.get("urlPrefix", ""),
        filter_verb=e.get("filterVerb", ""),
        preempt_verb=e.get("preemptVerb", ""),
        prioritize_verb=e.get("prioritizeVerb", ""),
        weight=e.get("weight", 0),
        bind_verb=e.get("bindVerb", ""),
        enable_https=e.get("enableHTTPS", False),
        tls_config=None
        if tls is None
        else ExtenderTLSConfig(
            insecure=tls.get("insecure", False),
            server_name=tls.get("serverName", ""),
            cert_file=tls.get("certFile", ""),
            key_file=tls.get("keyFile", ""),
            ca_file=tls.get("caFile", ""),
            cert_data=tls.get("certData") or "",
            key_data=tls.get("keyData") or "",
            ca_data=tls.get("caData") or "",
        ),
        # Not defaulted by the config: the extender client applies its own default (5s) when 0.
        http_timeout=e.get("httpTimeout", 0) / _NS,
        node_cache_capable=e.get("nodeCacheCapable", False),
        managed_resources=[
            ExtenderManagedResource(name=r.get("name", ""), ignored_by_scheduler=r.get("ignoredByScheduler", False))
            for r in e.get("managedResources") or []
        ],
        ignorable=e.get("ignorable", False),
    )


def to_internal(cfg: dict[str, Any]) -> KubeSchedulerConfiguration:
    """Build the internal configuration from a defaulted v1 object."""
    le = cfg.get("leaderElection") or {}
    cc = cfg.get("clientConnection") or {}
    return KubeSchedulerConfiguration(
        parallelism=cfg.get("parallelism", 0),
        leader_election=LeaderElection(
            leader_elect=bool(le.get("leaderElect", False)),
            lease_duration=le.get("leaseDuration", 0) / _NS,
            renew_deadline=le.get("renewDeadline", 0) / _NS,
            retry_period=le.get("retryPeriod", 0) / _NS,
            resource_lock=le.get("resourceLock", ""),
            resource_name=le.get("resourceName", ""),
            resource_namespace=le.get("resourceNamespace", ""),
        ),
        client_connection=ClientConnection(
            kubeconfig=cc.get("kubeconfig", ""),
            accept_content_types=cc.get("acceptContentTypes", ""),
            content_type=cc.get("contentType", ""),
            qps=float(cc.get("qps", 0.0)),
            burst=cc.get("burst", 0),
        ),
        enable_profiling=bool(cfg.get("enableProfiling")),
        enable_contention_profiling=bool(cfg.get("enableContentionProfiling")),
        percentage_of_nodes_to_score=cfg.get("percentageOfNodesToScore") or 0,
        pod_initial_backoff_seconds=cfg.get("podInitialBackoffSeconds", 0),
        pod_max_backoff_seconds=cfg.get("podMaxBackoffSeconds", 0),
        profiles=[_profile(p) for p in cfg.get("profiles") or []],
        extenders=[_extender(e) for e in cfg.get("extenders") or []],
        delay_cache_until_active=cfg.get("delayCacheUntilActive", False),
    )
