"""DefaultPreemption's PostFilter run by hand through kubesched.testing.Env, as a plugin author would.

Env's handle is the scheduler's contract without the scheduler: the profile's
framework comes from env.build_profile(), the metrics hooks record nothing, and
the victims' deletion (which upstream does in a goroutine after the cycle)
waits in env.deferred until the test runs it. The nominated node and the
victims must be those the whole scheduler picks for the same cluster.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kubesched.api.core import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import NodeToStatus
from kubesched.framework.interface import PostFilterResult
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.defaultpreemption import DefaultPreemption
from kubesched.preemption.evaluator import CYCLES_PER_API_ROUND
from kubesched.testing import Env, make_node, make_pod, placements, simulate

START = datetime(2025, 1, 1, tzinfo=UTC)


def _running(name: str, node: str, priority: int, minute: int) -> Pod:
    pod = make_pod(name, cpu="1", node=node, priority=priority)
    pod.status.start_time = START + timedelta(minutes=minute)
    return pod


def _pending(env: Env, name: str) -> PodInfo:
    """The pending pod as the scheduler pops it: the API server's copy (defaulted, admitted)."""
    pod = env.client.get_pod("default", name)
    assert pod is not None
    return env.pod_info(pod)


def _cluster() -> tuple[list[Pod], Pod]:
    """Two full 4-cpu nodes: n1 holds priority-10 pods only; n2 two priority-10 pods, one of 5 and one of 0."""
    running = [_running(f"n1-p10-{i}", "n1", 10, i) for i in range(4)]
    running += [
        _running("n2-p10-a", "n2", 10, 0),
        _running("n2-p0", "n2", 0, 1),
        _running("n2-p10-b", "n2", 10, 2),
        _running("n2-p5", "n2", 5, 3),
    ]
    return running, make_pod("high", cpu="2", priority=100)


@pytest.mark.parametrize("vector", [True, False], ids=["arithmetic", "filters"])
def test_post_filter_nominates_the_node_and_evicts_the_victims_the_scheduler_would(vector: bool) -> None:
    running, preemptor = _cluster()
    nodes = [make_node("n1", cpu="4"), make_node("n2", cpu="4")]
    # The bound pods in the cache (the snapshot) and in the API store (the client deletes them there).
    env = Env(nodes, running, objects=[("Pod", p) for p in [*running, preemptor]])
    fw = env.build_profile()
    fw.use_vector_paths = vector
    plugin = fw.plugins_by_name["DefaultPreemption"]
    assert isinstance(plugin, DefaultPreemption)
    pod = _pending(env, "high")
    state = CycleState()
    _, status, _ = fw.run_pre_filter_plugins(state, pod, env.snapshot.nodes)
    assert status is None or status.code == Code.SUCCESS
    statuses = {ni.name: fw.run_filter_plugins(state, pod, ni) for ni in env.snapshot.nodes}
    failed = {name: s for name, s in statuses.items() if s is not None}
    assert {name: s.reasons for name, s in failed.items()} == {"n1": ("Insufficient cpu",), "n2": ("Insufficient cpu",)}

    result, status = plugin.post_filter(state, pod, NodeToStatus(failed))

    # pickOneNodeForPreemption: no PDB violated either way; n2's most important victim has the lower priority.
    assert status is not None and status.code == Code.SUCCESS
    assert result is not None
    assert (result.nominated_node_name, result.mode) == ("n2", PostFilterResult.MODE_OVERRIDE)
    # Nothing deleted yet: the preemption is carried out after the cycle, and holds the preemptor back meanwhile.
    assert [cycles for cycles, _ in env.deferred] == [CYCLES_PER_API_ROUND]
    assert env.store.count("Pod") == len(running) + 1
    held = plugin.pre_enqueue(pod)
    assert held is not None and held.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE

    # The two most important pods of n2 are reprieved (2 cpu left for the preemptor), the others evicted:
    # all but the last in one round, the last in a round the first one defers.
    assert env.run_deferred() == 2
    preempted = [(e.regarding, e.related, e.note) for e in env.client.events.events if e.reason == "Preempted"]
    assert preempted == [
        ("default/n2-p5", "default/high", "Preempted by pod uid-default-high on node n2"),
        ("default/n2-p0", "default/high", "Preempted by pod uid-default-high on node n2"),
    ]
    assert sorted(p.metadata.name for p in env.store.list("Pod")) == sorted(
        [p.metadata.name for p in running if p.metadata.name not in ("n2-p5", "n2-p0")] + ["high"]
    )
    assert plugin.pre_enqueue(pod) is None

    # The whole scheduler, on the same cluster: the same node, the same victims.
    whole = simulate([*nodes, *running, preemptor])
    assert placements(whole) == {"default/high": "n2"}
    assert sorted(whole.deleted) == ["default/n2-p0", "default/n2-p5"]


def test_post_filter_without_a_profile_says_what_is_missing() -> None:
    """Env's handle has no framework until a profile is built over it; preemption's dry run needs one."""
    running, preemptor = _cluster()
    env = Env([make_node("n1", cpu="4"), make_node("n2", cpu="4")], running, objects=[("Pod", preemptor)])
    plugin = DefaultPreemption(None, env.handle)
    pod = _pending(env, "high")
    full = Status(Code.UNSCHEDULABLE, "Insufficient cpu")
    with pytest.raises(RuntimeError, match="DefaultPreemption: the handle has no framework yet"):
        plugin.post_filter(CycleState(), pod, NodeToStatus({"n1": full, "n2": full}))
