"""The base of the REST handlers: a request's route and response, and the reads every verb shares.

Kept apart from the verbs (listwatch.py, writes.py, patching.py) so that each holds one of upstream's
handlers (get/watch, create/update/delete, patch) over the same store, client and helpers.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from kubesched.live.resources import Resource
from kubesched.serve import body as bodies
from kubesched.serve import discovery
from kubesched.serve.cluster import ServedClient
from kubesched.serve.coreevent import core_event
from kubesched.serve.fieldvalidation import field_validation, strict_error
from kubesched.serve.selectors import SelectorError, field_matcher, label_matcher
from kubesched.serve.status import ApiError
from kubesched.serve.storage import ServedStore

JSON = "application/json"
# The Warning texts of the request being served (fieldValidation=Warn); each request runs in a task of its own.
request_warnings: contextvars.ContextVar[list[str]] = contextvars.ContextVar("kubesched_serve_warnings")


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


class Handler:
    """What the verbs' handlers share: the served store and client, and reading the object a route names."""

    store: ServedStore
    client: ServedClient
    on_write: Callable[[], None]

    async def _object_body(self, req: web.Request, route: Route, options: str) -> dict[str, Any]:
        """The object a create or update sends (JSON or YAML), its duplicate keys dealt with as the
        request's fieldValidation says. `options`: CreateOptions or UpdateOptions."""
        mode = field_validation(req, options)
        kind = "Binding" if route.sub == "binding" else discovery.kind_name(route.resource)
        body = bodies.decode_object(await bodies.read(req), "yaml" in (req.content_type or ""), kind)
        self._duplicates(mode, body.duplicates, lambda: strict_error(body, kind, route.resource.group_version))
        return body.data

    def _duplicates(self, mode: str, duplicates: list[str], strict: Callable[[], ApiError]) -> None:
        """fieldValidation: Strict refuses, Warn answers with Warning headers, Ignore ignores."""
        if not duplicates or mode == "Ignore":
            return
        if mode == "Strict":
            raise strict()
        request_warnings.get().extend(duplicates)

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

    def _matchers(self, req: web.Request) -> Callable[[dict[str, Any]], bool]:
        try:
            lm = label_matcher(req.query.get("labelSelector", ""))
            fm = field_matcher(req.query.get("fieldSelector", ""))
        except SelectorError as err:
            raise ApiError(400, "BadRequest", str(err)) from None
        return lambda raw: lm(raw) and fm(raw)
