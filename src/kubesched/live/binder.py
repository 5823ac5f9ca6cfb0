"""A bounded pool of concurrent binds.

Upstream binds each pod in its own goroutine so that the next scheduling cycle
does not wait for the API server. Here the API part of a binding cycle (the Bind
plugins or a binder extender: an HTTP call) runs on one of `size` worker
threads; its outcome comes back through the scheduler thread's inbox, where the
rest of the binding cycle (cache, events, requeue on failure) completes. When
`size` binds are in flight the scheduler waits for one to finish before it
schedules another pod, so a slow API server slows scheduling instead of piling
up assumed pods.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubesched.framework.status import Code, Status

log = logging.getLogger("kubesched.live.binder")


class BindPool:
    def __init__(self, size: int, post: Callable[[tuple[Any, ...]], None]) -> None:
        self.size = max(int(size), 1)
        self.post = post
        self.executor = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="kubesched-bind")
        self.in_flight = 0  # scheduler thread only
        self.bound = 0
        self.failed = 0

    @property
    def full(self) -> bool:
        return self.in_flight >= self.size

    def submit(
        self, pod: Any, node: str, work: Callable[[], Status | None], done: Callable[[Status | None], None]
    ) -> None:
        """Run `work` on a worker; `done(status)` will run on the scheduler thread (see `complete`)."""
        self.in_flight += 1
        start = time.monotonic()

        def run() -> None:
            try:
                s = work()
            except Exception as err:  # noqa: BLE001 - a failing binder is a failed binding
                s = Status.as_error(err)
            self.post(("bound", pod, node, s, time.monotonic() - start, done))

        self.executor.submit(run)

    def complete(
        self, pod: Any, node: str, s: Status | None, seconds: float, done: Callable[[Status | None], None]
    ) -> None:
        self.in_flight -= 1
        key = getattr(pod, "key", str(pod))
        if s is None or s.code == Code.SUCCESS:
            self.bound += 1
            log.info("Successfully bound pod to node", extra={"pod": key, "node": node, "seconds": round(seconds, 4)})
        else:
            self.failed += 1
            log.warning("Failed to bind pod", extra={"pod": key, "node": node, "err": s.message()})
        done(s)

    def shutdown(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=False)
