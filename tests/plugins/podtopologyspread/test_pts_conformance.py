"""PodTopologySpread against the golden cases produced by kube-scheduler v1.34.1 (spread family).

Each case is replayed pod by pod at the plugin level (see topology_harness.replay),
plus explicit assertions of the statuses, messages and scores the reference recorded.
"""

from __future__ import annotations

from typing import Any

import pytest
from topology_harness import earlier_filters, load_case, raw_scores, replay, run_filter, scores

from kubesched.framework.status import Code
from kubesched.plugins.podtopologyspread.plugin import PodTopologySpread

CASES = [
    "donotschedule-unsatisfiable",
    "donotschedule-zone",
    "mindomains",
    "node-inclusion-policies",
    "scheduleanyway-scoring",
    "system-default-replicaset",
]

SPREAD = "node(s) didn't match pod topology spread constraints"


def _pts(env: Any) -> PodTopologySpread:
    return PodTopologySpread.new(None, env.handle)


@pytest.mark.parametrize("name", CASES)
def test_replay(name: str) -> None:
    case = load_case("spread", name)
    assert replay(case, _pts, earlier_filters) >= len(case.pending)


def _pod(case: Any, name: str) -> tuple[Any, Any, Any]:
    i = next(k for k, p in enumerate(case.pending) if p.metadata.name == name)
    env = case.env(i)
    return env, _pts(env), env.pod_info(case.pending[i])


def _passing(statuses: dict[str, Any]) -> set[str]:
    return {n for n, s in statuses.items() if s is None}


def test_donotschedule_zone_sequence() -> None:
    case = load_case("spread", "donotschedule-zone")
    # za: 2, zb: 1, zc: 0 -> only zc (skew 1) admits the first pod.
    env, pl, pod = _pod(case, "s-0")
    got = run_filter(pl, env, pod)
    assert _passing(got) == {"c-1"}
    s = got["a-1"]
    assert s is not None and s.code == Code.UNSCHEDULABLE and s.message() == SPREAD
    env, pl, pod = _pod(case, "s-1")
    assert _passing(run_filter(pl, env, pod)) == {"b-1", "b-2", "c-1"}
    # No ScheduleAnyway constraint and no owner: PreScore skips.
    assert scores(pl, env, pod, ["b-1", "b-2", "c-1"]) is None


def test_mindomains_forces_global_minimum_zero() -> None:
    case = load_case("spread", "mindomains")
    env, pl, pod = _pod(case, "s-0")
    # 2 domains < minDomains 3: global minimum 0, so za (1 pod) gives skew 2.
    assert _passing(run_filter(pl, env, pod)) == {"b-1"}
    env, pl, pod = _pod(case, "s-1")
    got = run_filter(pl, env, pod)
    assert _passing(got) == set()
    assert all(s is not None and s.code == Code.UNSCHEDULABLE and s.message() == SPREAD for s in got.values())


def test_node_inclusion_policies() -> None:
    case = load_case("spread", "node-inclusion-policies")
    env, pl, pod = _pod(case, "honor-1")
    # Honor: zc (pool other) and zd (tainted) are not domains; za 1, zb 0 -> min 0.
    got = run_filter(pl, env, pod)
    assert got["a-1"] is not None and got["b-1"] is None
    env, pl, pod = _pod(case, "ignore-1")
    # Ignore: zc and zd count as empty domains, so min is 0 and a-1 (1) / b-1 (2) exceed the skew.
    got = run_filter(pl, env, pod)
    assert _passing(got) == {"c-1", "d-1"}


def test_scheduleanyway_raw_and_normalized() -> None:
    case = load_case("spread", "scheduleanyway-scoring")
    env, pl, pod = _pod(case, "s-0")
    # za: 1 (a-1), zb: 0, zc: 2 (c-1); 3 zones -> weight log(5) (maxSkew 1 adds 0);
    # 5 hosts -> weight log(7) (maxSkew 2 adds 1). a-1 = log 5 + log 7 + 1 = 4.55 -> 5.
    raw = raw_scores(pl, env, pod)
    assert raw == {"a-1": 5, "a-2": 3, "b-1": 1, "b-2": 1, "c-1": 8}
    got = scores(pl, env, pod)
    assert got is not None
    assert {n: 2 * v for n, v in got.items()} == {"a-1": 100, "a-2": 150, "b-1": 200, "b-2": 200, "c-1": 24}


def test_system_defaults_from_replicaset_and_service() -> None:
    case = load_case("spread", "system-default-replicaset")
    env, pl, pod = _pod(case, "web-0")
    # System defaults are ScheduleAnyway only: Filter skips, Score spreads.
    assert run_filter(pl, env, pod) == dict.fromkeys(n.metadata.name for n in case.nodes)
    got = scores(pl, env, pod)
    assert got is not None
    assert {n: 2 * v for n, v in got.items()} == {"a-1": 200, "a-2": 200, "b-1": 200, "b-2": 200, "c-1": 92}
