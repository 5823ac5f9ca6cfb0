"""Write kubesched's table of API kinds and fields from a running kube-apiserver.

    ../shared/k8s/up.sh && python tools/openapi_schema.py /tmp/kubesched-apiserver \
        > src/kubesched/api/openapi-v1.34.1.json

Reads the server's discovery (which kinds it serves, in which group/version, namespaced or not)
and its OpenAPI v3 documents (every field of every type, with its JSON type), and keeps only
what strict decoding needs: field names and types. The result is data from upstream; kubesched
reads it in kubesched.api.openapi. Uses curl with the admin client certificate up.sh writes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

BASE = "https://127.0.0.1:16443"


def fetch(live_dir: str, path: str) -> Any:
    pki = f"{live_dir}/pki"
    out = subprocess.run(
        [
            "curl",
            "-sf",
            "--cacert",
            f"{pki}/ca.crt",
            "--cert",
            f"{pki}/admin.crt",
            "--key",
            f"{pki}/admin.key",
            BASE + path,
        ],
        check=True,
        capture_output=True,
    ).stdout
    return json.loads(out)


def type_of(schema: dict[str, Any]) -> Any:
    """A field's type in the table's notation: a scalar name, "@Definition", ["list", T] or ["map", T]."""
    if "$ref" in schema:
        return "@" + schema["$ref"].rsplit("/", 1)[1]
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return type_of(schema["allOf"][0])
    if schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("x-kubernetes-embedded-resource"):
        return "any"
    if schema.get("x-kubernetes-int-or-string") or schema.get("format") == "int-or-string":
        return "int-or-string"
    t = schema.get("type")
    if t == "array":
        return ["list", type_of(schema.get("items", {}))]
    if t == "object":
        if "additionalProperties" in schema:
            extra = schema["additionalProperties"]
            return ["map", type_of(extra) if isinstance(extra, dict) else "any"]
        return "any"
    if t == "integer":
        return {"int32": "int32", "int64": "int64"}.get(schema.get("format", ""), "int64")
    if t == "string":
        return {"byte": "bytes", "date-time": "time"}.get(schema.get("format", ""), "string")
    if t in ("number", "boolean"):
        return t
    if "oneOf" in schema or "anyOf" in schema:
        options = {s.get("type") for s in schema.get("oneOf", schema.get("anyOf", []))}
        return "quantity" if options == {"string", "number"} else "any"
    return "any"


def definition(schema: dict[str, Any]) -> Any:
    if "properties" in schema:
        return {name: type_of(prop) for name, prop in sorted(schema["properties"].items())}
    return type_of(schema)


def main(live_dir: str) -> None:
    versions = ["v1"]
    for group in fetch(live_dir, "/apis")["groups"]:
        versions += [v["groupVersion"] for v in group["versions"]]
    kinds: list[list[Any]] = []
    schemas: dict[str, Any] = {}
    gvk_to_def: dict[tuple[str, str], str] = {}
    for gv in versions:
        prefix = "/api/v1" if gv == "v1" else f"/apis/{gv}"
        doc = fetch(live_dir, f"/openapi/v3{prefix[0:]}")
        for name, schema in doc["components"]["schemas"].items():
            schemas.setdefault(name, schema)
            for gvk in schema.get("x-kubernetes-group-version-kind", []):
                key_gv = gvk["version"] if not gvk["group"] else f"{gvk['group']}/{gvk['version']}"
                gvk_to_def[(key_gv, gvk["kind"])] = name
        for res in fetch(live_dir, prefix)["resources"]:
            if "/" in res["name"]:
                continue
            kinds.append([gv, res["kind"], res["namespaced"], gvk_to_def.get((gv, res["kind"]), "")])
    # Keep the definitions the served kinds reach.
    keep: set[str] = set()
    todo = [k[3] for k in kinds if k[3]]
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        todo += [
            d
            for d in json.dumps(definition(schemas[name])).split('"')
            if d.startswith("@") and d[1:] not in keep
            for d in [d[1:]]
        ]
    table = {
        "source": "kube-apiserver v1.34.1: discovery and /openapi/v3 (tools/openapi_schema.py)",
        "kinds": sorted(kinds),
        "types": {name: definition(schemas[name]) for name in sorted(keep)},
    }
    json.dump(table, sys.stdout, indent=None, separators=(",", ":"), sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/kubesched-apiserver")
