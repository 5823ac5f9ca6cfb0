"""The API dispatcher: live mode's writes of pods, queued per pod (pkg/scheduler/backend/api_dispatcher).

kube-scheduler 1.34 sends its status patches and bindings through one queue
(SchedulerAsyncAPICalls): at most one call per pod waits in it, and at most one
runs, so a pod retried many times while the API server is down costs a few
writes, not one per attempt. When a call comes for a pod that already has one:

- the new one is less relevant (a status patch while the binding waits or runs):
  it is skipped;
- it is of another kind (a binding for a pod whose patch waits): it replaces the
  waiting one, or, if that one runs, waits for it;
- it is of the same kind: it takes in what the older one would have written
  (merge) and replaces it; if the older one runs, the new one waits for it;
- whatever wins is dropped if it would change nothing (is_noop), unless a call
  for the pod is running.

The watch keeps waiting calls up to date (sync_pod): a patch is measured against
the newest copy of its pod, and dropped once that copy already says what it
would write. kubesched also drops a waiting status patch whose pod the watch
shows deleted or bound (`drop_obsolete`): upstream would send it to fail (404)
or to mark a bound pod unschedulable.

Pods are served first come, first served, by at most `parallelism` calls at
once (the goroutines limiter); the calls run on the I/O loop, and `add`,
`sync_pod` and `drop_obsolete` may be called from any thread. `on_finish` gets
None, the call's error, CallSkipped or CallOverwritten, once, on whichever
thread settles the call.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.core import Pod
from kubesched.live.api_calls import POD_STATUS_PATCH, RELEVANCES, ApiCall
from kubesched.live.iothread import IoLoop
from kubesched.live.rest import RestClient

log = logging.getLogger("kubesched.live.api_dispatcher")

OnFinish = Callable[[BaseException | None], None]


class CallSkipped(Exception):
    """fwk.ErrCallSkipped: the call was not sent (a more relevant one exists, or it had no effect)."""


class CallOverwritten(Exception):
    """fwk.ErrCallOverwritten: a newer call for the same pod took this one's place."""


class DispatcherClosed(Exception):
    """The dispatcher stopped before the call ran."""

    def __init__(self) -> None:
        super().__init__("api dispatcher is closed")


@dataclass(eq=False)
class _Queued:
    call: ApiCall
    on_finish: OnFinish | None
    call_id: int

    def finish(self, err: BaseException | None) -> None:
        """Report once, as upstream's non-blocking send into a one-slot channel: the first outcome wins."""
        cb, self.on_finish = self.on_finish, None
        if cb is not None:
            cb(err)


@dataclass
class DispatcherStats:
    """What the dispatcher did, for metrics and tests."""

    executed: Counter[tuple[str, str]] = field(default_factory=Counter)  # (call type, success|error)
    skipped: Counter[str] = field(default_factory=Counter)
    overwritten: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)


class ApiDispatcher:
    def __init__(
        self, rest: RestClient, io: IoLoop, parallelism: int, relevances: dict[str, int] | None = None
    ) -> None:
        self.rest = rest
        self.io = io
        self.parallelism = max(int(parallelism), 1)
        self.relevances = dict(relevances or RELEVANCES)
        self.stats = DispatcherStats()
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._calls: dict[str, _Queued] = {}  # pod UID -> its latest call (waiting or running)
        # UIDs whose call waits, first come first served (an OrderedDict: a waiting call leaves it in O(1)).
        self._queue: OrderedDict[str, None] = OrderedDict()
        self._running: set[str] = set()
        self._workers = 0  # on the loop only
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self._kick_due = False

    # ------------------------------------------------------------ adding (any thread)

    def add(self, call: ApiCall, on_finish: OnFinish | None = None) -> BaseException | None:
        """Queue a call; returns CallSkipped or DispatcherClosed when it will not run (on_finish gets it too)."""
        q = _Queued(call, on_finish, 0)
        with self._lock:
            if self._closed:
                err: BaseException = DispatcherClosed()
                q.finish(err)
                return err
            q.call_id = next(self._ids)
            uid = call.uid
            old = self._calls.get(uid)
            if old is not None:
                err2 = self._merge(old, q)
                if err2 is not None:
                    return err2
            if call.is_noop() and uid not in self._running:
                if old is not None:
                    self._remove_waiting(uid)
                return self._skip(q, "call does not need to be executed because it has no effect")
            self._calls[uid] = q
            if old is not None:
                # Already queued, or running: the new call goes when the running one is finalized.
                return None
            self._queue[uid] = None
        self._kick()
        return None

    def _merge(self, old: _Queued, new: _Queued) -> BaseException | None:
        """callQueue.merge, under the lock: skip the new call, replace the old one, or fold it in."""
        rel = self.relevances
        if rel.get(new.call.call_type, 0) < rel.get(old.call.call_type, 0):
            return self._skip(new, "a more relevant call is already enqueued for this object")
        if old.call.call_type != new.call.call_type:
            if old.call.uid not in self._running:
                self.stats.overwritten[old.call.call_type] += 1
                old.finish(CallOverwritten("a more relevant call was enqueued for this object"))
            return None
        new.call.merge(old.call)
        self.stats.overwritten[old.call.call_type] += 1
        old.finish(CallOverwritten("a call of the same type was enqueued for this object"))
        return None

    def _skip(self, q: _Queued, why: str) -> BaseException:
        self.stats.skipped[q.call.call_type] += 1
        err = CallSkipped(why)
        q.finish(err)
        return err

    def _remove_waiting(self, uid: str) -> _Queued | None:
        """Forget a call that has not started (under the lock)."""
        q = self._calls.pop(uid, None)
        if q is not None and uid not in self._running:
            self._queue.pop(uid, None)
        return q

    # ------------------------------------------------------------ the watch (any thread)

    def sync_pod(self, pod: Pod) -> None:
        """SyncObject: a newer copy of a pod reaches its waiting call; a call it makes pointless is dropped."""
        m = pod.metadata
        uid = m.uid or f"{m.namespace}/{m.name}"
        with self._lock:
            q = self._calls.get(uid)
            if q is None:
                return
            q.call.sync(pod)
            if q.call.is_noop() and uid not in self._running:
                self._remove_waiting(uid)
                self._skip(q, "call does not need to be executed because after sync it has no effect")

    def drop_obsolete(self, pod: Pod, deleted: bool) -> None:
        """A waiting status patch of a pod the watch shows deleted, or bound, will not be sent."""
        m = pod.metadata
        uid = m.uid or f"{m.namespace}/{m.name}"
        with self._lock:
            q = self._calls.get(uid)
            if q is None or uid in self._running or q.call.call_type != POD_STATUS_PATCH:
                return
            if deleted or pod.spec.node_name:
                self._remove_waiting(uid)
                self.stats.dropped[q.call.call_type] += 1
                q.finish(CallSkipped("the pod is deleted" if deleted else "the pod is bound"))

    def retain(self, uids: Iterable[str]) -> None:
        """After a fresh list: drop waiting status patches of pods that are gone."""
        keep = set(uids)
        with self._lock:
            gone = [
                u
                for u, q in self._calls.items()
                if u not in keep and u not in self._running and q.call.call_type == POD_STATUS_PATCH
            ]
            for uid in gone:
                q = self._remove_waiting(uid)
                if q is not None:
                    self.stats.dropped[q.call.call_type] += 1
                    q.finish(CallSkipped("the pod is deleted"))

    # ------------------------------------------------------------ running (on the loop)

    def _kick(self) -> None:
        # One wake-up of the loop for all the calls added while it was busy.
        if not self._kick_due:
            self._kick_due = True
            self.io.call_batched(self._spawn)

    def _spawn(self) -> None:
        self._kick_due = False
        while self._workers < self.parallelism and self._queue:
            self._workers += 1
            t = self.io.loop.create_task(self._work())
            self._tasks.add(t)
            t.add_done_callback(self._tasks.discard)

    def _pop(self) -> _Queued | None:
        with self._lock:
            if self._closed or not self._queue:
                return None
            uid, _ = self._queue.popitem(last=False)
            q = self._calls[uid]
            self._running.add(uid)
            q.call.begin()
            return q

    async def _work(self) -> None:
        try:
            while True:
                q = self._pop()
                if q is None:
                    return
                err: BaseException | None = None
                try:
                    await q.call.execute(self.rest)
                except Exception as e:  # noqa: BLE001 - the call's error is its outcome
                    err = e
                self.stats.executed[(q.call.call_type, "error" if err else "success")] += 1
                self._finalize(q)
                q.finish(err)
        finally:
            self._workers -= 1

    def _finalize(self, q: _Queued) -> None:
        """The pod's call ran: forget it, or queue the newer call that came meanwhile."""
        uid = q.call.uid
        with self._lock:
            self._running.discard(uid)
            cur = self._calls.get(uid)
            if cur is None:
                return
            if cur.call_id == q.call_id:
                del self._calls[uid]
            else:
                self._queue[uid] = None

    # ------------------------------------------------------------ state

    @property
    def pending(self) -> int:
        """Calls waiting or running (shutdown waits for them)."""
        with self._lock:
            return len(self._calls)

    def pending_by_type(self) -> dict[str, int]:
        """scheduler_pending_async_api_calls: calls waiting (not running), by type."""
        with self._lock:
            out: dict[str, int] = {t: 0 for t in self.relevances}
            for uid in self._queue:
                t = self._calls[uid].call.call_type
                out[t] = out.get(t, 0) + 1
            return out

    def wait_idle(self, timeout: float) -> bool:
        """Wait (from a thread other than the loop's) until no call waits or runs."""
        deadline = time.monotonic() + timeout
        while self.pending:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def close(self) -> None:
        """Every call not yet finished gets DispatcherClosed; nothing more is started."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            calls = list(self._calls.values())
            self._queue.clear()
        for q in calls:
            q.finish(DispatcherClosed())

    def describe(self) -> dict[str, Any]:
        with self._lock:
            return {"waiting": len(self._queue), "running": len(self._running), "calls": len(self._calls)}
