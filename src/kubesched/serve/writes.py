"""Create, update, delete and bind, upstream's create.go, update.go and delete.go: each write goes
through the API server's intake (kubesched.api.intake) for the kinds the scheduler reads."""

from __future__ import annotations

import contextlib
import copy
import random
from typing import Any

from aiohttp import web

from kubesched.api.decode import KINDS
from kubesched.api.intake import FieldValidation, IntakeError, admit
from kubesched.cluster.admission import AdmissionError
from kubesched.cluster.store import Conflict, NotFound
from kubesched.gocompat.strconv import go_quote
from kubesched.serve import body as bodies
from kubesched.serve import discovery
from kubesched.serve.fieldvalidation import field_validation
from kubesched.serve.handler import Handler, Route, request_warnings, respond
from kubesched.serve.status import ApiError, status_body


class Writes(Handler):
    """The write verbs of every resource and pods' binding subresource."""

    test_endpoints: bool
    binds: dict[str, int]
    bind_requests: int

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
            typed = admit(route.kind, raw, level, lambda _field, message: request_warnings.get().append(message))
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


def _pod_generation(cur: dict[str, Any], new: dict[str, Any]) -> int:
    """The pod strategy's rule: what a client sends is ignored; a change of the spec counts one more."""
    gen = (cur.get("metadata") or {}).get("generation")
    gen = gen if isinstance(gen, int) and not isinstance(gen, bool) else 0
    return gen + 1 if new.get("spec") != cur.get("spec") else gen
