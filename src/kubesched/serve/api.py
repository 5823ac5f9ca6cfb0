"""The REST handlers of `kubesched serve` (aiohttp), over the served cluster.

Requests run on the event loop one at a time between scheduling cycles, so
each is atomic with respect to the store and the scheduler. Errors are
metav1.Status objects with upstream's reasons and messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import logging
import random
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from kubesched.api.decode import KINDS
from kubesched.api.intake import FieldValidation, IntakeError, admit
from kubesched.cluster.admission import AdmissionError
from kubesched.cluster.store import Conflict, NotFound
from kubesched.gocompat.strconv import go_quote
from kubesched.live.resources import Resource
from kubesched.serve import body as bodies
from kubesched.serve import discovery, tables
from kubesched.serve.cluster import ServedCluster
from kubesched.serve.faults import Faults
from kubesched.serve.fieldvalidation import (
    field_validation,
    go_json_sorted,
    go_value,
    json_patch_duplicates,
    patch_strict_error,
    strict_error,
    warning_headers,
)
from kubesched.serve.patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from kubesched.serve.scale import replicas_of, scale_view
from kubesched.serve.selectors import SelectorError, field_matcher, label_matcher
from kubesched.serve.status import ApiError, status_body
from kubesched.serve.storage import Gone, Watcher

JSON = "application/json"
CONTINUE_TTL = 120.0
# Paginated lists in progress (continue tokens) kept at once; the oldest go first (410 Expired, as a
# compacted continue token gets upstream). Each holds the rest of its list.
MAX_CONTINUES = 100
MAX_JSON_PATCH_OPERATIONS = 10_000  # upstream's maxJSONPatchOperations
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
# The Warning texts of the request being served (fieldValidation=Warn); each request runs in a task of its own.
_warnings: contextvars.ContextVar[list[str]] = contextvars.ContextVar("kubesched_serve_warnings")

log = logging.getLogger("kubesched.serve")


def respond(obj: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(obj), status=status, content_type=JSON)


def not_found(r: Resource, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{r.plural} "{name}" not found', {"name": name, "kind": r.plural})


@dataclass
class Route:
    resource: Resource
    namespace: str
    name: str
    sub: str

    @property
    def kind(self) -> str:
        """The stored kind (core/v1 Events are the events.k8s.io/v1 objects, converted)."""
        return "Event" if self.resource.kind == "CoreEvent" else self.resource.kind

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.resource.namespaced else self.name


# ---------------------------------------------------------------- core/v1 view of events.k8s.io/v1 Events


def core_event(ev: dict[str, Any]) -> dict[str, Any]:
    series = ev.get("series") or {}
    out: dict[str, Any] = {
        "metadata": ev.get("metadata") or {},
        "involvedObject": ev.get("regarding") or {},
        "reason": ev.get("reason", ""),
        "message": ev.get("note", ""),
        "source": {"component": ev.get("reportingController", "")},
        "count": int(series.get("count") or ev.get("deprecatedCount") or 1),
        "type": ev.get("type", ""),
        "eventTime": ev.get("eventTime"),
        "action": ev.get("action", ""),
        "reportingComponent": ev.get("reportingController", ""),
        "reportingInstance": ev.get("reportingInstance", ""),
    }
    last = series.get("lastObservedTime") or ev.get("eventTime")
    if last:
        out["lastTimestamp"] = str(last).split(".")[0] + "Z" if "." in str(last) else last
    if series:
        out["series"] = {"count": series.get("count"), "lastObservedTime": series.get("lastObservedTime")}
    if ev.get("related"):
        out["related"] = ev["related"]
    return out


class ApiServer:
    def __init__(
        self,
        cluster: ServedCluster,
        *,
        token: str | None = None,
        test_endpoints: bool = False,
        bookmark_interval: float = 5.0,
        on_write: Callable[[], None] = lambda: None,
    ) -> None:
        self.cluster = cluster
        self.store = cluster.store
        self.client = cluster.client
        self.token = token
        self.test_endpoints = test_endpoints
        self.bookmark_interval = bookmark_interval
        self.on_write = on_write
        self.faults = Faults()
        self.binds: dict[str, int] = {}
        self.bind_requests = 0
        self.requests = 0
        # Requests by verb and resource ("patch pods/status"), counted before faults answer them (for tests).
        self.calls: dict[str, int] = {}
        self._snapshots: dict[str, tuple[float, str, list[dict[str, Any]]]] = {}
        self._by_path: dict[tuple[str, str, str], Resource] = {
            (r.group, r.version, r.plural): r for r in discovery.served_resources()
        }

    def app(self) -> web.Application:
        app = web.Application(client_max_size=bodies.MAX_BODY_BYTES)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    # ------------------------------------------------------------ dispatch

    async def handle(self, req: web.Request) -> web.StreamResponse:
        self.requests += 1
        _warnings.set([])
        path = req.path.rstrip("/") or "/"
        try:
            if path in ("/healthz", "/livez", "/readyz"):
                return web.Response(text="ok")
            if path == "/version":
                return respond(discovery.version_info())
            self._authenticate(req)
            if path.startswith("/kubesched/") and self.test_endpoints:
                return await self._test_endpoint(req, path)
            if path == "/openapi/v2":
                body = discovery.openapi_v2_protobuf()
                return web.Response(body=body, content_type="application/octet-stream")
            doc = self._discovery(path)
            if doc is not None:
                return respond(doc)
            route = self._route(path)
            if route is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return self._with_warnings(await self._dispatch(req, route))
        except ApiError as err:
            resp = respond(status_body(err.code, err.reason, err.message, err.details), err.code)
            return self._with_warnings(resp)
        except web.HTTPException:
            raise
        except Exception as err:  # a bug must cost one request a 500, not the server
            log.exception("Internal error serving %s %s", req.method, req.path)
            message = f"Internal error occurred: {err}"
            return respond(status_body(500, "InternalError", message, {"causes": [{"message": str(err)}]}), 500)

    def _with_warnings(self, resp: web.StreamResponse) -> web.StreamResponse:
        if not resp.prepared:
            for header in warning_headers(_warnings.get()):
                resp.headers.add("Warning", header)
        return resp

    def _authenticate(self, req: web.Request) -> None:
        if self.token and req.headers.get("Authorization") != f"Bearer {self.token}":
            raise ApiError(401, "Unauthorized", "Unauthorized")

    def _discovery(self, path: str) -> dict[str, Any] | None:
        segs = [s for s in path.split("/") if s]
        if segs == ["api"]:
            return discovery.api_versions()
        if segs == ["apis"]:
            return discovery.api_group_list()
        if len(segs) == 2 and segs[0] == "api":
            return discovery.resource_list("", segs[1])
        if len(segs) == 2 and segs[0] == "apis":
            return discovery.api_group(segs[1])
        if len(segs) == 3 and segs[0] == "apis":
            return discovery.resource_list(segs[1], segs[2])
        if segs[:2] == ["openapi", "v3"]:
            if len(segs) == 2:
                return discovery.openapi_v3_root()
            return discovery.openapi_v3_doc("/".join(segs[2:]))
        return None

    def _route(self, path: str) -> Route | None:
        segs = [s for s in path.split("/") if s]
        if len(segs) >= 3 and segs[0] == "api":
            group, version, rest = "", segs[1], segs[2:]
        elif len(segs) >= 4 and segs[0] == "apis":
            group, version, rest = segs[1], segs[2], segs[3:]
        else:
            return None
        ns = ""
        if len(rest) >= 3 and rest[0] == "namespaces":
            r = self._by_path.get((group, version, rest[2]))
            if r is not None and r.namespaced:
                ns, rest = rest[1], rest[2:]
        r = self._by_path.get((group, version, rest[0]))
        if r is None or len(rest) > 3:
            return None
        return Route(r, ns, rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else "")

    async def _dispatch(self, req: web.Request, route: Route) -> web.StreamResponse:
        m = req.method
        verb = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(m, "")
        if not route.name:
            if m == "GET":
                verb = "watch" if req.query.get("watch") in ("true", "1") else "list"
            elif m == "DELETE":
                verb = "deletecollection"
        if route.sub == "binding":
            verb = "bind"
        what = f"{verb} {route.resource.plural}{'/' + route.sub if route.sub else ''}"
        self.calls[what] = self.calls.get(what, 0) + 1
        fault = self.faults.match(verb, route.resource.plural, route.name)
        if fault is not None and not fault.after:
            raise ApiError(fault.code, fault.reason, fault.message)
        result = await self._serve(req, route, verb)
        if fault is not None:
            raise ApiError(fault.code, fault.reason, fault.message)
        return result

    async def _serve(self, req: web.Request, route: Route, verb: str) -> web.StreamResponse:
        r = route.resource
        if route.sub and route.sub not in r.subresources:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if route.sub == "scale":
            return await self._scale(req, route, verb)
        if verb == "watch":
            return await self._watch(req, route)
        if verb == "list":
            return self._list(req, route)
        if verb == "get":
            raw = self._current(route)
            if "as=Table" in req.headers.get("Accept", "") and not route.sub:
                rv = (raw.get("metadata") or {}).get("resourceVersion", "")
                return respond(tables.table(r.kind, [self._view(route, raw)], rv, r.group_version))
            return respond(self._typed_view(route, raw))
        if r.kind == "CoreEvent" and verb not in ("get", "list", "watch"):
            raise ApiError(405, "MethodNotAllowed", "core/v1 events are read-only here: write events.k8s.io/v1")
        if verb == "create":
            return respond(self._typed_view(route, await self._create(req, route)), 201)
        if verb == "bind":
            return await self._bind(req, route)
        if verb == "update":
            body = await self._object_body(req, route, "UpdateOptions")
            mode = field_validation(req, "UpdateOptions")
            return respond(self._typed_view(route, self._write(route, body, _rv_of(body), mode)))
        if verb == "patch":
            return respond(self._typed_view(route, await self._patch(req, route)))
        if verb == "delete":
            return respond(self._typed_view(route, self._delete(route)))
        if verb == "deletecollection":
            return self._delete_collection(req, route)
        raise ApiError(405, "MethodNotAllowed", f"{req.method} is not supported")

    async def _scale(self, req: web.Request, route: Route, verb: str) -> web.StreamResponse:
        """GET, PUT or PATCH the object's Scale: a write sets the object's spec.replicas."""
        parent = Route(route.resource, route.namespace, route.name, "")
        cur = self._current(parent)
        view = scale_view(cur, route.resource.kind)
        if verb == "get":
            return respond(view)
        if verb == "update":
            body = await self._object_body(req, route, "UpdateOptions")
        elif verb == "patch":
            ctype = req.content_type or ""
            patch = bodies.decode_patch(await bodies.read(req), "").data
            try:
                if ctype == JSON_PATCH:
                    body = json_patch(view, _json_patch_ops(patch), max_copy_bytes=bodies.MAX_BODY_BYTES)
                elif ctype in (MERGE_PATCH, STRATEGIC_PATCH) and isinstance(patch, dict):
                    body = merge_patch(view, patch)
                else:
                    raise ApiError(
                        415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {ctype}"
                    )
            except PatchError as err:
                raise ApiError(422, "Invalid", str(err)) from None
        else:
            raise ApiError(405, "MethodNotAllowed", f"{req.method} is not supported")
        replicas = replicas_of(body)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            cause = f"spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0"
            raise ApiError(
                422,
                "Invalid",
                f"Scale.autoscaling {go_quote(route.name)} is invalid: {cause}",
                {"name": route.name, "group": "autoscaling", "kind": "Scale", "causes": [{"field": "spec.replicas"}]},
            )
        new = copy.deepcopy(cur)
        new.setdefault("spec", {})["replicas"] = replicas
        return respond(scale_view(self._write(parent, new), route.resource.kind))

    # ------------------------------------------------------------ helpers

    async def _object_body(self, req: web.Request, route: Route, options: str) -> dict[str, Any]:
        """The object a create or update sends (JSON or YAML), its duplicate keys dealt with as the
        request's fieldValidation says. `options`: CreateOptions or UpdateOptions."""
        mode = field_validation(req, options)
        kind = "Binding" if route.sub == "binding" else discovery.kind_name(route.resource)
        body = bodies.decode_object(await bodies.read(req), "yaml" in (req.content_type or ""), kind)
        self._duplicates(mode, body.duplicates, lambda: strict_error(body, kind, route.resource.group_version))
        return body.data  # type: ignore[no-any-return]

    def _duplicates(self, mode: str, duplicates: list[str], strict: Callable[[], ApiError]) -> None:
        """fieldValidation: Strict refuses, Warn answers with Warning headers, Ignore ignores."""
        if not duplicates or mode == "Ignore":
            return
        if mode == "Strict":
            raise strict()
        _warnings.get().extend(duplicates)

    def _current(self, route: Route) -> dict[str, Any]:
        raw = self.store.get_raw(route.kind, route.key)
        if raw is None:
            raise not_found(route.resource, route.name)
        return raw

    def _typed_view(self, route: Route, raw: dict[str, Any]) -> dict[str, Any]:
        view = self._view(route, raw)
        return {"kind": discovery.kind_name(route.resource), "apiVersion": route.resource.group_version, **view}

    def _view(self, route: Route, raw: dict[str, Any]) -> dict[str, Any]:
        return core_event(raw) if route.resource.kind == "CoreEvent" else raw

    def _written(self) -> None:
        self.store.deliver()
        self.on_write()

    # ------------------------------------------------------------ reads

    def _matchers(self, req: web.Request) -> Callable[[dict[str, Any]], bool]:
        try:
            lm = label_matcher(req.query.get("labelSelector", ""))
            fm = field_matcher(req.query.get("fieldSelector", ""))
        except SelectorError as err:
            raise ApiError(400, "BadRequest", str(err)) from None
        return lambda raw: lm(raw) and fm(raw)

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

    # ------------------------------------------------------------ writes

    def _check_namespace(self, route: Route) -> None:
        if route.resource.namespaced and self.store.find("Namespace", route.namespace) is None:
            raise ApiError(
                404,
                "NotFound",
                f'namespaces "{route.namespace}" not found',
                {"name": route.namespace, "kind": "namespaces"},
            )

    async def _create(self, req: web.Request, route: Route) -> dict[str, Any]:
        if route.name:
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        body = await self._object_body(req, route, "CreateOptions")
        body.pop("kind", None)
        body.pop("apiVersion", None)
        meta = body.setdefault("metadata", {})
        r = route.resource
        if r.namespaced:
            ns = route.namespace or meta.get("namespace") or "default"
            if meta.get("namespace") and meta["namespace"] != ns:
                raise ApiError(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on the request",
                )
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            # The API server's generator: the prefix (at most 58 characters) and 5 of utilrand's characters.
            meta["name"] = meta["generateName"][:58] + "".join(random.choices("bcdfghjklmnpqrstvwxz2456789", k=5))
        if not meta.get("name"):
            raise ApiError(
                422, "Invalid", f"{r.kind} is invalid: metadata.name: Required value: name or generateName is required"
            )
        for k in ("resourceVersion", "uid", "creationTimestamp", "deletionTimestamp"):
            meta.pop(k, None)
        route = Route(r, meta.get("namespace", ""), meta["name"], "")
        self._check_namespace(route)
        bodies.check_servable(body)
        if self.store.get_raw(route.kind, route.key) is not None:
            raise ApiError(
                409,
                "AlreadyExists",
                f'{r.plural} "{route.name}" already exists',
                {"name": route.name, "kind": r.plural},
            )
        if route.kind in KINDS:
            typed = self._admitted(route, body, field_validation(req, "CreateOptions"), creating=True)
            self.store.incoming[(route.kind, route.key)] = body
            try:
                self.client.create(route.kind, typed)
            except AdmissionError as err:
                self.store.incoming.pop((route.kind, route.key), None)
                raise ApiError(403, "Forbidden", str(err)) from None
            except Conflict as err:
                raise ApiError(409, "AlreadyExists", str(err)) from None
            raw = self.store.get_raw(route.kind, route.key) or {}
        else:
            raw = self.store.create_raw(route.kind, body)
        self._written()
        return raw

    def _admitted(self, route: Route, body: dict[str, Any], mode: str, creating: bool) -> Any:
        """The typed object of a write, taken in as the API server takes it (kubesched.api.intake): strict
        decoding as the request's fieldValidation says (unknown fields refused, warned about or dropped),
        then the kind's validation; refusals in the API server's shape and words."""
        r = route.resource
        kind = discovery.kind_name(r)
        raw = {"apiVersion": r.group_version, "kind": kind, **body}
        cannot = f"{kind} in version {go_quote(r.group_version)} cannot be handled as a {kind}: "
        level = {"Strict": FieldValidation.STRICT, "Ignore": FieldValidation.IGNORE}.get(mode, FieldValidation.WARN)
        try:
            typed = admit(route.kind, raw, level, lambda _field, message: _warnings.get().append(message))
            for key in [k for k in body if k not in raw]:  # an unknown top-level field, dropped from `raw`
                del body[key]
            return typed
        except IntakeError as err:
            if not err.invalid:
                raise ApiError(400, "BadRequest", cannot + err.message) from None
            group_kind = f"{kind}.{r.group}" if r.group else kind
            cause = f"{err.field}: {err.message}" if err.field else err.message
            raise ApiError(
                422,
                "Invalid",
                f"{group_kind} {go_quote(route.name)} is invalid: {cause}",
                {
                    "name": route.name,
                    "group": r.group,
                    "kind": kind,
                    "causes": [{"message": err.message, "field": err.field}],
                },
            ) from None

    def _write(self, route: Route, body: Any, precondition: str = "", mode: str = "Warn") -> dict[str, Any]:
        """Replace the object (or its status) with `body`, checking the resourceVersion precondition;
        `mode`: the request's fieldValidation."""
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body of the request must be an object")
        cur = self._current(route)
        r = route.resource
        cur_rv = (cur.get("metadata") or {}).get("resourceVersion", "")
        if precondition and precondition != cur_rv:
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {r.plural}{"." + r.group if r.group else ""} "{route.name}": '
                "the object has been modified; please apply your changes to the latest version and try again",
                {"name": route.name, "kind": r.plural},
            )
        body = {k: v for k, v in body.items() if k not in ("kind", "apiVersion")}
        if route.sub == "status":
            new = {**copy.deepcopy(cur), "status": body.get("status", {})}
        elif "status" in r.subresources:
            new = {k: v for k, v in body.items() if k != "status"}
            if "status" in cur:
                new["status"] = copy.deepcopy(cur["status"])
        else:
            new = body
        if not isinstance(new.get("metadata", {}), dict):
            raise ApiError(400, "BadRequest", "metadata: must be an object")
        meta = new.setdefault("metadata", {})
        cur_meta = cur.get("metadata") or {}
        meta["name"] = cur_meta.get("name")
        if cur_meta.get("namespace"):
            meta["namespace"] = cur_meta["namespace"]
        if route.kind == "Pod":
            meta["generation"] = _pod_generation(cur, new)
        bodies.check_servable(new)
        if route.kind in KINDS:
            typed = self._admitted(route, new, mode, creating=False)
            self.store.incoming[(route.kind, route.key)] = new
            self.store.update(route.kind, typed)
            raw = self.store.get_raw(route.kind, route.key) or {}
        else:
            raw = self.store.update_raw(route.kind, new)
        self._written()
        return raw

    async def _patch(self, req: web.Request, route: Route) -> dict[str, Any]:
        ctype = req.content_type or ""
        if ctype not in (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH):
            raise ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {ctype}")
        mode = field_validation(req, "PatchOptions")
        # Upstream's strategic merge patch errors alone come without the prefix.
        body = bodies.decode_patch(await bodies.read(req), "" if ctype == STRATEGIC_PATCH else "error decoding patch: ")
        patch = body.data
        cur = copy.deepcopy(self._current(route))
        duplicates = body.duplicates
        try:
            if ctype == JSON_PATCH:
                ops = _json_patch_ops(patch)
                new = json_patch(cur, ops, max_copy_bytes=bodies.MAX_BODY_BYTES)
                duplicates = json_patch_duplicates(body.paths, ops)
            elif not isinstance(patch, dict):
                prefix = "" if ctype == STRATEGIC_PATCH else "error decoding patch: "
                raise _cannot_unmarshal(patch, "map[string]interface {}", prefix)
            elif ctype == MERGE_PATCH:
                new = merge_patch(cur, patch)
            else:
                new = strategic_merge_patch(cur, patch)
        except PatchError as err:
            raise ApiError(422, "Invalid", str(err)) from None
        except (TypeError, ValueError, AttributeError, KeyError) as err:  # a directive of the wrong shape
            raise ApiError(422, "Invalid", f"invalid patch: {err}") from None

        def strict() -> ApiError:
            if ctype == STRATEGIC_PATCH:
                return patch_strict_error(duplicates, go_value(patch))
            typed = {"apiVersion": route.resource.group_version, "kind": discovery.kind_name(route.resource), **new}
            return patch_strict_error(duplicates, go_json_sorted(typed))

        self._duplicates(mode, duplicates, strict)
        precondition = ""
        if isinstance(patch, dict):
            precondition = str((patch.get("metadata") or {}).get("resourceVersion") or "")
        return self._write(route, new, precondition, mode)

    def _delete(self, route: Route) -> dict[str, Any]:
        cur = self._current(route)
        if route.kind == "Pod":
            self.client.delete_pod(route.namespace, route.name)
        elif route.kind == "Namespace":
            self._delete_namespace(route.name)
        elif route.kind in KINDS:
            self.store.delete(route.kind, route.key)
        else:
            self.store.delete_raw(route.kind, route.key)
        self._written()
        return cur

    def _delete_namespace(self, ns: str) -> None:
        """The namespace controller's work, at once: everything in the namespace goes with it."""
        for kind, bucket in list(self.store.raw.items()):
            for key, raw in list(bucket.items()):
                if (raw.get("metadata") or {}).get("namespace") != ns:
                    continue
                if kind in KINDS:
                    with contextlib.suppress(NotFound):
                        self.store.delete(kind, key)
                else:
                    self.store.delete_raw(kind, key)
        self.store.delete("Namespace", ns)

    def _delete_collection(self, req: web.Request, route: Route) -> web.Response:
        match = self._matchers(req)
        items = []
        for raw in list(self.store.iter_raw(route.kind)):
            meta = raw.get("metadata") or {}
            if route.namespace and meta.get("namespace") != route.namespace:
                continue
            if match(raw):
                items.append(self._delete(Route(route.resource, meta.get("namespace", ""), meta.get("name", ""), "")))
        kind = discovery.kind_name(route.resource) + "List"
        return respond({"kind": kind, "apiVersion": route.resource.group_version, "metadata": {}, "items": items})

    async def _bind(self, req: web.Request, route: Route) -> web.Response:
        """POST pods/NAME/binding: 201 with a Success Status."""
        if req.method != "POST":
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        body = await self._object_body(req, route, "CreateOptions")
        self.bind_requests += 1
        target = (body.get("target") or {}).get("name", "")
        uid = (body.get("metadata") or {}).get("uid", "")
        if not target:
            raise ApiError(422, "Invalid", "Binding.target.name: Required value")
        self._current(route)
        try:
            self.client.bind(route.namespace, route.name, uid, target)
        except NotFound as err:
            raise ApiError(404, "NotFound", str(err)) from None
        except Conflict as err:
            raise ApiError(409, "Conflict", str(err), {"name": route.name, "kind": "pods/binding"}) from None
        if self.test_endpoints:
            # Per pod, for tests that prove nothing was bound twice; a long-running server keeps no such record.
            key = f"{route.namespace}/{route.name}"
            self.binds[key] = self.binds.get(key, 0) + 1
        self._written()
        return respond(status_body(201, "", ""), 201)

    # ------------------------------------------------------------ test endpoints (--test-endpoints)

    async def _test_endpoint(self, req: web.Request, path: str) -> web.Response:
        if path == "/kubesched/faults":
            if req.method == "DELETE":
                self.faults.clear()
                return respond({})
            rule = self.faults.add(bodies.decode_json(await bodies.read(req), "").data)
            return respond(rule.__dict__)
        if path == "/kubesched/watches/cut" and req.method == "POST":
            n = 0
            for w in list(self.store.watchers):
                w.cut = True
                w.queue.put_nowait(None)
                n += 1
            return respond({"cut": n})
        if path == "/kubesched/compact" and req.method == "POST":
            self.store.compact()
            return respond({"compactedResourceVersion": self.store.compacted_rv})
        if path == "/kubesched/stats":
            return respond(
                {
                    "binds": self.binds,
                    "bindRequests": self.bind_requests,
                    "watchers": len(self.store.watchers),
                    "requests": self.requests,
                    "calls": self.calls,
                    "resourceVersion": self.store.last_rv,
                }
            )
        raise ApiError(404, "NotFound", "no such test endpoint")


def _pod_generation(cur: dict[str, Any], new: dict[str, Any]) -> int:
    """The pod strategy's rule: what a client sends is ignored; a change of the spec counts one more."""
    gen = (cur.get("metadata") or {}).get("generation")
    gen = gen if isinstance(gen, int) and not isinstance(gen, bool) else 0
    return gen + 1 if new.get("spec") != cur.get("spec") else gen


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


def _json_patch_ops(patch: Any) -> list[dict[str, Any]]:
    """A JSON patch's operations, refused as upstream refuses a patch that is not a list of objects or
    that has more than MAX_JSON_PATCH_OPERATIONS of them."""
    if not isinstance(patch, list):
        raise _cannot_unmarshal(patch, "[]handlers.jsonPatchOp")
    for op in patch:
        if not isinstance(op, dict):
            raise _cannot_unmarshal(op, "handlers.jsonPatchOp")
    if len(patch) > MAX_JSON_PATCH_OPERATIONS:
        raise bodies.too_large(
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {len(patch)}"
        )
    return patch


def _cannot_unmarshal(value: Any, go_type: str, prefix: str = "error decoding patch: ") -> ApiError:
    return ApiError(
        400, "BadRequest", f"{prefix}json: cannot unmarshal {bodies.go_kind(value)} into Go value of type {go_type}"
    )


def _rv_of(body: Any) -> str:
    if isinstance(body, dict):
        return str((body.get("metadata") or {}).get("resourceVersion") or "")
    return ""


def _sort_key(raw: dict[str, Any]) -> tuple[str, str]:
    meta = raw.get("metadata") or {}
    return (meta.get("namespace", ""), meta.get("name", ""))
