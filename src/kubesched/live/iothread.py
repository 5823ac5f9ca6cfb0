"""The I/O loop: one asyncio loop on a background thread, for every network call.

The scheduler thread (and the bind pool's threads) hand it coroutines: `call`
waits for the answer, `spawn` does not. Nothing on this loop touches the
scheduler's cache or queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger("kubesched.live")


class IoLoop:
    def __init__(self) -> None:
        # asyncio's own loop: uvloop's took a tenth less CPU per pod, but its process grew by ~0.4 MB per
        # 1,000 pods against a real API server (TLS) where asyncio's stays flat (benchmarks/live_memory.py).
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="kubesched-io", daemon=True)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._batch: deque[tuple[Any, tuple[Any, ...]]] = deque()
        self._batch_due = False

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def start(self) -> None:
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = 120.0) -> T:
        """Run on the loop and wait for the result (from any thread but the loop's)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def spawn(self, coro: Coroutine[Any, Any, Any], what: str = "") -> None:
        """Fire and forget; failures are logged."""

        def start() -> None:
            t = self.loop.create_task(coro)
            self._tasks.add(t)
            t.add_done_callback(lambda t: self._finished(t, what))

        self.loop.call_soon_threadsafe(start)

    def _finished(self, t: asyncio.Task[Any], what: str) -> None:
        self._tasks.discard(t)
        if not t.cancelled() and t.exception() is not None:
            log.error("Background task failed", extra={"task": what, "err": repr(t.exception())})

    def call_soon(self, fn: Any, *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def call_batched(self, fn: Any, *args: Any) -> None:
        """call_soon for frequent small calls: those made while the loop is busy run together, in order, after
        one wake-up (waking the loop is a write to its self-pipe: a system call per event adds up)."""
        self._batch.append((fn, args))
        if not self._batch_due:
            self._batch_due = True
            self.loop.call_soon_threadsafe(self._run_batch)

    def _run_batch(self) -> None:
        self._batch_due = False
        batch = self._batch
        while batch:
            fn, args = batch.popleft()
            try:
                fn(*args)
            except Exception as err:  # noqa: BLE001 - one failing call must not lose the others
                name = getattr(fn, "__qualname__", repr(fn))
                log.error("Callback failed", extra={"callback": name, "err": repr(err)})

    def cancel_tasks(self) -> None:
        """Cancel whatever runs on the loop (reflectors, watches) and wait for it to end: before the
        connections close, so that nothing reports their closing as a failure and retries."""

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self.loop.is_running():
            with contextlib.suppress(Exception):  # best effort at shutdown
                self.call(cancel_all(), timeout=5)

    def stop(self) -> None:
        if self.loop.is_running():
            self.cancel_tasks()
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)
