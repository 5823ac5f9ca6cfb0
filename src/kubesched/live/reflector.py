"""Reflectors (client-go tools/cache/reflector.go): LIST, then WATCH from the list's resourceVersion.

A reflector keeps one kind of the remote cluster flowing into the scheduler:
a LIST replaces the mirror's content, then a WATCH with allowWatchBookmarks
streams changes from that resourceVersion on. As client-go's, the first LIST
asks for resourceVersion 0 (any version, served whole from the API server's
watch cache: one request, not one per page), a LIST after a watch ended asks for
the last version seen or newer (unpaged, which the watch cache answers at its
current version), and a LIST that finds that version too old (410) asks for a
consistent read. A watch that ends is restarted from the last resourceVersion
seen (bookmarks keep it fresh); 410 Gone ("too old resource version") means
events were compacted away, so the reflector lists again and the mirror
reconciles. Failures back off
exponentially (0.8 s doubling to 30 s, as upstream).

Reflectors run on the I/O loop and never touch the mirror: they hand decoded
objects to `sink`, which queues them for the scheduler thread.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from typing import Any

import msgspec
import orjson

from kubesched.api.decode import DecodeError, decode, decode_json, decode_json_list
from kubesched.live.errors import ApiError, is_gone, parse_status
from kubesched.live.resources import Resource
from kubesched.live.rest import RestClient

log = logging.getLogger("kubesched.live.reflector")

PAGE_SIZE = 500
MIN_WATCH_TIMEOUT = 300.0
BACKOFF_INITIAL = 0.8
BACKOFF_MAX = 30.0
BACKOFF_RESET_AFTER = 120.0

# What a reflector hands to its sink.
Replace = tuple[str, str, list[Any], str]  # ("replace", kind, objects, resourceVersion)
Event = tuple[str, str, str, Any]  # ("event", kind, ADDED|MODIFIED|DELETED, object)


class _WatchEvent(msgspec.Struct):
    """A watch line, its object left as JSON until the type says how to read it."""

    type: str = ""
    object: msgspec.Raw = msgspec.Raw(b"{}")


_read_event = msgspec.json.Decoder(_WatchEvent).decode


class Gone(Exception):
    """The watch's resourceVersion is too old: list again."""


class _Backoff:
    def __init__(self) -> None:
        self.delay = 0.0
        self.last = 0.0

    def next(self) -> float:
        now = time.monotonic()
        if now - self.last > BACKOFF_RESET_AFTER:
            self.delay = 0.0
        self.last = now
        self.delay = BACKOFF_INITIAL if self.delay == 0 else min(self.delay * 2, BACKOFF_MAX)
        return self.delay * (1 + random.random())

    def reset(self) -> None:
        self.delay = 0.0


class Reflector:
    def __init__(
        self,
        rest: RestClient,
        resource: Resource,
        sink: Callable[[tuple[Any, ...]], None],
        *,
        field_selector: str = "",
        page_size: int = PAGE_SIZE,
        min_watch_timeout: float = MIN_WATCH_TIMEOUT,
    ) -> None:
        self.rest = rest
        self.resource = resource
        self.kind = resource.kind
        self.sink = sink
        self.field_selector = field_selector
        self.page_size = page_size
        self.min_watch_timeout = min_watch_timeout
        self.resource_version = ""
        self.version_unavailable = False  # the last version seen was too old to list from: read consistently
        self.paginated = False  # the server paged a list of ours (it has no watch cache for this kind)
        self.synced = asyncio.Event()
        self.relists = 0
        self.watches = 0
        self.absent = False

    def _decode(self, raw: dict[str, Any]) -> Any | None:
        try:
            return decode(self.kind, raw)
        except DecodeError as err:
            meta = raw.get("metadata") or {}
            log.warning(
                "Skipping undecodable object",
                extra={"kind": self.kind, "object": meta.get("name"), "field": err.field, "err": err.message},
            )
            return None

    def relist_version(self) -> str:
        """The resourceVersion to list at (client-go's relistResourceVersion)."""
        if self.version_unavailable:
            return ""
        return self.resource_version or "0"

    def _decode_json(self, data: bytes) -> Any | None:
        try:
            return decode_json(self.kind, data)
        except DecodeError:
            return self._decode(_loads_or_empty(data))

    async def list(self) -> tuple[list[Any], str]:
        """A LIST in pages; a version too old to list from, or an expired continue token, lists again."""
        path = self.resource.collection_path()
        items: list[Any] = []
        since = self.relist_version()
        params: dict[str, str] = {}
        # A limit with a resourceVersion other than 0 asks for exactly that version (from etcd, maybe long
        # compacted or, after an API server restart, older than its watch cache): as client-go, page such a
        # list only if this server paged us before (no watch cache); otherwise get it whole, not older than it.
        if self.page_size and (since in ("", "0") or self.paginated):
            params["limit"] = str(self.page_size)
        if self.field_selector:
            params["fieldSelector"] = self.field_selector
        if since:
            params["resourceVersion"] = since
        rv = ""
        while True:
            code, body = await self.rest.request("GET", path, params=params)
            if code == 410 and "continue" in params:
                log.info("List continuation expired, listing again without paging", extra={"kind": self.kind})
                params = {k: v for k, v in params.items() if k not in ("continue", "limit")}
                items = []
                continue
            if code == 410 and params.get("resourceVersion", "0") != "0":
                log.info("Resource version too old to list from, listing the latest", extra={"kind": self.kind})
                self.version_unavailable = True
                params.pop("resourceVersion")
                if self.page_size:
                    params["limit"] = str(self.page_size)
                continue
            if code >= 300:
                st = parse_status(body)
                raise ApiError(code, str(st.get("reason", "")), str(st.get("message", f"HTTP {code}")))
            page = decode_json_list(self.kind, body)
            if page is not None:
                items += page.items
                rv, token = page.resource_version or rv, page.continue_token
            else:  # an item that does not decode cleanly: one by one, to skip (and name) the bad ones
                doc = orjson.loads(body)
                for raw in doc.get("items") or ():
                    obj = self._decode(raw)
                    if obj is not None:
                        items.append(obj)
                meta = doc.get("metadata") or {}
                rv = str(meta.get("resourceVersion", rv))
                token = meta.get("continue") or ""
            if not token:
                return items, rv
            self.paginated = True
            params["continue"] = str(token)
            params.pop("resourceVersion", None)  # the token holds the version; the server refuses both

    async def watch(self) -> None:
        """One watch from self.resource_version; returns when the server ends it cleanly."""
        timeout = self.min_watch_timeout * (1 + random.random())
        params = {
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(int(timeout)),
        }
        if self.field_selector:
            params["fieldSelector"] = self.field_selector
        self.watches += 1
        async for ev in self.rest.watch(self.resource.collection_path(), params, timeout, parse=_read_event):
            etype = ev.type
            if etype in ("ADDED", "MODIFIED", "DELETED"):
                obj = self._decode_json(bytes(ev.object))
                if obj is not None:
                    self.sink(("event", self.kind, etype, obj))
                    rv = obj.metadata.resource_version
                else:
                    rv = str((_loads_or_empty(bytes(ev.object)).get("metadata") or {}).get("resourceVersion", ""))
                if rv:
                    self.resource_version = rv
                continue
            raw = _loads_or_empty(bytes(ev.object))
            if etype == "ERROR":
                if is_gone(int(raw.get("code") or 0), raw):
                    raise Gone(raw.get("message", "too old resource version"))
                raise ApiError(int(raw.get("code") or 0), str(raw.get("reason", "")), str(raw.get("message", "")))
            rv = str((raw.get("metadata") or {}).get("resourceVersion", ""))
            if etype == "BOOKMARK":
                if rv:
                    self.resource_version = rv
                continue

    async def run(self) -> None:
        """List and watch until cancelled."""
        backoff = _Backoff()
        need_list = True
        while True:
            try:
                if need_list:
                    items, rv = await self.list()
                    self.sink(("replace", self.kind, items, rv))
                    self.resource_version = rv
                    self.version_unavailable = False
                    need_list = False
                    self.absent = False
                    if self.synced.is_set():
                        self.relists += 1
                    self.synced.set()
                await self.watch()
                backoff.reset()
            except Gone as err:
                log.info("Watch expired, listing again", extra={"kind": self.kind, "err": str(err)})
                need_list = True
            except ApiError as err:
                if err.code == 404 and need_list:
                    # The API group is not served by this cluster (e.g. no resource.k8s.io/v1): nothing to mirror.
                    if not self.absent:
                        log.warning("Resource not served; treating it as empty", extra={"kind": self.kind})
                        self.sink(("replace", self.kind, [], ""))
                    self.absent = True
                    self.synced.set()
                    await asyncio.sleep(BACKOFF_MAX)
                    continue
                delay = backoff.next()
                log.warning(
                    "Watch failed, retrying",
                    extra={"kind": self.kind, "code": err.code, "err": err.message, "retryIn": round(delay, 2)},
                )
                await asyncio.sleep(delay)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # noqa: BLE001 - e.g. a garbled stream: never let a reflector die
                delay = backoff.next()
                log.error("Reflector failed, retrying", extra={"kind": self.kind, "err": repr(err), "retryIn": delay})
                need_list = True
                await asyncio.sleep(delay)


def _loads_or_empty(data: bytes) -> dict[str, Any]:
    """A JSON object, or {} for anything else (a watch's object that is not one)."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return {}
    return doc if isinstance(doc, dict) else {}
