"""Extender servers for the tests: the golden cases' reference server, and a scriptable fake.

The reference server (tests/conformance/cases/extender/server.py) is the one the golden cases
run against, so tests against it check what the scheduler will meet. The fake answers canned
bytes and records every request, for what the reference cannot do (bad JSON, delays, unknown
nodes, errors on bind) and to look at the exact JSON the client sends.
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from kubesched.api.decode import decode
from kubesched.config.types import Extender, ExtenderManagedResource
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.types import NodeInfo, PodInfo

REFERENCE_SERVER = Path(__file__).resolve().parents[1] / "conformance" / "cases" / "extender" / "server.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _accepts(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class ReferenceServer:
    """server.py as a subprocess on a free port; `stop()` sends SIGTERM."""

    def __init__(self, args: Iterable[str], node_manifests: list[dict[str, Any]] | None, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, str(REFERENCE_SERVER), "--port", str(self.port), *args]
        if node_manifests:
            labels = workdir / f"nodes-{self.port}.yaml"
            labels.write_text(yaml.safe_dump_all(node_manifests))
            cmd += ["--node-labels", str(labels)]
        self.log = workdir / f"server-{self.port}.log"
        self._log = self.log.open("w")
        self.proc = subprocess.Popen(cmd, stderr=self._log)
        deadline = time.monotonic() + 10
        while not _accepts(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"extender server did not start: {self.log.read_text()}")
            time.sleep(0.02)

    def requests(self) -> list[str]:
        """The server's per-request log lines ("extender: VERB ns/name ...")."""
        return [ln for ln in self.log.read_text().splitlines() if not ln.startswith("extender: listening")]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


@dataclass
class Canned:
    status: int = 200
    body: bytes = b""
    delay: float = 0.0


@dataclass
class Recorded:
    path: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        return json.loads(self.body)


class FakeServer:
    """A threaded HTTP server answering POST /<verb> with canned replies, recording each request."""

    def __init__(
        self,
        replies: dict[str, Canned | Callable[[Recorded], Canned]] | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.replies = dict(replies or {})
        self.requests: list[Recorded] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                rec = Recorded(self.path, self.rfile.read(n), dict(self.headers.items()))
                fake.requests.append(rec)
                reply = fake.replies.get(self.path.rsplit("/", 1)[-1], Canned(404))
                canned = reply(rec) if callable(reply) else reply
                if canned.delay:
                    time.sleep(canned.delay)
                self.send_response(canned.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(canned.body)))
                self.end_headers()
                self.wfile.write(canned.body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = int(self.server.server_address[1])
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# ---------------------------------------------------------------- objects


def node_manifest(name: str, labels: dict[str, str] | None = None, cpu: str = "4") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def pod_info(
    name: str,
    uid: str = "",
    node: str = "",
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    init_requests: dict[str, str] | None = None,
) -> PodInfo:
    res: dict[str, Any] = {}
    if requests:
        res["requests"] = requests
    if limits:
        res["limits"] = limits
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause", "resources": res}]}
    if init_requests:
        spec["initContainers"] = [{"name": "i", "image": "pause", "resources": {"requests": init_requests}}]
    if node:
        spec["nodeName"] = node
    raw = {"metadata": {"name": name, "namespace": "default", "uid": uid or f"uid-{name}"}, "spec": spec}
    return PodInfo(decode("Pod", raw))


def snapshot_of(manifests: list[dict[str, Any]], pods: Iterable[PodInfo] = ()) -> Snapshot:
    infos = [NodeInfo(decode("Node", m)) for m in manifests]
    by_name = {ni.name: ni for ni in infos}
    for pi in pods:
        by_name[pi.pod.spec.node_name].add_pod(pi)
    snap = Snapshot()
    snap.rebuild(infos)
    return snap


def extender_config(url: str, **kw: Any) -> Extender:
    managed = kw.pop("managed", [])
    defaults: dict[str, Any] = {"filter_verb": "filter", "prioritize_verb": "prioritize", "weight": 1}
    defaults.update(kw)
    return Extender(
        url_prefix=url,
        managed_resources=[ExtenderManagedResource(name=m) for m in managed],
        **defaults,
    )
