"""List (with limit and continue tokens) and watch (with bookmarks), upstream's get.go and watch.go.

A paginated list keeps the rest of its items under its continue token, so the pages of one list are
one consistent read, as upstream's continue tokens (which pin a resourceVersion) make them.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from typing import Any

import orjson
from aiohttp import web

from kubesched.serve import discovery, tables
from kubesched.serve.coreevent import core_event
from kubesched.serve.handler import JSON, Handler, Route, respond
from kubesched.serve.status import ApiError, status_body
from kubesched.serve.storage import Gone, Watcher

CONTINUE_TTL = 120.0
# Paginated lists in progress (continue tokens) kept at once; the oldest go first (410 Expired, as a
# compacted continue token gets upstream). Each holds the rest of its list.
MAX_CONTINUES = 100


class ListWatch(Handler):
    """The list and watch verbs of every resource."""

    bookmark_interval: float
    _snapshots: dict[str, tuple[float, str, list[dict[str, Any]]]]

    def _list(self, req: web.Request, route: Route) -> web.Response:
        now = time.monotonic()
        for tok in [t for t, (at, _, _) in self._snapshots.items() if now - at > CONTINUE_TTL]:
            del self._snapshots[tok]
        token = req.query.get("continue", "")
        if token:
            snap = self._snapshots.pop(token, None)
            if snap is None:
                raise ApiError(
                    410,
                    "Expired",
                    "The provided continue parameter is too old to display a consistent list result. You can start "
                    "a new list without the continue parameter.",
                )
            _, rv, items = snap
        else:
            match = self._matchers(req)
            rv = str(self.store.last_rv)
            items = []
            for raw in sorted(self.store.iter_raw(route.kind), key=_sort_key):
                view = self._view(route, raw)
                if route.namespace and (view.get("metadata") or {}).get("namespace") != route.namespace:
                    continue
                if match(view):
                    items.append(view)
        limit = _int_param(req, "limit")
        meta: dict[str, Any] = {"resourceVersion": rv}
        if limit > 0 and len(items) > limit:
            items, rest = items[:limit], items[limit:]
            tok = uuid.uuid4().hex
            while len(self._snapshots) >= MAX_CONTINUES:
                del self._snapshots[next(iter(self._snapshots))]
            self._snapshots[tok] = (now, rv, rest)
            meta["continue"] = tok
            meta["remainingItemCount"] = len(rest)
        if "as=Table" in req.headers.get("Accept", ""):
            t = tables.table(route.resource.kind, items, rv, route.resource.group_version)
            if "continue" in meta:
                t["metadata"]["continue"] = meta["continue"]
            return respond(t)
        kind = discovery.kind_name(route.resource) + "List"
        return respond({"kind": kind, "apiVersion": route.resource.group_version, "metadata": meta, "items": items})

    async def _watch(self, req: web.Request, route: Route) -> web.StreamResponse:
        match = self._matchers(req)
        rv_param = req.query.get("resourceVersion", "")
        timeout = _int_param(req, "timeoutSeconds") or 1800
        bookmarks = req.query.get("allowWatchBookmarks") in ("true", "1")
        as_table = "as=Table" in req.headers.get("Accept", "")
        core = route.resource.kind == "CoreEvent"
        w = Watcher(route.kind, route.namespace, (lambda raw: match(core_event(raw))) if core else match)
        resp = web.StreamResponse(status=200, headers={"Content-Type": JSON})
        await resp.prepare(req)

        async def send(etype: str, raw: dict[str, Any]) -> None:
            obj = self._typed_view(route, raw)
            if as_table:
                obj = tables.table(route.resource.kind, [self._view(route, raw)], str(self.store.last_rv), "")
            await resp.write(orjson.dumps({"type": etype, "object": obj}) + b"\n")

        try:
            if rv_param in ("", "0"):
                for raw in sorted(self.store.iter_raw(route.kind), key=_sort_key):
                    if w._selected(raw):
                        w.queue.put_nowait(("ADDED", raw, 0))
            else:
                for ch in self.store.changes_since(route.kind, int(rv_param)):
                    w.offer(ch)
        except Gone as err:
            gone = status_body(410, "Expired", str(err))
            await resp.write(orjson.dumps({"type": "ERROR", "object": gone}) + b"\n")
            return resp
        except ValueError:
            raise ApiError(400, "BadRequest", f"invalid resource version: {rv_param!r}") from None
        self.store.watchers.add(w)
        deadline = time.monotonic() + timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    item = await asyncio.wait_for(w.queue.get(), timeout=min(remaining, self.bookmark_interval))
                except TimeoutError:
                    if bookmarks:
                        await self._bookmark(resp, route)
                    continue
                if item is None:
                    if req.transport is not None:
                        req.transport.abort()
                    return resp
                await send(item[0], item[1])
            if bookmarks:
                await self._bookmark(resp, route)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.store.watchers.discard(w)
        return resp

    async def _bookmark(self, resp: web.StreamResponse, route: Route) -> None:
        obj = {
            "kind": discovery.kind_name(route.resource),
            "apiVersion": route.resource.group_version,
            "metadata": {"resourceVersion": str(self.store.last_rv)},
        }
        await resp.write(orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n")


def _int_param(req: web.Request, name: str) -> int:
    """An int64 query parameter (0 when absent), refused in strconv.ParseInt's words as upstream does."""
    text = req.query.get(name, "")
    if not text:
        return 0
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ApiError(400, "BadRequest", f'strconv.ParseInt: parsing "{text}": invalid syntax')
    value = int(text)
    if not -(1 << 63) <= value < (1 << 63):
        raise ApiError(400, "BadRequest", f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def _sort_key(raw: dict[str, Any]) -> tuple[str, str]:
    meta = raw.get("metadata") or {}
    return (meta.get("namespace", ""), meta.get("name", ""))
