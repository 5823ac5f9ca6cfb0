"""events.k8s.io/v1 Events as kube-scheduler writes them (client-go tools/events).

`make_event` builds the object the recorder makes: name "<regarding>.<hex ns>",
eventTime in microseconds, reportingController = the profile's scheduler name,
reportingInstance = "<controller>-<hostname>". The broadcaster aggregates as
upstream does: an event isomorphic to one seen in the last 6 minutes (same type,
action, reason, reporter, regarding and related objects; the note may differ)
is not written again. Its second occurrence turns it into a series (PATCH
series.count=2); later ones only bump the count locally, written when the series
goes quiet (6 min) or every 30 min. So a pod retried a thousand times makes a
handful of writes, not a thousand.

The cache holds the events of the last 6 minutes, but an event can only
repeat while the pod it is about stays as it was: the scheduler refers to a pod
as its informer holds it (uid and resourceVersion), and to a pod it no longer
has without a uid. So once a pod changes (it was bound) or goes away, its
single events leave the cache at once (`forget`) instead of 6 minutes later, and
a scheduler churning through pods holds none of them. Series stay until their
final count is written.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import socket
import time
from datetime import UTC, datetime
from typing import Any

from kubesched.live.errors import ApiError
from kubesched.live.resources import BY_KIND
from kubesched.live.rest import STRATEGIC_MERGE_PATCH, RestClient

log = logging.getLogger("kubesched.live.events")

MAX_TRIES_PER_EVENT = 12
FINISH_TIME = 6 * 60.0
REFRESH_TIME = 30 * 60.0
MAX_QUEUED_EVENTS = 1000
RETRY_SLEEP = 10.0
NOTE_MAX = 1024


def micro_time(dt: datetime) -> str:
    """metav1.MicroTime: RFC 3339 with exactly six fractional digits."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def object_reference(kind: str, raw_or_obj: Any) -> dict[str, str]:
    """reference.GetReference for a typed object or a raw mapping."""
    if isinstance(raw_or_obj, dict):
        meta = raw_or_obj.get("metadata") or {}
        ns, name, uid, rv = (
            meta.get("namespace", ""),
            meta.get("name", ""),
            meta.get("uid", ""),
            meta.get("resourceVersion", ""),
        )
    else:
        m = raw_or_obj.metadata
        ns, name, uid, rv = m.namespace, m.name, m.uid, m.resource_version
    ref = {"kind": kind, "namespace": ns, "name": name, "uid": uid, "apiVersion": BY_KIND[kind].group_version}
    if rv:
        ref["resourceVersion"] = rv
    return {k: v for k, v in ref.items() if v}


@functools.cache
def _hostname() -> str:
    return socket.gethostname()


def make_event(
    regarding: dict[str, str],
    related: dict[str, str] | None,
    type_: str,
    reason: str,
    action: str,
    note: str,
    controller: str,
    now: datetime | None = None,
) -> dict[str, Any]:
    now = now or datetime.now(UTC)
    ns = regarding.get("namespace") or "default"
    ev: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{regarding.get('name', '')}.{int(now.timestamp() * 1e9):x}", "namespace": ns},
        "eventTime": micro_time(now),
        "reportingController": controller,
        "reportingInstance": f"{controller}-{_hostname()}",
        "action": action,
        "reason": reason,
        "regarding": regarding,
        "note": note[:NOTE_MAX],
        "type": type_,
    }
    if related:
        ev["related"] = related
    return ev


def event_key(ev: dict[str, Any]) -> tuple[Any, ...]:
    """getKey: the fields that make two events isomorphic (not the note)."""
    return (
        ev.get("type"),
        ev.get("action"),
        ev.get("reason"),
        ev.get("reportingController"),
        ev.get("reportingInstance"),
        tuple(sorted((ev.get("regarding") or {}).items())),
        tuple(sorted((ev.get("related") or {}).items())),
    )


class EventBroadcaster:
    """Aggregates and writes events; every method runs on the I/O loop."""

    def __init__(self, rest: RestClient, finish_time: float = FINISH_TIME, refresh_time: float = REFRESH_TIME) -> None:
        self.rest = rest
        self.finish_time = finish_time
        self.refresh_time = refresh_time
        self.cache: dict[tuple[Any, ...], dict[str, Any]] = {}
        self._observed: dict[tuple[Any, ...], float] = {}
        # uid of the regarding object -> the keys of its cached events (see forget).
        self._by_uid: dict[str, set[tuple[Any, ...]]] = {}
        self.in_flight = 0
        self.dropped = 0
        self.written = 0
        self._tasks: set[asyncio.Task[None]] = set()

    def record(self, ev: dict[str, Any]) -> None:
        key = event_key(ev)
        cached = self.cache.get(key)
        now = datetime.now(UTC)
        self._observed[key] = time.monotonic()
        if cached is not None:
            series = cached.get("series")
            if series is not None:
                series["count"] += 1
                series["lastObservedTime"] = micro_time(now)
                return
            cached["series"] = {"count": 2, "lastObservedTime": micro_time(now)}
            self._spawn(_copy(cached))
            return
        self.cache[key] = ev
        uid = ev.get("regarding", {}).get("uid")
        if uid:
            self._by_uid.setdefault(uid, set()).add(key)
        self._spawn(_copy(ev))

    def forget(self, uid: str, resource_version: str = "") -> None:
        """The object `uid` is now at `resource_version` ("": gone): drop its single events about other versions.

        Its series stay, for their final write (finish_series).
        """
        keys = self._by_uid.get(uid)
        if keys is None:
            return
        for key in list(keys):
            ev = self.cache.get(key)
            if ev is None:
                keys.discard(key)
            elif ev.get("series") is None and (
                not resource_version or ev["regarding"].get("resourceVersion") != resource_version
            ):
                del self.cache[key]
                self._observed.pop(key, None)
                keys.discard(key)
        if not keys:
            del self._by_uid[uid]

    def _evict(self, key: tuple[Any, ...]) -> None:
        ev = self.cache.pop(key, None)
        self._observed.pop(key, None)
        uid = ev.get("regarding", {}).get("uid") if ev is not None else None
        if not uid:
            return
        keys = self._by_uid.get(uid)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_uid[uid]

    def _spawn(self, ev: dict[str, Any]) -> None:
        if self.in_flight >= MAX_QUEUED_EVENTS:
            self.dropped += 1
            return
        self.in_flight += 1
        t = asyncio.get_running_loop().create_task(self._attempt(ev))
        self._tasks.add(t)
        t.add_done_callback(self._done)

    def _done(self, t: asyncio.Task[None]) -> None:
        self._tasks.discard(t)
        self.in_flight -= 1

    async def _attempt(self, ev: dict[str, Any]) -> None:
        for _ in range(MAX_TRIES_PER_EVENT):
            if await self._write(ev):
                return
            await asyncio.sleep(RETRY_SLEEP * (1 + 0.25 * random.random()))
        log.error("Unable to write event (retry limit exceeded!)", extra={"reason": ev.get("reason")})

    async def _write(self, ev: dict[str, Any]) -> bool:
        """recordEvent: PATCH a series (CREATE if it vanished), CREATE a new event; True when done."""
        meta = ev["metadata"]
        path = BY_KIND["Event"].collection_path(meta["namespace"])
        try:
            if ev.get("series") is not None:
                try:
                    await self.rest.call(
                        "PATCH",
                        f"{path}/{meta['name']}",
                        body={"series": ev["series"]},
                        content_type=STRATEGIC_MERGE_PATCH,
                        kind="Event",
                    )
                    self.written += 1
                    return True
                except KeyError:
                    pass
            body = {**ev, "metadata": {k: v for k, v in meta.items() if k != "resourceVersion"}}
            await self.rest.call("POST", path, body=body, kind="Event")
            self.written += 1
            return True
        except ApiError as err:
            # recordEvent: only a server that could not be reached is tried again; any answer of its (a 503
            # too) is a StatusError, which client-go gives up on.
            if err.code == 0:
                log.warning("Unable to write event (may retry after sleeping)", extra={"err": str(err)})
                return False
            log.error("Server rejected event (will not retry!)", extra={"err": str(err), "reason": ev.get("reason")})
            return True
        except RuntimeError as err:  # Conflict: AlreadyExists
            if ev.get("series") is not None:
                return False
            log.debug("Server rejected event (will not retry!)", extra={"err": str(err)})
            return True

    async def finish_series(self) -> None:
        """Write the final count of quiet series; forget quiet singletons."""
        cutoff = time.monotonic() - self.finish_time
        for key, ev in list(self.cache.items()):
            if self._observed.get(key, 0.0) >= cutoff:
                continue
            if ev.get("series") is not None and not await self._write(_copy(ev)):
                continue
            self._evict(key)

    async def refresh_series(self) -> None:
        for ev in list(self.cache.values()):
            if ev.get("series") is not None:
                await self._write(_copy(ev))

    async def run(self) -> None:
        """The periodic finish/refresh loops (StartRecordingToSinkWithContext)."""
        last_refresh = time.monotonic()
        while True:
            await asyncio.sleep(min(self.finish_time, 30.0))
            await self.finish_series()
            if time.monotonic() - last_refresh >= self.refresh_time:
                last_refresh = time.monotonic()
                await self.refresh_series()

    async def flush(self, timeout: float) -> None:
        """Wait (bounded) for in-flight writes, then write the pending series counts."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout)
        for ev in list(self.cache.values()):
            if ev.get("series") is not None:
                await self._write(_copy(ev))


def _copy(ev: dict[str, Any]) -> dict[str, Any]:
    out = dict(ev)
    if "series" in ev and ev["series"] is not None:
        out["series"] = dict(ev["series"])
    return out
