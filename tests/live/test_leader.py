"""Crashes, restarts and leader election: every pod is bound exactly once."""

from __future__ import annotations

import signal

from tests.live.conftest import (
    BOTH,
    Cluster,
    Proc,
    bound_nodes,
    make_pod,
    nodes_yaml,
    sched_config,
    wait_ready,
    wait_until,
)

PODS = 120


def _create_pods(cluster: Cluster, n: int = PODS) -> None:
    for i in range(n):
        cluster.api.create("/api/v1/namespaces/default/pods", make_pod(f"p{i:03d}", cpu="50m"))


def _bound(cluster: Cluster) -> int:
    return sum(1 for n in bound_nodes(cluster.api).values() if n)


def _assert_each_bound_once(cluster: Cluster) -> None:
    wait_until(lambda: _bound(cluster) == PODS, timeout=60, what="all pods bound")
    if cluster.server is None:
        binds = cluster.api.stats()["binds"]
        assert len(binds) == PODS
        assert set(binds.values()) == {1}, {k: v for k, v in binds.items() if v != 1}
        return
    # The audit log has every answer. No replica bound a pod twice, nor tried to (409). A 504 is a killed
    # replica's binding, cancelled when its connection dropped (done or not: the pod shows which).
    answers = wait_until(lambda: a if len(a := cluster.server.bindings()) == PODS else None, what="a binding per pod")
    codes = {k: [b.code for b in v] for k, v in answers.items()}
    assert not {k: c for k, c in codes.items() if c.count(201) > 1 or set(c) - {201, 504}}, codes


def _holder(cluster: Cluster) -> str:
    lease = cluster.api.lease()
    return str(lease["spec"].get("holderIdentity") or "") if lease else ""


@BOTH
def test_kill_9_and_restart(cluster: Cluster) -> None:
    cluster.start(nodes_yaml(4))
    # The pods first (creating them is slow under load), then a slow client (one bind per pod: 20 at once, then
    # 2 a second) so that the kill lands mid-run however long the start took.
    _create_pods(cluster)
    first = cluster.start_run(sched_config(qps=2, burst=20), "first")
    wait_until(lambda: _bound(cluster) >= 20, timeout=60, what="some pods bound")
    first.popen.kill()
    first.popen.wait(5)
    assert _bound(cluster) < PODS, "the kill should land mid-run"
    second = cluster.start_run(sched_config(qps=2000), "second")
    _assert_each_bound_once(cluster)
    assert _holder(cluster) == "second"
    assert second.stop() == 0


@BOTH
def test_two_replicas_failover(cluster: Cluster) -> None:
    cluster.start(nodes_yaml(4))
    # The pods first, then the leader with a slow client (20 binds at once, then 2 a second): the standby
    # starts, and the leader is killed, while it is binding them, however long the starts take.
    _create_pods(cluster)
    a = cluster.start_run(sched_config(qps=2, burst=20), "a")
    wait_until(lambda: _holder(cluster) == "a", timeout=30, what="a leads")
    b = cluster.start_run(sched_config(), "b")
    wait_ready(a)
    wait_ready(b)
    wait_until(lambda: _bound(cluster) >= 20, timeout=60, what="some pods bound")
    assert "Started leading" not in b.text(), "the standby must not schedule"
    a.popen.kill()
    a.popen.wait(5)
    assert _bound(cluster) < PODS
    wait_until(lambda: _holder(cluster) == "b", timeout=20, what="b takes over")
    _assert_each_bound_once(cluster)
    assert "Started leading" in b.text()
    # A clean stop releases the lease, so that a standby takes over without waiting for it to expire.
    c = cluster.start_run(sched_config(), "c")
    wait_ready(c)
    assert b.stop() == 0
    assert _holder(cluster) in ("", "c")
    wait_until(lambda: _holder(cluster) == "c", timeout=5, what="c takes over")
    lease = cluster.api.lease()
    assert lease["spec"]["leaseTransitions"] >= 2
    cluster.api.create("/api/v1/namespaces/default/pods", make_pod("late"))
    wait_until(lambda: bound_nodes(cluster.api).get("late"), what="the new leader schedules")
    assert c.stop() == 0


@BOTH
def test_losing_the_lease_stops_scheduling(cluster: Cluster) -> None:
    api = cluster.start(nodes_yaml(1))
    run: Proc = cluster.start_run(sched_config(), "victim")
    wait_until(lambda: _holder(cluster) == "victim", timeout=30, what="victim leads")
    lease = api.lease()
    lease["spec"].update({"holderIdentity": "intruder", "leaseDurationSeconds": 60})
    code, _ = api.call("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubesched", lease)
    assert code == 200
    assert run.popen.wait(10) == 1
    assert "Leaderelection lost" in run.text()
    api.create("/api/v1/namespaces/default/pods", make_pod("orphan"))
    assert bound_nodes(api)["orphan"] == ""
    assert _holder(cluster) == "intruder"
    run.stop(signal.SIGKILL)
