"""InterPodAffinity PreFilter / Filter / AddPod / RemovePod, rule by rule."""

from __future__ import annotations

from typing import Any

from topology_harness import filter_statuses, prefilter, run_filter

from kubesched.api.decode import decode
from kubesched.config.types import InterPodAffinityArgs
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.plugins.interpodaffinity.plugin import InterPodAffinity
from kubesched.testing import Env, make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
AFFINITY = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"


def term(labels: dict[str, str] | None, key: str = ZONE, **extra: Any) -> dict[str, Any]:
    t: dict[str, Any] = {"topologyKey": key, **extra}
    if labels is not None:
        t["labelSelector"] = {"matchLabels": labels}
    return t


def affinity(required: list[dict[str, Any]] | None = None, anti: list[dict[str, Any]] | None = None) -> dict:
    a: dict[str, Any] = {}
    if required:
        a["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": required}
    if anti:
        a["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
    return {"affinity": a}


def cluster(pods: list[Any] = (), objects: list[Any] = ()) -> Env:  # type: ignore[assignment]
    nodes = [
        make_node("a1", labels={ZONE: "a"}),
        make_node("a2", labels={ZONE: "a"}),
        make_node("b1", labels={ZONE: "b"}),
        make_node("nz"),  # no zone label
    ]
    return Env(nodes, pods, objects)


def plugin(env: Env, **args: Any) -> InterPodAffinity:
    return InterPodAffinity.new(InterPodAffinityArgs(**args), env.handle)


def passing(statuses: dict[str, Any]) -> set[str]:
    return {n for n, s in statuses.items() if s is None}


def ns(name: str, labels: dict[str, str]) -> tuple[str, Any]:
    return ("Namespace", decode("Namespace", {"metadata": {"name": name, "labels": labels}}))


# ---------------------------------------------------------------- PreFilter Skip


def test_prefilter_skips_without_required_terms_or_matching_existing_anti_affinity() -> None:
    env = cluster([make_pod("e", labels={"app": "x"}, node="a1", spec=affinity(anti=[term({"app": "y"})]))])
    pl = plugin(env)
    _, s = prefilter(pl, env, env.pod_info(make_pod("p", labels={"app": "z"})))
    assert s is not None and s.code == Code.SKIP
    # The existing pod's anti-affinity matches app=y: no Skip, and zone a is closed.
    p = env.pod_info(make_pod("p", labels={"app": "y"}))
    state, s = prefilter(pl, env, p)
    assert s is None
    got = filter_statuses(pl, env, p, state)
    assert passing(got) == {"b1", "nz"}
    assert got["a2"] is not None and got["a2"].code == Code.UNSCHEDULABLE and got["a2"].message() == EXISTING


def test_existing_anti_affinity_needs_its_topology_key_on_its_node() -> None:
    env = cluster([make_pod("e", node="nz", spec=affinity(anti=[term({"app": "y"})]))])
    _, s = prefilter(plugin(env), env, env.pod_info(make_pod("p", labels={"app": "y"})))
    assert s is not None and s.code == Code.SKIP


# ---------------------------------------------------------------- required affinity


def test_affinity_requires_topology_key_and_a_matching_pod_in_the_domain() -> None:
    env = cluster([make_pod("db", labels={"app": "db"}, node="a2")])
    pl = plugin(env)
    got = run_filter(pl, env, env.pod_info(make_pod("p", spec=affinity([term({"app": "db"})]))))
    assert passing(got) == {"a1", "a2"}
    for n in ("b1", "nz"):
        s = got[n]
        assert s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and s.message() == AFFINITY


def test_one_pod_must_match_all_affinity_terms() -> None:
    env = cluster([make_pod("x", labels={"app": "x"}, node="a1"), make_pod("y", labels={"tier": "y"}, node="a1")])
    spec = affinity([term({"app": "x"}), term({"tier": "y"}, HOST)])
    assert passing(run_filter(plugin(env), env, env.pod_info(make_pod("p", spec=spec)))) == set()
    env = cluster([make_pod("xy", labels={"app": "x", "tier": "y"}, node="a1")])
    assert passing(run_filter(plugin(env), env, env.pod_info(make_pod("p", spec=spec)))) == {"a1"}


def test_first_pod_of_a_self_affine_group_lands_anywhere_with_the_keys() -> None:
    env = cluster([make_pod("other", labels={"app": "other"}, node="a1")])
    spec = affinity([term({"app": "solo"})])
    got = run_filter(plugin(env), env, env.pod_info(make_pod("p", labels={"app": "solo"}, spec=spec)))
    assert passing(got) == {"a1", "a2", "b1"}  # nz lacks the zone key
    # Not self-matching: no node.
    got = run_filter(plugin(env), env, env.pod_info(make_pod("p", labels={"app": "x"}, spec=spec)))
    assert passing(got) == set()


def test_affinity_namespaces_default_list_and_selectors() -> None:
    objects = [ns("team-a", {"team": "a"}), ns("team-b", {"team": "b"})]
    pods = [
        make_pod("db-a", labels={"app": "db"}, node="a1", namespace="team-a"),
        make_pod("db-b", labels={"app": "db"}, node="b1", namespace="team-b"),
    ]
    env = cluster(pods, objects)
    pl = plugin(env)

    def fit(namespace: str, **extra: Any) -> set[str]:
        spec = affinity([term({"app": "db"}, HOST, **extra)])
        return passing(run_filter(pl, env, env.pod_info(make_pod("p", namespace=namespace, spec=spec))))

    assert fit("team-a") == {"a1"}
    assert fit("default") == set()
    assert fit("default", namespaces=["team-b"]) == {"b1"}
    assert fit("default", namespaceSelector={"matchLabels": {"team": "a"}}) == {"a1"}
    assert fit("default", namespaceSelector={}) == {"a1", "b1"}
    assert fit("default", namespaces=["team-b"], namespaceSelector={"matchLabels": {"team": "a"}}) == {"a1", "b1"}


def test_existing_anti_affinity_namespace_selector_sees_incoming_namespace_labels() -> None:
    objects = [ns("prod", {"env": "prod"}), ns("dev", {"env": "dev"})]
    repel = affinity(anti=[term({"app": "web"}, HOST, namespaceSelector={"matchLabels": {"env": "prod"}})])
    env = cluster([make_pod("guard", node="a1", spec=repel)], objects)
    pl = plugin(env)
    got = run_filter(pl, env, env.pod_info(make_pod("w", namespace="prod", labels={"app": "web"})))
    assert passing(got) == {"a2", "b1", "nz"}
    _, s = prefilter(pl, env, env.pod_info(make_pod("w", namespace="dev", labels={"app": "web"})))
    assert s is not None and s.code == Code.SKIP


# ---------------------------------------------------------------- required anti-affinity


def test_anti_affinity_closes_matching_domains_only() -> None:
    env = cluster([make_pod("kv", labels={"app": "kv"}, node="a1")])
    spec = affinity(anti=[term({"app": "kv"})])
    got = run_filter(plugin(env), env, env.pod_info(make_pod("p", labels={"app": "kv"}, spec=spec)))
    assert passing(got) == {"b1", "nz"}
    s = got["a2"]
    assert s is not None and s.code == Code.UNSCHEDULABLE and s.message() == ANTI


def test_affinity_is_checked_before_anti_affinity() -> None:
    env = cluster([make_pod("kv", labels={"app": "kv"}, node="a1")])
    spec = affinity([term({"app": "kv"}, HOST)], [term({"app": "kv"})])
    got = run_filter(plugin(env), env, env.pod_info(make_pod("p", spec=spec)))
    assert got["a1"] is not None and got["a1"].message() == ANTI
    assert got["a2"] is not None and got["a2"].message() == AFFINITY


def test_invalid_selector_is_unresolvable() -> None:
    spec = affinity([{"topologyKey": ZONE, "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}])
    env = cluster()
    _, s = prefilter(plugin(env), env, env.pod_info(make_pod("p", spec=spec)))
    assert s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert s.message().startswith("parsing pod: requiredAffinityTerms: ")


# ---------------------------------------------------------------- AddPod / RemovePod


def test_add_and_remove_pod_update_counts_without_recomputing() -> None:
    kv = make_pod("kv", labels={"app": "kv"}, node="a1")
    env = cluster([kv])
    pl = plugin(env)
    p = env.pod_info(make_pod("p", labels={"app": "kv"}, spec=affinity(anti=[term({"app": "kv"})])))
    state, _ = prefilter(pl, env, p)
    clone = state.clone()

    nominated = env.pod_info(make_pod("nom", labels={"app": "kv"}, node="b1"))
    assert pl.add_pod(clone, p, nominated, env.node("b1")) is None
    assert passing(filter_statuses(pl, env, p, clone)) == {"nz"}
    # The original state is untouched by the clone's update.
    assert passing(filter_statuses(pl, env, p, state)) == {"b1", "nz"}

    assert pl.remove_pod(clone, p, env.pod_info(kv), env.node("a1")) is None
    assert passing(filter_statuses(pl, env, p, clone)) == {"a1", "a2", "nz"}


def test_add_pod_with_anti_affinity_repels_incoming_pod() -> None:
    env = cluster([make_pod("db", labels={"app": "db"}, node="b1")])
    pl = plugin(env)
    p = env.pod_info(make_pod("p", labels={"app": "web"}, spec=affinity([term({"app": "db"})])))
    state, _ = prefilter(pl, env, p)
    guard = env.pod_info(make_pod("g", node="b1", spec=affinity(anti=[term({"app": "web"}, HOST)])))
    pl.add_pod(state, p, guard, env.node("b1"))
    got = filter_statuses(pl, env, p, state)
    assert got["b1"] is not None and got["b1"].message() == EXISTING


def test_missing_prefilter_state_is_an_error() -> None:
    env = cluster()
    pl = plugin(env)
    s = pl.filter(CycleState(), env.pod_info(make_pod("p")), env.node("a1"))
    assert s is not None and s.code == Code.ERROR
    assert s.message() == 'error reading "PreFilterInterPodAffinity" from cycleState: not found'


def test_domain_counts_nonzero_keys_follow_adds() -> None:
    """DomainCounts keeps nonzero_keys() (and the per-key totals) until the next add: an add must renew them."""
    import numpy as np

    from kubesched.plugins.interpodaffinity.filtering import DomainCounts

    env = Env([make_node(n, labels={"zone": z, "kubernetes.io/hostname": n}) for n, z in (("a", "1"), ("b", "2"))])
    counts = DomainCounts(env.snapshot)
    counts.add("zone", np.zeros(2, np.int64))
    assert counts.nonzero_keys() == []
    counts.add("zone", np.array([0, 3], np.int64))
    counts.add("kubernetes.io/hostname", np.array([1, 0], np.int64))
    assert counts.nonzero_keys() == ["zone", "kubernetes.io/hostname"]
    assert counts.node_totals("zone").tolist() == [0, 3]
    assert counts.node_totals("kubernetes.io/hostname").tolist() == [1, 0]
    counts.add("kubernetes.io/hostname", np.array([-1, 0], np.int64))
    assert counts.nonzero_keys() == ["zone"]
