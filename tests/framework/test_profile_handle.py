"""new_handle's defaults: what a handle is without a scheduling loop (testing.Env, configcheck)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kubesched.cluster.client import EmbeddedClient
from kubesched.cluster.store import ClusterStore
from kubesched.errors import InputError
from kubesched.framework.profile_handle import new_handle
from kubesched.testing import Env, make_node, make_pod


def test_a_handle_without_a_scheduler_sees_an_empty_cluster_at_time_zero() -> None:
    h = new_handle("p", EmbeddedClient(ClusterStore()))
    assert (h.profile_name, h.framework, h.nominator(), h.now(), h.extenders()) == ("p", None, None, 0.0, [])
    assert h.snapshot().num_nodes == 0 and h.snapshot() is h.snapshot()
    assert h.lister("Pod").list() == [] and h.lister("Namespace").get("default") is None
    assert h.namespace_labels("default") == {}
    assert h.nominated_pods_for_node("n1") == [] and h.waiting_pods() == [] and not h.reject_waiting_pod("uid")
    # The seeded source: the same choices as any other handle built the same way.
    assert h.rng.random() == new_handle("q", EmbeddedClient(ClusterStore())).rng.random()
    # Metrics hooks record nothing; work for after the cycle runs at once (no cycles to wait for).
    h.metrics_inc_preemption_attempts()
    h.metrics_observe_victims(3)
    ran: list[int] = []
    h.run_after_cycles(2, lambda: ran.append(1))
    assert ran == [1]


def test_shared_state_is_the_handles_own_unless_given() -> None:
    shared: dict[str, object] = {}
    a = new_handle("a", EmbeddedClient(ClusterStore()), extra=shared)
    b = new_handle("b", EmbeddedClient(ClusterStore()), extra=shared)
    c = new_handle("c", EmbeddedClient(ClusterStore()))
    a.extra["k"] = 1
    assert b.extra == {"k": 1} and c.extra == {}


def test_env_keeps_deferred_work_until_the_test_runs_it() -> None:
    env = Env([make_node("n1")])
    ran: list[str] = []

    def later(name: str) -> Callable[[], None]:
        def fn() -> None:
            ran.append(name)
            if name == "first":
                env.handle.run_after_cycles(1, later("deferred by first"))

        return fn

    env.handle.run_after_cycles(1, later("first"))
    env.handle.run_after_cycles(0, later("second"))
    assert ran == [] and [c for c, _ in env.deferred] == [1, 0]
    assert env.run_deferred() == 3
    assert ran == ["first", "second", "deferred by first"] and env.deferred == []


def test_env_builds_a_profile_over_its_handle() -> None:
    env = Env([make_node("n1", cpu="1")], [make_pod("used", cpu="1", node="n1")])
    fw = env.build_profile(
        {"profiles": [{"schedulerName": "mine", "plugins": {"score": {"disabled": [{"name": "*"}]}}}]}, "mine"
    )
    assert env.handle.framework is fw and fw.profile_name == "mine"
    assert fw.score_plugins == []
    assert env.build_profile().handle is env.handle
    with pytest.raises(InputError, match="unknown field"):
        env.build_profile("percentageOfNodesToScor: 5")
