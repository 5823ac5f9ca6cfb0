"""The built-in scheduler of `kubesched serve`: the Scheduler on the served store, in the event loop.

It runs between requests: after each write it is woken, schedules until
nothing can be popped (yielding to the loop after every pod), and otherwise
sleeps until the next backoff flush or Permit deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.scheduler import Scheduler

BACKOFF_FLUSH_PERIOD = 1.0
UNSCHEDULABLE_FLUSH_PERIOD = 30.0


class BuiltinScheduler:
    def __init__(self, cluster: Any, config: KubeSchedulerConfiguration, seed: int = 0) -> None:
        self.sched = Scheduler(cluster, config, clock=cluster.clock.now, seed=seed)
        self.sched.log_errors = True
        self._wake = asyncio.Event()

    def kick(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        sched = self.sched
        q = sched.queue
        assert q is not None
        next_flush = next_leftover = 0.0
        while True:
            now = time.monotonic()
            if now >= next_flush:
                next_flush = now + BACKOFF_FLUSH_PERIOD
                q.flush_backoff_completed()
            if now >= next_leftover:
                next_leftover = now + UNSCHEDULABLE_FLUSH_PERIOD
                q.flush_unschedulable_leftover()
            progressed = bool(sched.has_parked() and sched.resume_parked())
            progressed = sched.schedule_one() or progressed
            if progressed:
                await asyncio.sleep(0)
                continue
            self._wake.clear()
            wait = next_flush - time.monotonic()
            deadline = sched.next_parked_deadline()
            if deadline is not None:
                wait = min(wait, deadline - sched.now())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=max(wait, 0.001))
