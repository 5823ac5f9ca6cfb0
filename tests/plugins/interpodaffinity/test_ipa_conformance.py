"""InterPodAffinity against the golden cases produced by kube-scheduler v1.34.1 (interpod family).

Each case is replayed pod by pod at the plugin level (see topology_harness.replay),
plus explicit assertions of the statuses, messages and scores the reference recorded.
"""

from __future__ import annotations

from typing import Any

import pytest
from topology_harness import (
    earlier_filters,
    load_case,
    replay,
    run_filter,
    scores,
)

from kubesched.config.types import InterPodAffinityArgs
from kubesched.framework.status import Code
from kubesched.plugins.interpodaffinity.plugin import InterPodAffinity
from kubesched.plugins.podtopologyspread.plugin import PodTopologySpread

CASES = [
    "existing-anti-affinity-symmetry",
    "namespaces-and-selector",
    "preferred-affinity-scoring",
    "required-affinity-zone-and-host",
    "required-anti-affinity",
]


def _ipa(env: Any) -> InterPodAffinity:
    return InterPodAffinity.new(InterPodAffinityArgs(), env.handle)


def _chain(env: Any) -> list[Any]:
    return [*earlier_filters(env), PodTopologySpread.new(None, env.handle)]


@pytest.mark.parametrize("name", CASES)
def test_replay(name: str) -> None:
    case = load_case("interpod", name)
    assert replay(case, _ipa, _chain) >= len(case.pending)


def _pod(case: Any, name: str) -> tuple[Any, Any, Any]:
    i = next(k for k, p in enumerate(case.pending) if p.metadata.name == name)
    env = case.env(i)
    return env, _ipa(env), env.pod_info(case.pending[i])


def test_symmetry_statuses() -> None:
    case = load_case("interpod", "existing-anti-affinity-symmetry")
    env, pl, pod = _pod(case, "noisy-1")
    got = run_filter(pl, env, pod)
    # quiet-1 (z1-b) and quiet-2 (z2-a) repel role=noisy from their hosts.
    for node in ("z1-b", "z2-a"):
        s = got[node]
        assert s is not None and s.code == Code.UNSCHEDULABLE
        assert s.message() == "node(s) didn't satisfy existing pods anti-affinity rules"
    assert {n for n, s in got.items() if s is None} == {"z1-a", "z2-b", "z3-a"}
    # No preferred terms anywhere: PreScore skips (the reference recorded no InterPodAffinity score).
    assert scores(pl, env, pod, ["z1-a", "z2-b", "z3-a"]) is None

    env, pl, pod = _pod(case, "batch-1")
    got = run_filter(pl, env, pod)
    # lat (z3-a) repels role=batch from the whole zone z3.
    assert (
        got["z3-a"] is not None and got["z3-a"].message() == "node(s) didn't satisfy existing pods anti-affinity rules"
    )
    assert [n for n, s in got.items() if s is not None] == ["z3-a"]


def test_namespaces_and_selector_statuses() -> None:
    case = load_case("interpod", "namespaces-and-selector")
    env, pl, pod = _pod(case, "same-ns")
    got = run_filter(pl, env, pod)
    # Only db-b (team-b, zone z3) is in the pod's namespace.
    assert {n for n, s in got.items() if s is None} == {"z3-a"}
    s = got["z1-b"]
    assert s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert s.message() == "node(s) didn't match pod affinity rules"

    env, pl, pod = _pod(case, "ns-list")
    assert {n for n, s in run_filter(pl, env, pod).items() if s is None} == {"z1-b"}
    env, pl, pod = _pod(case, "ns-selector")
    assert {n for n, s in run_filter(pl, env, pod).items() if s is None} == {"z3-a"}
    env, pl, pod = _pod(case, "ops-no-db")
    got = run_filter(pl, env, pod)
    assert all(s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE for s in got.values())

    env, pl, pod = _pod(case, "anti-all-ns")
    got = run_filter(pl, env, pod)
    # namespaceSelector {} covers every namespace: db pods in z1 and z3 repel it.
    assert {n for n, s in got.items() if s is None} == {"z2-a", "z2-b"}
    assert got["z1-a"] is not None and got["z1-a"].code == Code.UNSCHEDULABLE
    assert got["z1-a"].message() == "node(s) didn't match pod anti-affinity rules"


def test_preferred_scores_recorded() -> None:
    case = load_case("interpod", "preferred-affinity-scoring")
    env, pl, pod = _pod(case, "web-1")
    got = scores(pl, env, pod)
    assert got is not None
    assert {n: 2 * v for n, v in got.items()} == {"z1-a": 142, "z1-b": 142, "z2-a": 56, "z2-b": 200, "z3-a": 0}
    env, pl, pod = _pod(case, "web-3")
    got = scores(pl, env, pod)
    assert got is not None
    assert {n: 2 * v for n, v in got.items()} == {"z1-a": 200, "z1-b": 0, "z2-a": 100, "z2-b": 66, "z3-a": 32}


def test_self_affinity_first_and_second() -> None:
    case = load_case("interpod", "required-affinity-zone-and-host")
    env, pl, pod = _pod(case, "self-first")
    # No app=solo pod anywhere and the pod matches its own term: every node with the key passes.
    assert all(s is None for s in run_filter(pl, env, pod).values())
    assert scores(pl, env, pod) is None

    env, pl, pod = _pod(case, "self-second")
    got = run_filter(pl, env, pod)
    assert {n for n, s in got.items() if s is None} == {"z1-a", "z1-b"}
    # self-first's required affinity matches self-second: hardPodAffinityWeight scores zone z1,
    # but both feasible nodes are in z1, so both normalize to 0.
    assert scores(pl, env, pod, ["z1-a", "z1-b"]) == {"z1-a": 0, "z1-b": 0}

    env, pl, pod = _pod(case, "web-missing")
    got = run_filter(pl, env, pod)
    assert all(s is not None and s.message() == "node(s) didn't match pod affinity rules" for s in got.values())


def test_required_anti_affinity_fills_zones_then_fails() -> None:
    case = load_case("interpod", "required-anti-affinity")
    env, pl, pod = _pod(case, "kv-3")
    got = run_filter(pl, env, pod)
    for s in got.values():
        assert s is not None and s.code == Code.UNSCHEDULABLE
        assert s.message() == "node(s) didn't match pod anti-affinity rules"
