"""InterPodAffinity PreScore / Score / NormalizeScore, term by term."""

from __future__ import annotations

from typing import Any

import numpy as np
from topology_harness import raw_scores, scores

from kubesched.config.types import InterPodAffinityArgs
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.plugins.interpodaffinity.plugin import InterPodAffinity
from kubesched.plugins.interpodaffinity.scoring import normalize
from kubesched.testing import Env, make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def weighted(w: int, labels: dict[str, str], key: str = ZONE, **extra: Any) -> dict[str, Any]:
    return {"weight": w, "podAffinityTerm": {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **extra}}


def spec(pref: list[Any] = (), anti: list[Any] = (), required: list[Any] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    a: dict[str, Any] = {}
    if pref or required:
        a["podAffinity"] = {}
        if pref:
            a["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = list(pref)
        if required:
            a["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(required)
    if anti:
        a["podAntiAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": list(anti)}
    return {"affinity": a}


def cluster(pods: list[Any]) -> Env:
    nodes = [
        make_node("a1", labels={ZONE: "a"}),
        make_node("a2", labels={ZONE: "a"}),
        make_node("b1", labels={ZONE: "b"}),
        make_node("c1", labels={ZONE: "c"}),
    ]
    return Env(nodes, pods)


def plugin(env: Env, **args: Any) -> InterPodAffinity:
    return InterPodAffinity.new(InterPodAffinityArgs(**args), env.handle)


def test_incoming_preferred_affinity_and_anti_affinity() -> None:
    env = cluster([make_pod("db", labels={"app": "db"}, node="a1"), make_pod("web", labels={"app": "web"}, node="b1")])
    pod = env.pod_info(
        make_pod("p", spec=spec(pref=[weighted(40, {"app": "db"})], anti=[weighted(10, {"app": "web"}, HOST)]))
    )
    assert raw_scores(plugin(env), env, pod) == {"a1": 40, "a2": 40, "b1": -10, "c1": 0}
    # min -10, max 40: 100 * (s + 10) / 50, truncated.
    assert scores(plugin(env), env, pod) == {"a1": 100, "a2": 100, "b1": 0, "c1": 20}


def test_existing_pods_terms_score_the_incoming_pod() -> None:
    pods = [
        make_pod("likes", node="a1", spec=spec(pref=[weighted(7, {"app": "p"})])),
        make_pod("hates", node="b1", spec=spec(anti=[weighted(3, {"app": "p"}, HOST)])),
        make_pod(
            "needs",
            node="c1",
            spec=spec(required=[{"labelSelector": {"matchLabels": {"app": "p"}}, "topologyKey": ZONE}]),
        ),
    ]
    env = cluster(pods)
    pod = env.pod_info(make_pod("p", labels={"app": "p"}))
    assert raw_scores(plugin(env), env, pod) == {"a1": 7, "a2": 7, "b1": -3, "c1": 1}
    assert raw_scores(plugin(env, hard_pod_affinity_weight=5), env, pod) == {"a1": 7, "a2": 7, "b1": -3, "c1": 5}
    assert raw_scores(plugin(env, hard_pod_affinity_weight=0), env, pod) == {"a1": 7, "a2": 7, "b1": -3, "c1": 0}


def test_ignore_preferred_terms_of_existing_pods() -> None:
    env = cluster([make_pod("likes", node="a1", spec=spec(pref=[weighted(7, {"app": "p"})]))])
    pod = env.pod_info(make_pod("p", labels={"app": "p"}))
    assert raw_scores(plugin(env, ignore_preferred_terms_of_existing_pods=True), env, pod) is None
    # With preferred terms of its own, existing pods' terms still count.
    own = env.pod_info(make_pod("p", labels={"app": "p"}, spec=spec(pref=[weighted(1, {"app": "none"})])))
    assert raw_scores(plugin(env, ignore_preferred_terms_of_existing_pods=True), env, own) == {
        "a1": 7,
        "a2": 7,
        "b1": 0,
        "c1": 0,
    }


def test_prescore_skips_without_any_contribution_or_nodes() -> None:
    env = cluster([make_pod("db", labels={"app": "db"}, node="a1")])
    pl = plugin(env)
    pod = env.pod_info(make_pod("p", spec=spec(pref=[weighted(5, {"app": "none"})])))
    assert raw_scores(pl, env, pod) is None
    s = pl.pre_score(CycleState(), pod, [])
    assert s is not None and s.code == Code.SKIP


def test_cancelling_terms_still_score_so_prescore_does_not_skip() -> None:
    env = cluster([make_pod("db", labels={"app": "db"}, node="a1")])
    pod = env.pod_info(make_pod("p", spec=spec(pref=[weighted(5, {"app": "db"})], anti=[weighted(5, {"app": "db"})])))
    assert scores(plugin(env), env, pod) == {"a1": 0, "a2": 0, "b1": 0, "c1": 0}


def test_preferred_namespace_selector_is_unrolled() -> None:
    from kubesched.api.decode import decode

    objects = [("Namespace", decode("Namespace", {"metadata": {"name": "t", "labels": {"team": "t"}}}))]
    env = Env(
        [make_node("a1", labels={ZONE: "a"}), make_node("b1", labels={ZONE: "b"})],
        [make_pod("db", namespace="t", labels={"app": "db"}, node="b1")],
        objects,
    )
    term = weighted(9, {"app": "db"}, namespaceSelector={"matchLabels": {"team": "t"}})
    pod = env.pod_info(make_pod("p", spec=spec(pref=[term])))
    assert raw_scores(plugin(env), env, pod) == {"a1": 0, "b1": 9}


def test_normalize_truncates_like_go() -> None:
    assert normalize(np.array([-3, 0, 7], np.int64)).tolist() == [0, 30, 100]
    assert normalize(np.array([1, 2, 4], np.int64)).tolist() == [0, 33, 100]
    assert normalize(np.array([5, 5], np.int64)).tolist() == [0, 0]


def test_prescore_skips_while_existing_pods_have_required_anti_affinity_only() -> None:
    """Existing pods with (anti-)affinity but no scoring term (required anti-affinity only) cannot score a pod
    without preferred terms: PreScore skips; once a pod with a scoring term lands, the next pod scores."""
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "p"}}, "topologyKey": HOST}
    ]}}  # fmt: skip
    env = cluster([make_pod("lone", labels={"app": "p"}, node="a1", spec={"affinity": anti})])
    assert env.snapshot.any_pods_with_affinity()
    pl = plugin(env)
    assert raw_scores(pl, env, env.pod_info(make_pod("p", labels={"app": "p"}))) is None
    # A pod whose own terms fail to parse is still an error, not a skip.
    bad = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchExpressions": [{"key": "k", "operator": "Bogus"}]}, "topologyKey": HOST}
    ]}}  # fmt: skip
    s = pl.pre_score(CycleState(), env.pod_info(make_pod("bad", spec={"affinity": bad})), env.snapshot.nodes)
    assert s is not None and s.code == Code.ERROR
    env.add_pod(make_pod("likes", node="b1", spec=spec(pref=[weighted(7, {"app": "p"})])))
    assert raw_scores(pl, env, env.pod_info(make_pod("p2", labels={"app": "p"}))) == {
        "a1": 0,
        "a2": 0,
        "b1": 7,
        "c1": 0,
    }
