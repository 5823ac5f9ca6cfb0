"""The REST handlers of `kubesched serve` (aiohttp), over the served cluster: routing and dispatch.

Requests run on the event loop one at a time between scheduling cycles, so
each is atomic with respect to the store and the scheduler. Errors are
metav1.Status objects with upstream's reasons and messages. The verbs live in
listwatch.py, writes.py and patching.py; this module routes a request to them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web

from kubesched.live.resources import Resource
from kubesched.serve import body as bodies
from kubesched.serve import discovery, tables
from kubesched.serve.cluster import ServedCluster
from kubesched.serve.faults import Faults
from kubesched.serve.fieldvalidation import field_validation, warning_headers
from kubesched.serve.handler import Route, request_warnings, respond
from kubesched.serve.listwatch import ListWatch
from kubesched.serve.patching import Patching
from kubesched.serve.status import ApiError, status_body

log = logging.getLogger("kubesched.serve")


class ApiServer(ListWatch, Patching):
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
        request_warnings.set([])
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
            for header in warning_headers(request_warnings.get()):
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


def _rv_of(body: Any) -> str:
    if isinstance(body, dict):
        return str((body.get("metadata") or {}).get("resourceVersion") or "")
    return ""
