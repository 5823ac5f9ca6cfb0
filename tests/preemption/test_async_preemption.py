"""Asynchronous preemption: what the scheduling loop sees while a preemption's victims are being deleted.

kube-scheduler 1.34 deletes victims in a goroutine while it goes on scheduling: the
pods it pops meanwhile still see the victims on the node and the preemptor nominated
there, so they go where there is room now instead of taking the space being freed.
The expected files were produced by kube-scheduler v1.34.1 (the oracle; the outcomes
are the same in repeated runs).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.oracle_cases import assert_as_upstream

from kubesched import klog
from kubesched.api.core import PodCondition
from kubesched.cluster.client import POD, EmbeddedClient
from kubesched.cluster.store import ClusterStore
from kubesched.framework.types import PodInfo
from kubesched.preemption.evaluator import (
    CYCLES_PER_API_ROUND,
    LAST_ROUND_CYCLES,
    Candidate,
    Evaluator,
    Victims,
    pick_one_node_for_preemption,
)
from kubesched.testing import make_pod

CASES = sorted((Path(__file__).parent / "async_batch").glob("*.yaml"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_pods_popped_during_a_preemption_see_its_victims_still_running(case: Path) -> None:
    assert_as_upstream(case)


def _victim(name: str, priority: int, started: datetime | None = None) -> PodInfo:
    pod = make_pod(name, "1", priority=priority)
    if started is not None:
        pod.status.start_time = started
    return PodInfo(pod)


def test_of_nodes_whose_victims_never_started_the_last_looked_at_wins() -> None:
    # GetPodStartTime reads the clock for a pod without a start time, once per node in turn.
    victims = {n: Victims([_victim(f"v-{n}", 0)]) for n in ("node-a", "node-b", "node-c")}
    assert pick_one_node_for_preemption(["node-a", "node-b", "node-c"], victims, None) == "node-c"
    assert pick_one_node_for_preemption(["node-c", "node-a", "node-b"], victims, None) == "node-b"


def test_a_victim_that_never_started_counts_as_started_after_every_one_that_did() -> None:
    started = datetime(2025, 1, 1, tzinfo=UTC)
    victims = {
        "node-a": Victims([_victim("v-a", 0)]),
        "node-b": Victims([_victim("v-b", 0, started)]),
    }
    assert pick_one_node_for_preemption(["node-a", "node-b"], victims, None) == "node-a"
    # Among the highest-priority victims of a node, the earliest start counts: a started one wins.
    victims["node-a"] = Victims([_victim("v-a1", 0), _victim("v-a2", 0, datetime(2024, 1, 1, tzinfo=UTC))])
    assert pick_one_node_for_preemption(["node-a", "node-b"], victims, None) == "node-b"


class _Handle:
    """What carrying out a preemption asks of the framework handle, over an embedded cluster."""

    def __init__(self, client: EmbeddedClient) -> None:
        self.client = client
        self.activated: list[str] = []

    def get_waiting_pod(self, uid: str) -> None:
        return None

    def nominated_pods_for_node(self, node: str) -> list[PodInfo]:
        return []

    def activate(self, pods: list[PodInfo]) -> None:
        self.activated += [p.name for p in pods]

    def metrics_observe_victims(self, n: int) -> None:
        pass

    def run_after_cycles(self, cycles: int, fn: Callable[[], None]) -> None:
        fn()


def _carry_out(victims: list[PodInfo], client: EmbeddedClient) -> tuple[_Handle, list[str]]:
    handle = _Handle(client)
    ev = Evaluator("DefaultPreemption", handle, None)  # type: ignore[arg-type]
    removed: list[str] = []
    ev.on_victim = lambda victim, preemptor, node: removed.append(victim.name)
    preemptor = PodInfo(make_pod("high", "2", priority=1000, uid="uid-high"))
    ev.prepare_candidate_async(Candidate("node-0", Victims(victims)), preemptor)
    assert not ev.is_pod_running_preemption("uid-high")
    return handle, removed


def test_victims_deleted_now_requeue_the_preemptor_by_their_deletion_events() -> None:
    client = EmbeddedClient(ClusterStore())
    victims = [PodInfo(client.create(POD, make_pod(f"low{i}", "1", priority=0, node="node-0"))) for i in range(2)]
    handle, removed = _carry_out(victims, client)
    assert removed == ["low0", "low1"] and client.store.count(POD) == 0
    assert handle.activated == []
    assert [e.reason for e in client.events.events] == ["Preempted", "Preempted"]


def test_a_preemptor_whose_victims_are_all_gone_is_activated() -> None:
    # An earlier preemption by the same pod deleted the victim; no deletion event will come to requeue it.
    client = EmbeddedClient(ClusterStore())
    created = client.create(POD, make_pod("low0", "1", priority=0, node="node-0"))
    cond = PodCondition(
        type="DisruptionTarget",
        status="True",
        reason="PreemptionByScheduler",
        message="default-scheduler: preempting to accommodate a higher priority pod",
    )
    marked = client.update_pod_status("default", "low0", condition=cond)
    client.store.delete(POD, "default/low0")
    handle, removed = _carry_out([PodInfo(marked)], client)
    assert removed == [] and handle.activated == ["high"]
    assert client.events.events == []
    # A victim seen without the condition is patched first: the 404 counts as gone (1.34.1 logs the failed
    # patch as an error, yet its goroutine ends in "success"), so the preemptor is activated here too.
    handle, removed = _carry_out([PodInfo(created)], client)
    assert removed == [] and handle.activated == ["high"]


def test_a_victim_gone_before_its_patch_does_not_activate_a_preemptor_whose_other_victims_go(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # An earlier preemptor's victim is deleted while this one still counts it: the other victim's deletion
    # event requeues the preemptor (by its backoff), as upstream; activating it would retry it at once.
    client = EmbeddedClient(ClusterStore())
    gone = client.create(POD, make_pod("low0", "1", priority=0, node="node-0"))
    still = client.create(POD, make_pod("low1", "1", priority=0, node="node-0"))
    client.store.delete(POD, "default/low0")
    with caplog.at_level(klog.level(2), logger="kubesched.preemption"):
        handle, removed = _carry_out([PodInfo(still), PodInfo(gone)], client)
    assert removed == ["low1"] and client.store.count(POD) == 0
    assert handle.activated == []
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == ["Could not add DisruptionTarget condition due to preemption"]
    finished = [r for r in caplog.records if r.getMessage() == "Async Preemption finished completely"]
    assert [r.__dict__["result"] for r in finished] == ["success"]


class _DeferringHandle(_Handle):
    """Keeps the deferred work with its cycle counts, to run it by hand."""

    def __init__(self, client: EmbeddedClient) -> None:
        super().__init__(client)
        self.deferred: list[tuple[int, Callable[[], None]]] = []

    def run_after_cycles(self, cycles: int, fn: Callable[[], None]) -> None:
        self.deferred.append((cycles, fn))


def test_all_victims_but_the_last_go_first_and_the_last_a_round_later_once_the_preemptor_is_released() -> None:
    # Upstream's goroutine deletes all victims but the last in parallel, takes the preemptor out of its
    # preempting set, then deletes the last: a pod popped in between (the preemptor too) sees it still there.
    client = EmbeddedClient(ClusterStore())
    victims = [PodInfo(client.create(POD, make_pod(f"low{i}", "1", priority=0, node="node-0"))) for i in range(3)]
    handle = _DeferringHandle(client)
    ev = Evaluator("DefaultPreemption", handle, None)  # type: ignore[arg-type]
    preemptor = PodInfo(make_pod("high", "3", priority=1000, uid="uid-high"))
    ev.prepare_candidate_async(Candidate("node-0", Victims(victims)), preemptor)
    ((cycles, first),) = handle.deferred
    assert cycles == CYCLES_PER_API_ROUND and client.store.count(POD) == 3
    first()
    # Released before the last victim goes: the earlier deletions requeue it while low2 is still there.
    assert sorted(p.metadata.name for p in client.store.list(POD)) == ["low2"]
    assert not ev.is_pod_running_preemption("uid-high")
    (cycles, last) = handle.deferred[1]
    assert cycles == LAST_ROUND_CYCLES
    last()
    assert client.store.count(POD) == 0 and not ev.is_pod_running_preemption("uid-high")
