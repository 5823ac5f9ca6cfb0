"""Discovery documents: /api, /apis, the per-group resource lists kubectl reads, /version."""

from __future__ import annotations

from typing import Any

from kubesched import __version__
from kubesched.api.decode import KINDS
from kubesched.live.resources import RESOURCES, Resource

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
RAW_KINDS = {"Event", "Lease", "CoreEvent"}


def served(r: Resource) -> bool:
    """A resource is served when we can store it: a struct decodes it, or it is kept as JSON."""
    return r.kind in KINDS or r.kind in RAW_KINDS


def served_resources() -> list[Resource]:
    return [r for r in RESOURCES if served(r)]


def kind_name(r: Resource) -> str:
    return "Event" if r.kind == "CoreEvent" else r.kind


def group_versions() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in served_resources():
        if r.group and r.version not in out.setdefault(r.group, []):
            out[r.group].append(r.version)
    return out


def api_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    vs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": vs, "preferredVersion": vs[0]}


def api_group_list() -> dict[str, Any]:
    groups = [_group(g, vs) for g, vs in sorted(group_versions().items())]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(name: str) -> dict[str, Any] | None:
    vs = group_versions().get(name)
    return None if vs is None else {"kind": "APIGroup", "apiVersion": "v1", **_group(name, vs)}


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    rs = [r for r in served_resources() if r.group == group and r.version == version]
    if not rs:
        return None
    items: list[dict[str, Any]] = []
    for r in rs:
        items.append(
            {
                "name": r.plural,
                "singularName": kind_name(r).lower(),
                "namespaced": r.namespaced,
                "kind": kind_name(r),
                "verbs": VERBS,
                **({"shortNames": list(r.short_names)} if r.short_names else {}),
            }
        )
        for sub in r.subresources:
            verbs = ["create"] if sub == "binding" else ["get", "patch", "update"]
            kind = {"binding": "Binding", "scale": "Scale"}.get(sub, kind_name(r))
            entry: dict[str, Any] = {
                "name": f"{r.plural}/{sub}",
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": kind,
                "verbs": verbs,
            }
            if sub == "scale":
                entry.update(group="autoscaling", version="v1")
            items.append(entry)
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": items}


def version_info() -> dict[str, str]:
    import platform

    return {
        "major": "1",
        "minor": "34",
        "gitVersion": "v1.34.0-kubesched",
        "gitCommit": __version__,
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": f"python{platform.python_version()}",
        "compiler": "cpython",
        "platform": f"{platform.system().lower()}/{platform.machine()}",
    }


# ---------------------------------------------------------------- OpenAPI v3 (only what kubectl checks)
#
# kubectl validates manifests on the server (fieldValidation) when the group-version's OpenAPI v3 document
# lists that query parameter on the PATCH operation of the kind; otherwise it falls back to downloading the
# full schema. These documents declare exactly that, and nothing else.


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_v3_root() -> dict[str, Any]:
    gvs = sorted({(r.group, r.version) for r in served_resources()})
    return {
        "paths": {
            _gv_path(g, v): {"serverRelativeURL": f"/openapi/v3/{_gv_path(g, v)}?hash={__version__}"} for g, v in gvs
        }
    }


def openapi_v3_doc(gv_path: str) -> dict[str, Any] | None:
    rs = [r for r in served_resources() if _gv_path(r.group, r.version) == gv_path]
    if not rs:
        return None
    param = {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True}}
    paths: dict[str, Any] = {}
    for r in rs:
        gvk = {"group": r.group, "version": r.version, "kind": kind_name(r)}
        op = {
            "x-kubernetes-group-version-kind": gvk,
            "parameters": [param],
            "responses": {"200": {"description": "OK"}},
        }
        base = f"/{gv_path}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else f"/{gv_path}/{r.plural}"
        paths[f"{base}/{{name}}"] = {"patch": op, "put": op}
        paths[base] = {"post": op}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.34.0"}, "paths": paths}


# ---------------------------------------------------------------- OpenAPI v2 (kubectl before 1.24)
#
# Older kubectl validates a manifest against /openapi/v2, which it reads only as protobuf (gnostic's
# openapi_v2.Document). A document without definitions lets it apply: it validates no kind it finds no
# schema for, and the server validates every create and update anyway.


def _pb_field(number: int, payload: bytes) -> bytes:
    """A protobuf length-delimited field (wire type 2)."""
    key = (number << 3) | 2
    out = bytearray([key])
    n = len(payload)
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            break
    return bytes(out) + payload


def openapi_v2_protobuf() -> bytes:
    """Document{swagger: "2.0", info: {title: "Kubernetes", version}}."""
    info = _pb_field(1, b"Kubernetes") + _pb_field(2, b"v1.34.0")
    return _pb_field(1, b"2.0") + _pb_field(2, info)
