"""Failures between `kubesched run` and the API server: bind errors, cut watches, 410 Gone."""

from __future__ import annotations

import time

import pytest
from tests.live.conftest import Cluster, bound_nodes, make_pod, nodes_yaml, sched_config, wait_ready, wait_until


@pytest.mark.parametrize(
    ("code", "after"),
    [(409, False), (404, False), (500, False), (500, True)],
    ids=["409", "404", "500", "500-after-binding"],
)
def test_bind_errors_are_retried_and_bind_once(cluster: Cluster, code: int, after: bool) -> None:
    api = cluster.start_serve(nodes_yaml(2))
    run = cluster.start_run(sched_config())
    wait_ready(run)
    api.fault(verb="bind", resource="pods", name="p0", code=code, count=1, after=after)
    for i in range(3):
        api.create("/api/v1/namespaces/default/pods", make_pod(f"p{i}"))
    wait_until(lambda: all(bound_nodes(api).values()), timeout=20, what="all pods bound")
    stats = api.stats()
    assert stats["binds"] == {"default/p0": 1, "default/p1": 1, "default/p2": 1}
    if not after:
        # The failed attempt went through the scheduler's failure path: a SchedulerError condition and event.
        ev = wait_until(lambda: [e for e in api.events() if e["reason"] == "FailedScheduling"])
        assert ev[0]["regarding"]["name"] == "p0"
        assert "injected fault" in ev[0]["note"]
        # Later, the successful bind wins. (When the failed answer hid a successful bind, upstream too may patch
        # PodScheduled=False onto the bound pod if its informer had not seen the binding yet: not checked then.)
        cond = next(c for c in api.pod("p0")["status"]["conditions"] if c["type"] == "PodScheduled")
        assert cond["status"] == "True"
    assert run.alive()
    assert run.stop() == 0


def test_cut_watches_and_410_gone(cluster: Cluster) -> None:
    # One slot per node: a pod can only land where another was deleted, so the scheduler must see deletes.
    api = cluster.start_serve(nodes_yaml(2, cpu="1"), "--history", "50")
    run = cluster.start_run(sched_config())
    wait_ready(run)
    for i in range(2):
        api.create("/api/v1/namespaces/default/pods", make_pod(f"a{i}", cpu="1"))
    wait_until(lambda: all(bound_nodes(api).values()), what="first pods bound")

    # 1. A cut watch resumes from its last resourceVersion: nothing is missed.
    assert api.call("POST", "/kubesched/watches/cut")[1]["cut"] > 0
    api.call("DELETE", "/api/v1/namespaces/default/pods/a0")
    api.create("/api/v1/namespaces/default/pods", make_pod("b0", cpu="1"))
    wait_until(lambda: bound_nodes(api).get("b0"), what="b0 bound after the watch was cut")

    # 2. Watches fail while changes happen, and the history is compacted: the next watch gets 410 Gone and the
    # reflectors list again; the mirror reconciles (a1 deleted behind its back frees a node for b1).
    api.fault(verb="watch", resource="*", code=500, count=-1)
    api.call("POST", "/kubesched/watches/cut")
    time.sleep(0.3)
    api.call("DELETE", "/api/v1/namespaces/default/pods/a1")
    api.create("/api/v1/namespaces/default/pods", make_pod("b1", cpu="1"))
    api.call("POST", "/kubesched/compact")
    api.call("DELETE", "/kubesched/faults")
    wait_until(lambda: bound_nodes(api).get("b1"), timeout=20, what="b1 bound after relisting")
    assert "Watch expired, listing again" in run.text()
    metrics = run.metrics()
    assert 'kubesched_reflector_relists_total{resource="pods"}' in metrics
    assert api.stats()["binds"] == {"default/a0": 1, "default/a1": 1, "default/b0": 1, "default/b1": 1}
    assert run.stop() == 0


def test_status_patches_while_the_server_fails_are_bounded_per_pod(cluster: Cluster) -> None:
    """Binds and status patches fail for `outage` seconds: the patches go one per pod at a time, not one per attempt.

    One dispatcher worker (--bind-workers 1) and the retry backoff (4 tries, >= 0.31 s) bound what can be sent:
    sending a patch per failed attempt, as kubesched did, made 4 requests per failure (360 here).
    """
    pods, outage = 30, 4.0
    api = cluster.start_serve(nodes_yaml(2))
    run = cluster.start_run(sched_config(), "run", "--bind-workers", "1")
    wait_ready(run)
    api.fault(verb="bind", resource="pods", code=503, count=-1)
    api.fault(verb="patch", resource="pods", code=503, count=-1)
    start = time.monotonic()
    for i in range(pods):
        api.create("/api/v1/namespaces/default/pods", make_pod(f"p{i}"))
    time.sleep(max(0.0, outage - (time.monotonic() - start)))
    during = api.stats()["calls"]
    api.call("DELETE", "/kubesched/faults")
    elapsed = time.monotonic() - start
    wait_until(lambda: all(bound_nodes(api).values()), timeout=60, what="all pods bound after the outage")
    assert during.get("bind pods/binding", 0) >= 2, "binds failed during the outage"
    patches = during.get("patch pods/status", 0)
    assert 0 < patches <= 4 * (elapsed / 0.31 + 1), patches
    # Each pod had at most one patch waiting; a bound pod's patch is dropped, the others go once each.
    wait_until(lambda: "scheduler_pending_async_api_calls" in run.metrics(), what="metrics")
    wait_until(lambda: 'scheduler_pending_async_api_calls{call_type="pod_status_patch"} 0.0' in run.metrics())
    after = api.stats()["calls"].get("patch pods/status", 0) - patches
    assert after <= pods + 1, after
    for name, pod in api.pods().items():
        cond = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
        assert cond["status"] == "True", (name, cond)
    metrics = run.metrics()
    assert 'scheduler_async_api_call_execution_total{call_type="pod_status_patch",result="error"}' in metrics
    assert run.stop() == 0
