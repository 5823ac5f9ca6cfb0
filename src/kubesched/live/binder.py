"""The binding cycles in flight: upstream's binding goroutines.

Upstream binds each pod in its own goroutine so that the next scheduling cycle
does not wait for the API server; how many API calls run at once is the API
dispatcher's business (its `parallelism`), not the goroutines'. Here the API part
of a binding cycle goes one of two ways: DefaultBinder's call is handed to the
dispatcher and reports its own end (`submit_call`: no thread waits for it); any
other Bind plugin or a binder extender runs on a thread of this pool (`submit`).
Either way the outcome comes back through the scheduler thread's inbox, where
the rest of the binding cycle (cache, events, requeue on failure) completes.
While the API server is slow or down, binds pile up in the dispatcher's queue as
upstream's do (each newer than the pod's waiting status patch, which it
replaces) and the scheduler goes on; only at `size` binds in flight (1024 by
default: threads mostly wait) does it wait for one to finish.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubesched.framework.status import Code, Status
from kubesched.klog import info, kobj

log = logging.getLogger("kubesched.live.binder")


BINDING_CYCLES_MAX = 1024


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

    def submit_call(
        self,
        pod: Any,
        node: str,
        start: Callable[[Callable[[Status | None], None]], None],
        done: Callable[[Status | None], None],
    ) -> None:
        """A binding whose API call reports its own end (`start(finished)`): no worker waits for it."""
        self.in_flight += 1
        begun = time.monotonic()

        def finished(s: Status | None) -> None:
            self.post(("bound", pod, node, s, time.monotonic() - begun, done))

        try:
            start(finished)
        except Exception as err:  # noqa: BLE001 - a call that cannot start is a failed binding
            finished(Status.as_error(err))

    def complete(
        self, pod: Any, node: str, s: Status | None, seconds: float, done: Callable[[Status | None], None]
    ) -> None:
        self.in_flight -= 1
        if s is None or s.code == Code.SUCCESS:
            self.bound += 1
        else:
            self.failed += 1
        info(log, 5, "Binding finished", pod=kobj(getattr(pod, "key", str(pod))), node=node, seconds=round(seconds, 4))
        # The scheduler logs the outcome as upstream: "Successfully bound pod to node" at V(2), else V(1).
        done(s)

    def shutdown(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=False)
