"""The scheduling loop's timing in batch mode: when a binding's watch event reaches the queue.

kube-scheduler binds in a goroutine and pops the next pod at once, so a pod's binding
reaches the scheduling queue while the next pod is being scheduled: if that pod fails and
the event may help it, it is retried after its backoff instead of waiting in the
unschedulable pool. What PreBind wrote before the binding waits (a PersistentVolume's
claim) reaches it a cycle later still. The expected files were produced by kube-scheduler
v1.34.1 (the oracle; the outcomes are the same in repeated runs).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.oracle_cases import assert_as_upstream

CASES = sorted((Path(__file__).parent / "batch_timing").glob("*.yaml"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_a_binding_is_seen_while_the_next_pod_is_scheduled(case: Path) -> None:
    assert_as_upstream(case)
