"""The served store: the embedded ClusterStore plus each object's full JSON, a change log and watchers.

Typed objects (the kinds `decode` knows) stay the scheduler's view; next to each
the store keeps the JSON a client sent, so fields our structs do not model
(images, commands, ...) survive a round trip through kubectl. When a typed
object changes (admission, a bind, a status patch) only what changed in the
typed view is written into the JSON. Kinds without a struct (Events, Leases)
are kept as JSON only. One resourceVersion counter orders every change; the
last `history` changes are kept so that a watch can resume from a recent
resourceVersion, and an older one gets 410 Gone.

Events expire `event_ttl` after their last write, as the API server's
(`--event-ttl`, 1 h: etcd leases): a server that runs a scheduler for weeks
holds the last hour's events, not every event it ever stored. Expired events
are deleted (watchers see DELETED) whenever an event is written or the
built-in scheduler records one.
"""

from __future__ import annotations

import asyncio
import copy
import time
import uuid
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import msgspec

from kubesched.api.decode import decode
from kubesched.api.meta import ObjectMeta
from kubesched.cluster.clock import RealClock
from kubesched.cluster.store import ADDED, DELETED, MODIFIED, ClusterStore, Conflict, NotFound, object_key
from kubesched.live.client import merge_diff
from kubesched.serve.patch import merge_patch
from kubesched.serve.selectors import Matcher

DEFAULT_HISTORY = 10_000
# kube-apiserver's --event-ttl default.
DEFAULT_EVENT_TTL = 3600.0


class SecondsClock(RealClock):
    """The real clock; datetimes in whole seconds, as metav1.Time serializes them."""

    def datetime(self) -> datetime:
        return super().datetime().replace(microsecond=0)


def time_str(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Change:
    rv: int
    kind: str
    etype: str
    old: dict[str, Any] | None
    new: dict[str, Any] | None


class Gone(Exception):
    """The requested resourceVersion has been compacted away."""


@dataclass(eq=False)
class Watcher:
    kind: str
    namespace: str
    matches: Matcher
    queue: asyncio.Queue[tuple[str, dict[str, Any], int] | None] = field(default_factory=asyncio.Queue)
    cut: bool = False

    def offer(self, ch: Change) -> None:
        old_in = ch.old is not None and self._selected(ch.old)
        new_in = ch.new is not None and self._selected(ch.new)
        if ch.etype == DELETED:
            if old_in:
                self.queue.put_nowait((DELETED, ch.old, ch.rv))  # type: ignore[arg-type]
        elif new_in:
            self.queue.put_nowait((MODIFIED if old_in else ADDED, ch.new, ch.rv))  # type: ignore[arg-type]
        elif old_in:
            self.queue.put_nowait((DELETED, ch.new, ch.rv))  # type: ignore[arg-type]

    def _selected(self, raw: dict[str, Any]) -> bool:
        if self.namespace and (raw.get("metadata") or {}).get("namespace") != self.namespace:
            return False
        return self.matches(raw)


class ServedStore(ClusterStore):
    def __init__(
        self, clock: RealClock | None = None, history: int = DEFAULT_HISTORY, event_ttl: float = DEFAULT_EVENT_TTL
    ) -> None:
        super().__init__(clock or SecondsClock())
        self.raw: dict[str, dict[str, dict[str, Any]]] = {}
        self.changes: deque[Change] = deque()
        self.history = history
        self.compacted_rv = 0
        self.last_rv = 0
        self.watchers: set[Watcher] = set()
        # JSON bodies from clients, consumed by the next typed write of the same object.
        self.incoming: dict[tuple[str, str], dict[str, Any]] = {}
        self.on_change: list[Any] = []
        self.event_ttl = event_ttl
        # Event key -> when it expires (time.monotonic()), soonest first: each write moves it to the end.
        self._event_expiry: OrderedDict[str, float] = OrderedDict()

    # ------------------------------------------------------------ versions and log

    def _next_rv(self) -> int:
        self.last_rv = next(self._rv)
        return self.last_rv

    def _stamp(self, obj: Any, new: bool, kept: ObjectMeta | None = None) -> Any:
        obj = super()._stamp(obj, new, kept)
        self.last_rv = int(obj.metadata.resource_version)
        return obj

    def _record(self, kind: str, etype: str, old: dict[str, Any] | None, new: dict[str, Any] | None, rv: int) -> None:
        ch = Change(rv, kind, etype, old, new)
        self.changes.append(ch)
        while len(self.changes) > self.history:
            self.compacted_rv = self.changes.popleft().rv
        for w in list(self.watchers):
            if w.kind == kind:
                w.offer(ch)
        for cb in self.on_change:
            cb()

    def compact(self) -> None:
        """Forget the change log: any watch from an older resourceVersion now gets 410 Gone."""
        self.changes.clear()
        self.compacted_rv = self.last_rv

    def changes_since(self, kind: str, rv: int) -> list[Change]:
        if rv < self.compacted_rv:
            raise Gone(f"too old resource version: {rv} ({self.compacted_rv + 1})")
        return [c for c in self.changes if c.rv > rv and c.kind == kind]

    # ------------------------------------------------------------ JSON view

    def get_raw(self, kind: str, key: str) -> dict[str, Any] | None:
        return self.raw.get(kind, {}).get(key)

    def iter_raw(self, kind: str) -> list[dict[str, Any]]:
        return list(self.raw.get(kind, {}).values())

    def _overlay(self, kind: str, base: dict[str, Any], typed: Any) -> dict[str, Any]:
        """`base` with the typed object's changes written in (unknown fields kept)."""
        try:
            seen = msgspec.to_builtins(decode(kind, base))
        except Exception:  # noqa: BLE001 - an undecodable base: the typed view is all we have
            seen = {}
        diff = merge_diff(seen, msgspec.to_builtins(typed))
        out = merge_patch(base, diff)
        if isinstance(out.get("metadata"), dict):
            for k in ("creationTimestamp", "deletionTimestamp"):
                v = out["metadata"].get(k)
                if isinstance(v, str) and "." in v:
                    out["metadata"][k] = v.split(".")[0] + "Z"
        return out

    # ------------------------------------------------------------ typed writes (ClusterStore API)

    def create(self, kind: str, obj: Any) -> Any:
        key = object_key(obj)
        base = self.incoming.pop((kind, key), None) or {}
        obj = super().create(kind, obj)
        raw = self._overlay(kind, base, obj)
        self.raw.setdefault(kind, {})[key] = raw
        self._record(kind, ADDED, None, raw, int(obj.metadata.resource_version))
        return obj

    def update(self, kind: str, obj: Any) -> Any:
        key = object_key(obj)
        old_raw = self.get_raw(kind, key) or {}
        base = self.incoming.pop((kind, key), None) or old_raw
        obj = super().update(kind, obj)
        raw = self._overlay(kind, base, obj)
        self.raw.setdefault(kind, {})[key] = raw
        self._record(kind, MODIFIED, old_raw, raw, int(obj.metadata.resource_version))
        return obj

    def delete(self, kind: str, key: str) -> Any:
        old = super().delete(kind, key)
        old_raw = self.raw.get(kind, {}).pop(key, None) or {}
        rv = self._next_rv()
        final = copy.deepcopy(old_raw)
        final.setdefault("metadata", {})["resourceVersion"] = str(rv)
        self._record(kind, DELETED, final, None, rv)
        return old

    # ------------------------------------------------------------ JSON-only kinds (Events, Leases)

    def create_raw(self, kind: str, raw: dict[str, Any]) -> dict[str, Any]:
        if kind == "Event":
            self.expire_events()
        meta = raw.setdefault("metadata", {})
        key = _raw_key(raw)
        bucket = self.raw.setdefault(kind, {})
        if key in bucket:
            raise Conflict(f'"{meta.get("name")}" already exists')
        rv = self._next_rv()
        meta.update(
            {
                "resourceVersion": str(rv),
                "uid": meta.get("uid") or str(uuid.uuid4()),
                "creationTimestamp": time_str(self.clock.datetime()),
            }
        )
        bucket[key] = raw
        self._touch(kind, key)
        self._record(kind, ADDED, None, raw, rv)
        return raw

    def update_raw(self, kind: str, raw: dict[str, Any]) -> dict[str, Any]:
        if kind == "Event":
            self.expire_events()
        key = _raw_key(raw)
        old = self.raw.get(kind, {}).get(key)
        if old is None:
            raise NotFound(kind, key)
        rv = self._next_rv()
        meta = raw.setdefault("metadata", {})
        old_meta = old.get("metadata") or {}
        meta.update(
            {
                "resourceVersion": str(rv),
                "uid": old_meta.get("uid", ""),
                "creationTimestamp": old_meta.get("creationTimestamp"),
            }
        )
        self.raw[kind][key] = raw
        self._touch(kind, key)
        self._record(kind, MODIFIED, old, raw, rv)
        return raw

    def delete_raw(self, kind: str, key: str) -> dict[str, Any]:
        old = self.raw.get(kind, {}).pop(key, None)
        if old is None:
            raise NotFound(kind, key)
        if kind == "Event":
            self._event_expiry.pop(key, None)
        rv = self._next_rv()
        final = copy.deepcopy(old)
        final.setdefault("metadata", {})["resourceVersion"] = str(rv)
        self._record(kind, DELETED, final, None, rv)
        return old

    def _touch(self, kind: str, key: str) -> None:
        if kind == "Event":
            self._event_expiry[key] = time.monotonic() + self.event_ttl
            self._event_expiry.move_to_end(key)

    def expire_events(self) -> None:
        """Delete the events whose TTL is over (watchers see DELETED)."""
        now = time.monotonic()
        while self._event_expiry:
            key, at = next(iter(self._event_expiry.items()))
            if at > now:
                return
            self.delete_raw("Event", key)  # drops it from _event_expiry too


def _raw_key(raw: dict[str, Any]) -> str:
    meta = raw.get("metadata") or {}
    ns, name = meta.get("namespace", ""), meta.get("name", "")
    return f"{ns}/{name}" if ns else name
