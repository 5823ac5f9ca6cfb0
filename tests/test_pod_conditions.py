"""The conditions the scheduler writes carry the pod's generation (PodObservedGenerationTracking, beta in 1.34).

What kube-scheduler v1.34.1 did against kube-apiserver v1.34.1: PodScheduled=False and DisruptionTarget got
`observedGeneration` = the generation of the pod it looked at; a retry after a spec change that failed with
the same message left the condition alone (UpdatePodCondition ignores observedGeneration); the API server
counted the graceful deletion of a victim in its generation.
"""

from __future__ import annotations

import msgspec

from kubesched.api.core import Pod, Toleration
from kubesched.cluster.embedded import EmbeddedCluster
from kubesched.config import default_configuration
from kubesched.scheduler import Scheduler
from kubesched.testing import make_node, make_pod


def _run(sched: Scheduler) -> None:
    while sched.schedule_one():
        pass


def _condition(cluster: EmbeddedCluster, key: str, type_: str) -> tuple[Pod, int, str]:
    pod: Pod = cluster.store.get("Pod", key)
    cond = next(c for c in pod.status.conditions if c.type == type_)
    return pod, cond.observed_generation, cond.message


def test_pod_scheduled_false_carries_the_generation_the_scheduler_saw() -> None:
    cluster = EmbeddedCluster()
    cluster.client.add_node(make_node("n1", cpu="1"))
    created = cluster.client.create("Pod", make_pod("big", cpu="2"))
    assert created.metadata.generation == 1, "the API server's generation at creation"
    sched = Scheduler(cluster, default_configuration(), clock=cluster.clock.now)
    _run(sched)
    pod, observed, message = _condition(cluster, "default/big", "PodScheduled")
    assert (observed, message) == (
        1,
        (
            "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: "
            "0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        ),
    )

    # The spec changes (generation 2); the next attempt fails the same way: the condition is left as it was.
    tolerations = [*pod.spec.tolerations, Toleration(key="k", operator="Exists")]
    spec = msgspec.structs.replace(pod.spec, tolerations=tolerations)
    cluster.store.update(
        "Pod", msgspec.structs.replace(pod, spec=spec, metadata=msgspec.structs.replace(pod.metadata, generation=2))
    )
    cluster.clock.advance(301)
    sched.queue.flush_unschedulable_leftover()
    _run(sched)
    [failed] = [e for e in cluster.client.events.events if e.reason == "FailedScheduling"]
    assert failed.count == 2, "tried again"
    assert _condition(cluster, "default/big", "PodScheduled")[1:] == (1, message)

    # A new message is a new condition, with the generation of the pod this attempt saw.
    cluster.client.add_node(make_node("n2", cpu="1"))
    cluster.clock.advance(301)
    sched.queue.flush_unschedulable_leftover()
    _run(sched)
    _, observed, message = _condition(cluster, "default/big", "PodScheduled")
    assert message.startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert observed == 2


def test_disruption_target_carries_the_victims_generation() -> None:
    cluster = EmbeddedCluster(graceful_deletion=True)
    cluster.client.add_node(make_node("n1", cpu="2"))
    cluster.client.create("Pod", make_pod("victim", cpu="2", node="n1", priority=0))
    sched = Scheduler(cluster, default_configuration(), clock=cluster.clock.now)
    cluster.client.create("Pod", make_pod("high", cpu="2", priority=100))
    _run(sched)
    victim, observed, message = _condition(cluster, "default/victim", "DisruptionTarget")
    assert message == "default-scheduler: preempting to accommodate a higher priority pod"
    assert observed == 1
    # Terminating now: the API server counts the start of a graceful deletion in the generation.
    assert victim.metadata.deletion_timestamp is not None and victim.metadata.generation == 2
