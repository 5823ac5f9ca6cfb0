"""Property tests: DoNotSchedule verdicts equal a brute-force reading of the spreading rule on random clusters.

A node is admitted exactly when it has the topology key and
    matching pods in its domain + (1 if the pod matches) - global minimum <= maxSkew,
the global minimum being 0 while fewer than minDomains eligible domains exist.
So a filter verdict never lets maxSkew be exceeded. The harness also checks
that the whole-snapshot path agrees with the per-node reference, and that
AddPod keeps the state equal to a fresh PreFilter.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from topology_harness import filter_statuses, prefilter, run_filter

from kubesched.framework.status import Code
from kubesched.plugins.podtopologyspread.plugin import PodTopologySpread
from kubesched.testing import Env, make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"

node_st = st.tuples(st.sampled_from(("a", "b", "c", "d", None)), st.booleans())  # zone, tainted
pod_st = st.tuples(st.integers(0, 7), st.sampled_from(("x", "y")), st.sampled_from(("default", "other")), st.booleans())
constraint_st = st.fixed_dictionaries(
    {
        "key": st.sampled_from((ZONE, HOST)),
        "skew": st.integers(1, 3),
        "min_domains": st.one_of(st.none(), st.integers(1, 5)),
        "taints": st.sampled_from((None, "Honor", "Ignore")),
    }
)


def _build(nodes: list[Any], pods: list[Any], c: dict[str, Any], app: str) -> tuple[Env, Any, list[Any], list[Any]]:
    node_objs = []
    for i, (zone, tainted) in enumerate(nodes):
        taints = [{"key": "t", "value": "v", "effect": "NoSchedule"}] if tainted else None
        node_objs.append(make_node(f"n{i}", labels={ZONE: zone} if zone else {}, taints=taints))
    pod_objs = []
    placed = []
    gone = datetime(2025, 1, 1, tzinfo=UTC)
    for k, (ni, papp, ns, dying) in enumerate(pods):
        node = f"n{ni % len(nodes)}"
        p = make_pod(f"e{k}", labels={"app": papp}, namespace=ns, node=node)
        if dying:
            p = msgspec.structs.replace(p, metadata=msgspec.structs.replace(p.metadata, deletion_timestamp=gone))
        pod_objs.append(p)
        placed.append((node, papp, ns, dying))
    tsc: dict[str, Any] = {
        "maxSkew": c["skew"],
        "topologyKey": c["key"],
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "x"}},
    }
    if c["min_domains"] is not None:
        tsc["minDomains"] = c["min_domains"]
    if c["taints"] is not None:
        tsc["nodeTaintsPolicy"] = c["taints"]
    env = Env(node_objs, pod_objs)
    pod = env.pod_info(make_pod("in", labels={"app": app}, spec={"topologySpreadConstraints": [tsc]}))
    return env, pod, node_objs, placed


def _brute_force(node_objs: list[Any], placed: list[Any], c: dict[str, Any], app: str) -> dict[str, bool]:
    key = c["key"]
    labels = {n.metadata.name: n.metadata.labels for n in node_objs}
    eligible = [
        n.metadata.name
        for n in node_objs
        if key in n.metadata.labels and not (c["taints"] == "Honor" and n.spec.taints)
    ]
    counts: dict[str, int] = {labels[n][key]: 0 for n in eligible}
    for node, papp, ns, dying in placed:
        if node in eligible and papp == "x" and ns == "default" and not dying:
            counts[labels[node][key]] += 1
    min_domains = c["min_domains"] or 1
    global_min = 0 if len(counts) < min_domains else min(counts.values())
    self_match = 1 if app == "x" else 0
    out = {}
    for n in node_objs:
        name = n.metadata.name
        v = labels[name].get(key)
        out[name] = v is not None and counts.get(v, 0) + self_match - global_min <= c["skew"]
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(node_st, min_size=1, max_size=8),
    pods=st.lists(pod_st, max_size=14),
    c=constraint_st,
    app=st.sampled_from(("x", "y")),
)
def test_max_skew_is_never_exceeded(nodes: Any, pods: Any, c: Any, app: str) -> None:
    env, pod, node_objs, placed = _build(nodes, pods, c, app)
    got = run_filter(PodTopologySpread.new(None, env.handle), env, pod)
    want = _brute_force(node_objs, placed, c, app)
    for name, status in got.items():
        assert (status is None) == want[name], (name, status, c, placed)
        if status is not None and c["key"] not in next(n for n in node_objs if n.metadata.name == name).metadata.labels:
            assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(node_st, min_size=1, max_size=6),
    pods=st.lists(pod_st, max_size=8),
    extra=pod_st,
    c=constraint_st,
)
def test_add_pod_matches_a_fresh_prefilter_on_the_minimum(nodes: Any, pods: Any, extra: Any, c: Any) -> None:
    """One AddPod on a fresh state gives the same verdicts as recomputing with that pod bound."""
    env, pod, _, _ = _build(nodes, pods, c, "x")
    pl = PodTopologySpread.new(None, env.handle)
    state, _ = prefilter(pl, env, pod)
    ni, papp, ns, _dying = extra
    node = f"n{ni % len(nodes)}"
    added = make_pod("added", labels={"app": papp}, namespace=ns, node=node)
    pl.add_pod(state, pod, env.pod_info(added), env.node(node))
    incremental = filter_statuses(pl, env, pod, state)
    env2, pod2, _, _ = _build(nodes, [*pods, (ni, papp, ns, False)], c, "x")
    fresh = run_filter(PodTopologySpread.new(None, env2.handle), env2, pod2)
    assert incremental == fresh
