"""A long-running `kubesched run` keeps nothing of the pods that are gone.

The scheduler runs in this process (its threads, not its signal handling)
against `kubesched serve`; pods go through in waves: created, bound, deleted.
After the warm-up waves and again after the measured ones, once the scheduler
has seen every deletion, nothing in it may still be about those pods: no
scheduler object of any kind more than before (PodInfo, attempt records, ...),
no container objects piling up, and the interpreter's allocated blocks grown
by a few per pod at most (a per-pod record costs tens). benchmarks/live_memory.py shows the same at
200,000 pods through the process's RSS.
"""

from __future__ import annotations

import collections
import gc
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.live.conftest import SCHEDULER, Api, Cluster, make_pod, nodes_yaml, sched_config, wait_until

from kubesched.config import load_config_file
from kubesched.live import gc_policy
from kubesched.live.http import MAX_IDLE
from kubesched.live.kubeconfig import load_connection
from kubesched.live.runner import LiveScheduler

WAVE = 200
WARMUP_WAVES = 3
MEASURED_WAVES = 4


@pytest.fixture
def live(cluster: Cluster, tmp_path: Path) -> Iterator[LiveScheduler]:
    cluster.start_serve(nodes_yaml(20, cpu="64"), "--history", "100000")
    assert cluster.kubeconfig is not None
    cfg = tmp_path / "sched.yaml"
    cfg.write_text(sched_config(leader_elect=False))
    # With the garbage-collector policy `kubesched run` has (gc_policy): rare collections until synced, then the
    # usual ones with the synced caches frozen.
    thresholds = gc_policy.start_up()
    runner = LiveScheduler(
        load_config_file(str(cfg)), load_connection(str(cluster.kubeconfig)), port=0, gc_after_sync=thresholds
    )

    def body() -> None:
        try:
            runner.start()
            if runner.wait_for_sync():
                runner.start_leading()
                runner.loop()
        finally:
            runner.shutdown()

    thread = threading.Thread(target=body, name="scheduler", daemon=True)
    thread.start()
    try:
        wait_until(lambda: runner.synced, 30, what="caches synced")
        yield runner
    finally:
        runner.request_stop()
        thread.join(30)
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def push_wave(api: Api, live: LiveScheduler, wave: int) -> None:
    """Create a wave of pods, wait until all are bound, delete them, wait until the scheduler let go of them."""
    for i in range(WAVE):
        pod = make_pod(f"w{wave}-{i}", cpu="10m")
        pod["metadata"]["labels"] = {"wave": str(wave)}
        api.create("/api/v1/namespaces/default/pods", pod)
    wait_until(lambda: live.pool.bound >= (wave + 1) * WAVE, 60, what=f"wave {wave} bound")
    code, _ = api.call("DELETE", f"/api/v1/namespaces/default/pods?labelSelector=wave%3D{wave}")
    assert code == 200
    sched = live.sched
    wait_until(
        lambda: live.mirror.count("Pod") == 0 and not sched.cache.pod_states and not live.events.cache,
        30,
        what=f"the scheduler to let go of wave {wave}",
    )


def census() -> collections.Counter[str]:
    gc.collect()
    return collections.Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())


# Kept-alive connections follow the peak of requests at once (bounded by http.MAX_IDLE), not the pods.
POOLED = "kubesched.live.http._Connection"


def ours(before: collections.Counter[str], after: collections.Counter[str]) -> dict[str, int]:
    """The scheduler's own objects (kubesched.*, but pooled connections) that are more or fewer than `before`."""
    keys = after.keys() | before.keys()
    diff = {k: after[k] - before[k] for k in keys if k.startswith("kubesched.") and k != POOLED}
    return {k: d for k, d in diff.items() if d}


def settled_census(before: collections.Counter[str], timeout: float = 5.0) -> collections.Counter[str]:
    """A census once the scheduler thread is done with what it was doing (a leak stays; work in hand ends)."""
    deadline = time.monotonic() + timeout
    after = census()
    while ours(before, after) and time.monotonic() < deadline:
        time.sleep(0.2)
        after = census()
    return after


def test_pods_that_went_through_leave_nothing_behind(cluster: Cluster, live: LiveScheduler) -> None:
    api = cluster.api
    for w in range(WARMUP_WAVES):
        push_wave(api, live, w)
    before = census()
    blocks = sys.getallocatedblocks()
    for w in range(WARMUP_WAVES, WARMUP_WAVES + MEASURED_WAVES):
        push_wave(api, live, w)
    after = settled_census(before)
    grown = sys.getallocatedblocks() - blocks
    pods = WAVE * MEASURED_WAVES
    assert live.pool.bound == WAVE * (WARMUP_WAVES + MEASURED_WAVES) and live.pool.failed == 0

    sched = live.sched
    # Without attempt records the attempt durations are still measured, and /metrics shows the cache empty.
    total = WAVE * (WARMUP_WAVES + MEASURED_WAVES)
    labels = {"result": "scheduled", "profile": SCHEDULER}
    assert sched.metrics.value("scheduler_scheduling_attempt_duration_seconds_count", **labels) == total
    assert sched.metrics.value("scheduler_scheduling_attempt_duration_seconds_sum", **labels) > 0
    assert 'scheduler_scheduler_cache_size{type="pods"} 0.0' in live.metrics_text()
    q = sched.queue
    assert q.pending_counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert not q.in_flight and not q.nominator.pods and not sched.cache.assumed
    # Not one object of the scheduler's own types more than after the warm-up (per-pod records would be).
    # (Compared with the census after warm-up, not with zero: the suite's other tests in this process may
    # still hold a few objects of ours, e.g. through a failure's traceback.)
    assert ours(before, after) == {}
    streams = len(live.reflectors)  # a watch holds a connection of its own
    assert after[POOLED] <= streams + MAX_IDLE * len(live._clients())
    # Containers (a dict or tuple per pod, say) would pile up by the hundred; the warm-up's leftovers
    # (threads of the bind pool started late, connections) are a few dozen.
    piled = {k: after[k] - before[k] for k in ("builtins.dict", "builtins.list", "builtins.tuple", "builtins.set")}
    assert all(d < pods / 2 for d in piled.values()), piled
    # Everything else (strings are not in the census): a record per pod costs tens of blocks (attempts with
    # their scores and the events cache took 40 per pod); what grows here is library caches filling up to
    # their bounds (yarl's parsed URLs, the test's own urllib), one or two blocks per pod at this scale.
    assert grown < 4 * pods, f"{grown} more allocated blocks after {pods} pods"
