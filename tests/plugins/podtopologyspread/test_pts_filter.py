"""PodTopologySpread PreFilter / Filter / AddPod / RemovePod, rule by rule."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
from topology_harness import filter_statuses, prefilter, run_filter

from kubesched.framework.status import Code
from kubesched.plugins.podtopologyspread.filtering import CriticalPaths
from kubesched.plugins.podtopologyspread.plugin import PodTopologySpread
from kubesched.testing import Env, make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
SPREAD = "node(s) didn't match pod topology spread constraints"
MISSING = "node(s) didn't match pod topology spread constraints (missing required label)"


def constraint(key: str = ZONE, skew: int = 1, when: str = "DoNotSchedule", **extra: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when}
    if "labelSelector" not in extra:
        c["labelSelector"] = {"matchLabels": {"app": "s"}}
    c.update(extra)
    return {k: v for k, v in c.items() if v is not None}


def incoming(*constraints: dict[str, Any], labels: dict[str, str] | None = None, **spec: Any) -> Any:
    return make_pod(
        "p",
        labels=labels if labels is not None else {"app": "s"},
        spec={"topologySpreadConstraints": list(constraints), **spec},
    )


def s_pod(name: str, node: str, **kw: Any) -> Any:
    kw.setdefault("labels", {"app": "s"})
    return make_pod(name, node=node, **kw)


def cluster(pods: list[Any] = (), extra_nodes: list[Any] = ()) -> Env:  # type: ignore[assignment]
    nodes = [
        make_node("a1", labels={ZONE: "a"}),
        make_node("a2", labels={ZONE: "a"}),
        make_node("b1", labels={ZONE: "b"}),
        make_node("c1", labels={ZONE: "c"}),
        *extra_nodes,
    ]
    return Env(nodes, pods)


def plugin(env: Env) -> PodTopologySpread:
    return PodTopologySpread.new(None, env.handle)


def passing(statuses: dict[str, Any]) -> set[str]:
    return {n for n, s in statuses.items() if s is None}


def test_prefilter_skips_without_hard_constraints() -> None:
    env = cluster()
    for pod in (make_pod("p"), incoming(constraint(when="ScheduleAnyway"))):
        _, s = prefilter(plugin(env), env, env.pod_info(pod))
        assert s is not None and s.code == Code.SKIP


def test_skew_against_the_global_minimum() -> None:
    env = cluster([s_pod("1", "a1"), s_pod("2", "a2"), s_pod("3", "b1")])
    got = run_filter(plugin(env), env, env.pod_info(incoming(constraint())))
    # a: 2, b: 1, c: 0 -> only c keeps skew <= 1.
    assert passing(got) == {"c1"}
    assert got["b1"] is not None and got["b1"].code == Code.UNSCHEDULABLE and got["b1"].message() == SPREAD
    got = run_filter(plugin(env), env, env.pod_info(incoming(constraint(skew=2))))
    assert passing(got) == {"b1", "c1"}


def test_pod_not_matching_its_own_selector_does_not_add_itself() -> None:
    env = cluster([s_pod("1", "a1"), s_pod("2", "b1")])
    got = run_filter(plugin(env), env, env.pod_info(incoming(constraint(), labels={"app": "other"})))
    # a: 1, b: 1, c: 0, self 0 -> skew 1 everywhere.
    assert passing(got) == {"a1", "a2", "b1", "c1"}


def test_node_without_the_topology_key_is_unresolvable() -> None:
    env = cluster(extra_nodes=[make_node("nz")])
    got = run_filter(plugin(env), env, env.pod_info(incoming(constraint())))
    s = got["nz"]
    assert s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and s.message() == MISSING


def test_first_failing_constraint_decides_the_message() -> None:
    env = cluster([s_pod("1", "a1"), s_pod("2", "a1")], extra_nodes=[make_node("nz")])
    got = run_filter(plugin(env), env, env.pod_info(incoming(constraint(HOST), constraint(ZONE))))
    assert got["a1"] is not None and got["a1"].message() == SPREAD  # hostname skew 3
    assert got["nz"] is not None and got["nz"].message() == MISSING  # has hostname, lacks zone
    assert passing(got) == {"b1", "c1"}


def test_min_domains() -> None:
    env = cluster([s_pod("1", "a1"), s_pod("2", "b1"), s_pod("3", "c1")])
    # 3 domains, each 1: min 1, skew 1 everywhere.
    assert passing(run_filter(plugin(env), env, env.pod_info(incoming(constraint())))) == {"a1", "a2", "b1", "c1"}
    # minDomains 4 > 3 domains: the global minimum is 0, skew 2.
    got = run_filter(plugin(env), env, env.pod_info(incoming(constraint(minDomains=4))))
    assert passing(got) == set()
    assert passing(run_filter(plugin(env), env, env.pod_info(incoming(constraint(skew=2, minDomains=4))))) == {
        "a1",
        "a2",
        "b1",
        "c1",
    }


def test_node_affinity_policy() -> None:
    env = cluster([s_pod("1", "a1")])
    sel = {"nodeSelector": {ZONE: "a"}}
    # Honor: only zone a is a domain (1 pod) -> min 1, skew 1 on a.
    # (Filter does not apply the node selector itself: NodeAffinity does.)
    got = run_filter(plugin(env), env, env.pod_info(incoming(constraint(), **sel)))
    assert passing(got) == {"a1", "a2", "b1", "c1"}
    # Ignore: b and c are empty domains -> a has skew 2.
    got = run_filter(plugin(env), env, env.pod_info(incoming(constraint(nodeAffinityPolicy="Ignore"), **sel)))
    assert "a1" not in passing(got) and "a2" not in passing(got)


def test_node_taints_policy() -> None:
    tainted = make_node("t1", labels={ZONE: "t"}, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    env = cluster([s_pod("1", "a1"), s_pod("2", "b1"), s_pod("3", "c1")], extra_nodes=[tainted])
    # Ignore (default): the tainted zone t is an empty domain -> min 0 -> a, b, c have skew 2.
    assert passing(run_filter(plugin(env), env, env.pod_info(incoming(constraint())))) == {"t1"}
    # Honor: zone t is not a domain -> min 1.
    got = run_filter(plugin(env), env, env.pod_info(incoming(constraint(nodeTaintsPolicy="Honor"))))
    assert passing(got) == {"a1", "a2", "b1", "c1", "t1"}
    # Honor with a toleration: zone t counts again.
    tol = {"tolerations": [{"key": "k", "operator": "Exists"}]}
    got = run_filter(plugin(env), env, env.pod_info(incoming(constraint(nodeTaintsPolicy="Honor"), **tol)))
    assert passing(got) == {"t1"}


def test_match_label_keys_are_merged_into_the_selector() -> None:
    pods = [
        s_pod("old-1", "a1", labels={"app": "s", "rev": "1"}),
        s_pod("old-2", "a2", labels={"app": "s", "rev": "1"}),
        s_pod("new-1", "b1", labels={"app": "s", "rev": "2"}),
    ]
    env = cluster(pods)
    c = constraint(matchLabelKeys=["rev"])
    got = run_filter(plugin(env), env, env.pod_info(incoming(c, labels={"app": "s", "rev": "2"})))
    # Only rev=2 pods count: a 0, b 1, c 0.
    assert passing(got) == {"a1", "a2", "c1"}


def test_selector_quirks_nil_and_empty() -> None:
    env = cluster([s_pod("1", "a1"), s_pod("2", "a1")])
    # No labelSelector: matches nothing (no counts, no self-match).
    nil = constraint(labelSelector=None)
    assert passing(run_filter(plugin(env), env, env.pod_info(incoming(nil)))) == {"a1", "a2", "b1", "c1"}
    # An empty selector counts no existing pod (upstream), yet the pod matches itself: skew 1 everywhere.
    empty = constraint(labelSelector={})
    assert passing(run_filter(plugin(env), env, env.pod_info(incoming(empty)))) == {"a1", "a2", "b1", "c1"}


def test_terminating_and_foreign_namespace_pods_are_not_counted() -> None:
    dying = s_pod("dying", "a1")
    gone = datetime(2025, 1, 1, tzinfo=UTC)
    dying = msgspec.structs.replace(dying, metadata=msgspec.structs.replace(dying.metadata, deletion_timestamp=gone))
    env = cluster([dying, s_pod("other", "a1", namespace="other"), s_pod("b", "b1"), s_pod("c", "c1")])
    # a counts 0 (terminating / other namespace), b and c count 1: only zone a passes.
    assert passing(run_filter(plugin(env), env, env.pod_info(incoming(constraint())))) == {"a1", "a2"}


def test_add_and_remove_pod() -> None:
    one = s_pod("1", "a1")
    env = cluster([one, s_pod("2", "b1")])
    pl = plugin(env)
    p = env.pod_info(incoming(constraint()))
    state, _ = prefilter(pl, env, p)
    assert passing(filter_statuses(pl, env, p, state)) == {"c1"}
    clone = state.clone()
    pl.add_pod(clone, p, env.pod_info(s_pod("n", "c1")), env.node("c1"))
    assert passing(filter_statuses(pl, env, p, clone)) == {"a1", "a2", "b1", "c1"}
    assert passing(filter_statuses(pl, env, p, state)) == {"c1"}
    pl.remove_pod(clone, p, env.pod_info(one), env.node("a1"))
    assert passing(filter_statuses(pl, env, p, clone)) == {"a1", "a2"}
    # Pods of another namespace or not matching the selector change nothing.
    pl.add_pod(clone, p, env.pod_info(s_pod("x", "a1", namespace="other")), env.node("a1"))
    pl.add_pod(clone, p, env.pod_info(s_pod("y", "a1", labels={"app": "z"})), env.node("a1"))
    assert passing(filter_statuses(pl, env, p, clone)) == {"a1", "a2"}


def test_critical_paths_track_two_minimums_like_upstream() -> None:
    cp = CriticalPaths()
    for v, n in (("a", 3), ("b", 1), ("c", 2), ("d", 5)):
        cp.update(v, n)
    assert (cp.value0, cp.num0, cp.value1, cp.num1) == ("b", 1, "c", 2)
    cp.update("b", 4)  # b grows past c: swap
    assert (cp.value0, cp.num0, cp.value1, cp.num1) == ("c", 2, "b", 4)
    cp.update("c", 5)  # both tracked domains grew: the minimum lags (a is 3), as upstream
    assert (cp.value0, cp.num0) == ("b", 4)


def test_api_server_merge_of_match_label_keys_is_idempotent_for_the_scheduler() -> None:
    from kubesched.plugins.podtopologyspread.constraints import apply_match_label_keys

    pods = [s_pod("old", "a1", labels={"app": "s", "rev": "1"}), s_pod("new", "b1", labels={"app": "s", "rev": "2"})]
    env = cluster(pods)
    raw = incoming(constraint(matchLabelKeys=["rev"]), labels={"app": "s", "rev": "2"})
    merged = apply_match_label_keys(raw)
    exprs = merged.spec.topology_spread_constraints[0].label_selector.match_expressions
    assert [(e.key, e.operator, e.values) for e in exprs] == [("rev", "In", ["2"])]
    assert run_filter(plugin(env), env, env.pod_info(merged)) == run_filter(plugin(env), env, env.pod_info(raw))
    assert apply_match_label_keys(incoming(constraint())) is not None


def test_whole_snapshot_prefilter_counts_like_the_reference() -> None:
    """compute_pre_filter_state_all (nodes missing a key, pods with and without a node selector, one or two
    constraints) counts the same domains and critical paths as the walk over every node."""
    from kubesched.plugins.podtopologyspread.filtering import compute_pre_filter_state, compute_pre_filter_state_all

    pods = [s_pod("1", "a1"), s_pod("2", "b1"), s_pod("3", "a2"), s_pod("4", "nz")]
    for extra in ([], [make_node("nz")]):
        env = cluster(pods if extra else pods[:3], extra_nodes=extra)
        pl = plugin(env)
        for spec in ({}, {"nodeSelector": {ZONE: "a"}}):
            for cs in ((constraint(),), (constraint(HOST), constraint(ZONE))):
                pod = env.pod_info(incoming(*cs, **spec))
                constraints = pl.get_constraints(pod.pod, "DoNotSchedule")
                fast = compute_pre_filter_state_all(pod, constraints, env.snapshot)
                ref = compute_pre_filter_state(pod, constraints, env.snapshot.nodes)
                assert fast.tp_value_to_match_num == ref.tp_value_to_match_num
                assert [repr(p) for p in fast.critical_paths] == [repr(p) for p in ref.critical_paths]
                run_filter(pl, env, pod)  # filter_all agrees with filter on every node
