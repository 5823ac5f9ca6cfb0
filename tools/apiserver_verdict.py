"""What a real kube-apiserver says about each object of some manifest files.

    ../shared/k8s/up.sh
    python tools/apiserver_verdict.py FILE.yaml ... > verdicts.jsonl

Each document is sent as it is written (YAML, so duplicate keys reach the server) with
`fieldValidation=Strict`, kubectl's default, and really created, in order, so that later
objects see earlier ones (a Pod its PriorityClass); everything a file created is deleted
before the next file. One JSON line per document: file, index, kind, name, HTTP code and the
server's message (empty when it was created), plus its warnings. The answers are data for
kubesched's tests (expected messages); the tests themselves never need a server.
"""

from __future__ import annotations

import json
import re
import ssl
import sys
import urllib.error
import urllib.request
from typing import Any

import yaml

BASE = "https://127.0.0.1:16443"
LIVE = "/tmp/kubesched-apiserver"


def _context() -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=f"{LIVE}/pki/ca.crt")
    ctx.load_cert_chain(f"{LIVE}/pki/admin.crt", f"{LIVE}/pki/admin.key")
    return ctx


CTX = _context()


def request(
    method: str, path: str, body: bytes | None = None, ctype: str = "application/json"
) -> tuple[int, Any, list[str]]:
    req = urllib.request.Request(BASE + path, data=body, method=method, headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, context=CTX) as resp:
            return resp.status, json.loads(resp.read() or b"{}"), resp.headers.get_all("Warning") or []
    except urllib.error.HTTPError as err:
        data = err.read()
        try:
            return err.code, json.loads(data), err.headers.get_all("Warning") or []
        except json.JSONDecodeError:
            return err.code, {"message": data.decode(errors="replace")}, []


def resources() -> dict[tuple[str, str], tuple[str, bool]]:
    """(apiVersion, kind) -> (URL prefix, namespaced)."""
    out: dict[tuple[str, str], tuple[str, bool]] = {}
    versions = ["v1"] + [v["groupVersion"] for g in request("GET", "/apis")[1]["groups"] for v in g["versions"]]
    for gv in versions:
        prefix = "/api/v1" if gv == "v1" else f"/apis/{gv}"
        for r in request("GET", prefix)[1]["resources"]:
            if "/" not in r["name"]:
                out[(gv, r["kind"])] = (f"{prefix}/{{ns}}{r['name']}", r["namespaced"])
    return out


def documents(text: str) -> list[str]:
    return [d for d in re.split(r"(?m)^---[ \t]*$", text) if d.strip()]


def main(files: list[str]) -> None:
    res = resources()
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError as err:
            print(json.dumps({"file": path, "index": 0, "code": 0, "message": f"not UTF-8: {err}"}))
            continue
        created: list[str] = []
        for i, doc in enumerate(documents(text)):
            try:
                obj = yaml.safe_load(doc)
            except yaml.YAMLError as err:
                print(json.dumps({"file": path, "index": i, "code": 0, "message": f"YAML: {err}"}))
                continue
            if not isinstance(obj, dict) or obj.get("kind") in (None, "Scenario"):  # also a comment-only part
                continue
            kind, api_version = obj.get("kind"), obj.get("apiVersion", "")
            meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
            found = res.get((api_version, kind))
            if found is None:
                print(
                    json.dumps(
                        {
                            "file": path,
                            "index": i,
                            "kind": kind,
                            "code": 0,
                            "message": f'no matches for kind "{kind}" in version "{api_version}"',
                        }
                    )
                )
                continue
            template, namespaced = found
            ns = meta.get("namespace") or "default"
            url = template.replace("{ns}", f"namespaces/{ns}/" if namespaced else "")
            code, body, warnings = request("POST", url + "?fieldValidation=Strict", doc.encode(), "application/yaml")
            name = meta.get("name") or meta.get("generateName", "")
            if code in (200, 201):
                created.append(url + "/" + body["metadata"]["name"])
                # Nodes and pods keep their status only through the status subresource.
                if kind in ("Node", "Pod") and isinstance(obj.get("status"), dict):
                    status = json.dumps({"status": obj["status"]}).encode()
                    request("PATCH", created[-1] + "/status", status, "application/merge-patch+json")
            print(
                json.dumps(
                    {
                        "file": path,
                        "index": i,
                        "kind": kind,
                        "name": name,
                        "code": code,
                        "message": "" if code in (200, 201) else body.get("message", ""),
                        "warnings": warnings,
                    }
                )
            )
        for url in reversed(created):
            # Nothing on a bare test server removes protection finalizers (PVs, PVCs): drop them first.
            request("PATCH", url, b'{"metadata":{"finalizers":null}}', "application/merge-patch+json")
            request("DELETE", url + "?gracePeriodSeconds=0")


if __name__ == "__main__":
    main(sys.argv[1:])
