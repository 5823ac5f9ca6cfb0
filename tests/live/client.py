"""A tiny synchronous Kubernetes API client for assertions, and polling helpers.

One client for both servers the live tests talk to: `kubesched serve` (plain
HTTP) and a real kube-apiserver (HTTPS with a client certificate: pass an SSL
context). urllib and json only, so that what the tests check never depends on
the code under test.
"""

from __future__ import annotations

import json
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEDULER = "kubesched"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(cond: Callable[[], Any], timeout: float = 15.0, interval: float = 0.05, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or cond}")
        time.sleep(interval)


class Api:
    """Requests as the test's user: `call` gives (code, body); the others assert success."""

    def __init__(self, url: str, ssl_context: ssl.SSLContext | None = None) -> None:
        self.url = url
        self.ssl_context = ssl_context

    def open(self, req: urllib.request.Request, timeout: float = 10) -> Any:
        return urllib.request.urlopen(req, timeout=timeout, context=self.ssl_context)

    def call(self, method: str, path: str, body: Any = None, ctype: str = "application/json") -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", ctype)
        try:
            with self.open(req) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as err:
            raw = err.read()
            return err.code, json.loads(raw) if raw else None

    def get(self, path: str) -> Any:
        code, body = self.call("GET", path)
        assert code == 200, (path, code, body)
        return body

    def create(self, path: str, body: Any) -> Any:
        code, out = self.call("POST", path, body)
        assert code == 201, (path, code, out)
        return out

    def patch(self, path: str, body: Any, ctype: str = MERGE_PATCH) -> Any:
        code, out = self.call("PATCH", path, body, ctype)
        assert code == 200, (path, code, out)
        return out

    def pods(self, ns: str = "default") -> dict[str, Any]:
        return {p["metadata"]["name"]: p for p in self.get(f"/api/v1/namespaces/{ns}/pods")["items"]}

    def pod(self, name: str, ns: str = "default") -> Any:
        code, body = self.call("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
        return body if code == 200 else None

    def events(self, ns: str = "default") -> list[Any]:
        return list(self.get(f"/apis/events.k8s.io/v1/namespaces/{ns}/events")["items"])

    def stats(self) -> Any:
        return self.get("/kubesched/stats")

    def fault(self, **rule: Any) -> None:
        code, _ = self.call("POST", "/kubesched/faults", rule)
        assert code == 200

    def lease(self, name: str = SCHEDULER, ns: str = "kube-system") -> Any:
        code, body = self.call("GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}")
        return body if code == 200 else None

    def watch(self, path: str, resource_version: str, seconds: int = 1) -> list[dict[str, Any]]:
        """The watch events of `path` after `resource_version`, for `seconds` (the server ends the watch)."""
        url = f"{self.url}{path}?watch=1&resourceVersion={resource_version}&timeoutSeconds={seconds}"
        with self.open(urllib.request.Request(url), timeout=seconds + 10) as r:
            return [json.loads(x) for x in r.read().splitlines() if x.strip()]


@dataclass
class Proc:
    """A process a test started (`kubesched serve`, `kubesched run`, kube-scheduler), with its log."""

    popen: subprocess.Popen[str]
    log: Path
    port: int = 0

    def alive(self) -> bool:
        return self.popen.poll() is None

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
        return self.popen.wait(timeout)

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            return r.read().decode()
