"""The defaulted configuration as kube-scheduler encodes it (v1 JSON, e.g. --write-config-to).

Internal values are converted back to v1: every plugin weight becomes
explicit (0 when unset), every extension point is present, durations are Go
duration strings, fields tagged omitempty are left out when empty.
"""

from __future__ import annotations

import base64
from typing import Any

from kubesched.config.args import args_to_v1
from kubesched.config.convert import _EP_ATTR
from kubesched.config.schema import EXTENSION_POINTS_V1
from kubesched.config.types import API_VERSION, KIND, Extender, KubeSchedulerConfiguration, PluginSet, Profile
from kubesched.gocompat.duration import format_seconds
from kubesched.gocompat.jsonenc import go_float_literal


def _float32(x: float) -> int | float:
    """A float32 as encoding/json writes it (shortest float32 digits), read back as a JSON number."""
    lit = go_float_literal(x, 32)
    v = float(lit)
    return int(v) if v.is_integer() and abs(v) < 1e21 else v


def _plugin_set(ps: PluginSet) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if ps.enabled:
        d["enabled"] = [{"name": p.name, "weight": p.weight} for p in ps.enabled]
    if ps.disabled:
        d["disabled"] = [{"name": p.name, "weight": p.weight} for p in ps.disabled]
    return d


def _profile(p: Profile) -> dict[str, Any]:
    d: dict[str, Any] = {"schedulerName": p.scheduler_name}
    if p.percentage_of_nodes_to_score is not None:
        d["percentageOfNodesToScore"] = p.percentage_of_nodes_to_score
    d["plugins"] = {ep: _plugin_set(p.plugins.extension_point(_EP_ATTR[ep])) for ep in EXTENSION_POINTS_V1}
    if p.plugin_config:
        d["pluginConfig"] = [{"name": pc.name, "args": args_to_v1(pc.args)} for pc in p.plugin_config]
    return d


def _b64(s: str) -> str:
    return base64.b64encode(s.encode("latin-1")).decode("ascii")


def _extender(e: Extender) -> dict[str, Any]:
    d: dict[str, Any] = {"urlPrefix": e.url_prefix}
    for key, val in (
        ("filterVerb", e.filter_verb),
        ("preemptVerb", e.preempt_verb),
        ("prioritizeVerb", e.prioritize_verb),
        ("weight", e.weight),
        ("bindVerb", e.bind_verb),
        ("enableHTTPS", e.enable_https),
    ):
        if val:
            d[key] = val
    if e.tls_config is not None:
        t = e.tls_config
        tls: dict[str, Any] = {}
        for key, val in (
            ("insecure", t.insecure),
            ("serverName", t.server_name),
            ("certFile", t.cert_file),
            ("keyFile", t.key_file),
            ("caFile", t.ca_file),
        ):
            if val:
                tls[key] = val
        for key, val in (("certData", t.cert_data), ("keyData", t.key_data), ("caData", t.ca_data)):
            if val:
                tls[key] = _b64(val)
        d["tlsConfig"] = tls
    d["httpTimeout"] = format_seconds(e.http_timeout)
    if e.node_cache_capable:
        d["nodeCacheCapable"] = True
    if e.managed_resources:
        d["managedResources"] = [
            {"name": r.name, **({"ignoredByScheduler": True} if r.ignored_by_scheduler else {})}
            for r in e.managed_resources
        ]
    if e.ignorable:
        d["ignorable"] = True
    return d


def encode_defaulted(cfg: KubeSchedulerConfiguration) -> dict[str, Any]:
    """The v1 JSON object (as a dict) kube-scheduler would write for this configuration."""
    le = cfg.leader_election
    cc = cfg.client_connection
    d: dict[str, Any] = {
        "kind": KIND,
        "apiVersion": API_VERSION,
        "parallelism": cfg.parallelism,
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": format_seconds(le.lease_duration),
            "renewDeadline": format_seconds(le.renew_deadline),
            "retryPeriod": format_seconds(le.retry_period),
            "resourceLock": le.resource_lock,
            "resourceName": le.resource_name,
            "resourceNamespace": le.resource_namespace,
        },
        "clientConnection": {
            "kubeconfig": cc.kubeconfig,
            "acceptContentTypes": cc.accept_content_types,
            "contentType": cc.content_type,
            "qps": _float32(cc.qps),
            "burst": cc.burst,
        },
        "enableProfiling": cfg.enable_profiling,
        "enableContentionProfiling": cfg.enable_contention_profiling,
        "percentageOfNodesToScore": cfg.percentage_of_nodes_to_score,
        "podInitialBackoffSeconds": cfg.pod_initial_backoff_seconds,
        "podMaxBackoffSeconds": cfg.pod_max_backoff_seconds,
    }
    if cfg.profiles:
        d["profiles"] = [_profile(p) for p in cfg.profiles]
    if cfg.extenders:
        d["extenders"] = [_extender(e) for e in cfg.extenders]
    if cfg.delay_cache_until_active:
        d["delayCacheUntilActive"] = True
    return d
