"""PATCH (JSON, merge and strategic merge patches) and the scale subresource, upstream's patch.go and
the Scale endpoints: both apply a patch to a view of the object before writing it."""

from __future__ import annotations

import copy
from typing import Any

from aiohttp import web

from kubesched.gocompat.strconv import go_quote
from kubesched.serve import body as bodies
from kubesched.serve import discovery
from kubesched.serve.fieldvalidation import (
    field_validation,
    go_json_sorted,
    go_value,
    json_patch_duplicates,
    patch_strict_error,
)
from kubesched.serve.handler import Route, respond
from kubesched.serve.patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from kubesched.serve.scale import replicas_of, scale_view
from kubesched.serve.status import ApiError
from kubesched.serve.writes import Writes

MAX_JSON_PATCH_OPERATIONS = 10_000  # upstream's maxJSONPatchOperations
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"


class Patching(Writes):
    """The patch verb of every resource, and get, update and patch of a workload's Scale."""

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
