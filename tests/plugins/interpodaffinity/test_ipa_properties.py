"""Property tests: InterPodAffinity verdicts equal a brute-force reading of the rules on random clusters.

The harness also checks, for every example, that the whole-snapshot path agrees
with the per-node reference.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from topology_harness import run_filter

from kubesched.config.types import InterPodAffinityArgs
from kubesched.plugins.interpodaffinity.plugin import InterPodAffinity
from kubesched.testing import Env, make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
APPS = ("x", "y", "z")

zones = st.sampled_from(("a", "b", "c", None))
keys = st.sampled_from((ZONE, HOST))
terms = st.tuples(st.sampled_from(APPS), keys)
existing_pod = st.tuples(
    st.integers(0, 5),  # node (modulo the node count)
    st.sampled_from(APPS),
    st.sampled_from(("default", "other")),
    st.one_of(st.none(), terms),  # its own required anti-affinity
)


def _term(t: tuple[str, str]) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": t[0]}}, "topologyKey": t[1]}


def _build(
    node_zones: list[str | None], pods: list[Any], app: str, anti: list[Any], aff: list[Any]
) -> tuple[Env, Any, dict[str, dict[str, str]], list[tuple[str, str, str, Any]]]:
    nodes = []
    labels: dict[str, dict[str, str]] = {}
    for i, z in enumerate(node_zones):
        n = make_node(f"n{i}", labels={ZONE: z} if z else {})
        nodes.append(n)
        labels[n.metadata.name] = dict(n.metadata.labels)
    placed = []
    objs = []
    for k, (ni, papp, ns, pterm) in enumerate(pods):
        node = f"n{ni % len(node_zones)}"
        spec = None
        if pterm is not None:
            spec = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(pterm)]}}}
        objs.append(make_pod(f"e{k}", labels={"app": papp}, namespace=ns, node=node, spec=spec))
        placed.append((node, papp, ns, pterm))
    aff_spec: dict[str, Any] = {}
    if anti:
        aff_spec["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(t) for t in anti]}
    if aff:
        aff_spec["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(t) for t in aff]}
    env = Env(nodes, objs)
    pod = env.pod_info(make_pod("in", labels={"app": app}, spec={"affinity": aff_spec}))
    return env, pod, labels, placed


def _same_domain(labels: dict[str, dict[str, str]], a: str, b: str, key: str) -> bool:
    va, vb = labels[a].get(key), labels[b].get(key)
    return va is not None and va == vb


def _violates_anti(labels: Any, placed: Any, app: str, anti: list[Any], node: str) -> bool:
    for pnode, papp, ns, pterm in placed:
        # The incoming pod's terms apply to its own namespace, "default".
        if ns == "default" and any(papp == t[0] and _same_domain(labels, node, pnode, t[1]) for t in anti):
            return True
        # Symmetry: an existing pod's term applies to that pod's namespace.
        if pterm is not None and ns == "default" and app == pterm[0] and _same_domain(labels, node, pnode, pterm[1]):
            return True
    return False


def _satisfies_affinity(labels: Any, placed: Any, app: str, aff: list[Any], node: str) -> bool:
    if not aff:
        return True
    if any(t[1] not in labels[node] for t in aff):
        return False
    matching = [p for p in placed if p[2] == "default" and all(p[1] == t[0] for t in aff)]
    if all(any(_same_domain(labels, node, p[0], t[1]) for p in matching) for t in aff):
        return True
    # The first pod of a self-affine group: no matching pod is counted in any term's domain
    # (a matching pod on a node without the terms' keys is not counted).
    counted = [p for p in matching if any(t[1] in labels[p[0]] for t in aff)]
    return not counted and all(app == t[0] for t in aff)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    node_zones=st.lists(zones, min_size=1, max_size=6),
    pods=st.lists(existing_pod, max_size=10),
    app=st.sampled_from(APPS),
    anti=st.lists(terms, max_size=2),
)
def test_required_anti_affinity_is_never_violated(node_zones: Any, pods: Any, app: str, anti: Any) -> None:
    env, pod, labels, placed = _build(node_zones, pods, app, anti, [])
    got = run_filter(InterPodAffinity.new(InterPodAffinityArgs(), env.handle), env, pod)
    for node, status in got.items():
        violates = _violates_anti(labels, placed, app, anti, node)
        assert (status is None) == (not violates), (node, status, placed)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    node_zones=st.lists(zones, min_size=1, max_size=6),
    pods=st.lists(existing_pod, max_size=10),
    app=st.sampled_from(APPS),
    anti=st.lists(terms, max_size=1),
    aff=st.lists(terms, min_size=1, max_size=2),
)
def test_required_affinity_and_anti_affinity_verdicts(
    node_zones: Any, pods: Any, app: str, anti: Any, aff: Any
) -> None:
    env, pod, labels, placed = _build(node_zones, pods, app, anti, aff)
    got = run_filter(InterPodAffinity.new(InterPodAffinityArgs(), env.handle), env, pod)
    for node, status in got.items():
        ok = _satisfies_affinity(labels, placed, app, aff, node) and not _violates_anti(labels, placed, app, anti, node)
        assert (status is None) == ok, (node, status, placed)
