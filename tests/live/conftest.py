"""Helpers for the live tests: `kubesched serve` and `kubesched run` as real processes on loopback."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("orjson")
pytest.importorskip("kubernetes")

SCHEDULER = "kubesched"
ROOT = Path(__file__).resolve().parents[2]


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
    """A tiny synchronous client for assertions (urllib + json)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def call(self, method: str, path: str, body: Any = None, ctype: str = "application/json") -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
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


def make_pod(
    name: str,
    cpu: str = "100m",
    *,
    scheduler: str = SCHEDULER,
    priority: int | None = None,
    node_selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu}}}],
    }
    if priority is not None:
        spec["priority"] = priority
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def nodes_yaml(n: int, cpu: str = "4", prefix: str = "node") -> str:
    docs = []
    for i in range(n):
        docs.append(
            f"apiVersion: v1\nkind: Node\nmetadata: {{name: {prefix}-{i}, labels: {{zone: z{i % 2}}}}}\n"
            f"status:\n  capacity: {{cpu: '{cpu}', memory: 16Gi, pods: '110'}}\n"
            "  conditions: [{type: Ready, status: 'True'}]\n"
        )
    return "---\n".join(docs)


def sched_config(
    qps: float = 5000, lease: str = "2s", renew: str = "1500ms", retry: str = "250ms", leader_elect: bool = True
) -> str:
    return f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{qps: {qps}, burst: {max(int(qps), 1)}}}
leaderElection:
  leaderElect: {str(leader_elect).lower()}
  leaseDuration: {lease}
  renewDeadline: {renew}
  retryPeriod: {retry}
  resourceName: {SCHEDULER}
  resourceNamespace: kube-system
profiles:
- schedulerName: {SCHEDULER}
"""


@dataclass
class Proc:
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


def _env() -> dict[str, str]:
    env = dict(os.environ)
    src = os.environ.get("KUBESCHED_LIVE_SRC")  # to try a patched tree: KUBESCHED_LIVE_SRC=/path/to/src
    if src:
        env["PYTHONPATH"] = src
    return env


@dataclass
class Cluster:
    tmp: Path
    procs: list[Proc] = field(default_factory=list)
    serve: Proc | None = None
    url: str = ""
    kubeconfig: Path | None = None

    @property
    def api(self) -> Api:
        return Api(self.url)

    def start_serve(self, scenario: str, *extra: str, scheduler: bool = False) -> Api:
        path = self.tmp / "scenario.yaml"
        path.write_text(scenario)
        self.kubeconfig = self.tmp / "kubeconfig"
        log = self.tmp / "serve.log"
        args = [sys.executable, "-m", "kubesched.serve", str(path), "--port", "0", "--test-endpoints"]
        args += ["--write-kubeconfig", str(self.kubeconfig), "--bookmark-interval", "0.5", *extra]
        if not scheduler:
            args.append("--no-scheduler")
        with open(log, "w") as logf:
            p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=logf, text=True, env=_env())
        proc = Proc(p, log)
        self.procs.append(proc)
        self.serve = proc
        assert p.stdout is not None
        line = p.stdout.readline()
        assert line.startswith("serving "), (line, proc.text())
        self.url = line.split()[1]
        return self.api

    def start_run(self, config: str, name: str = "run", *extra: str) -> Proc:
        cfg = self.tmp / f"{name}.yaml"
        cfg.write_text(config)
        port = free_port()
        log = self.tmp / f"{name}.log"
        args = [sys.executable, "-m", "kubesched.live", "--kubeconfig", str(self.kubeconfig), "--config", str(cfg)]
        args += ["--port", str(port), "--identity", name, *extra]
        with open(log, "a") as logf:
            p = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT, text=True, env=_env())
        proc = Proc(p, log, port)
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for p in reversed(self.procs):
            if p.alive():
                p.popen.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.popen.wait(5)
            if p.popen.stdout is not None:
                p.popen.stdout.close()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path)
    try:
        yield c
    finally:
        c.close()


def bound_nodes(api: Api, ns: str = "default") -> dict[str, str]:
    return {n: p["spec"].get("nodeName", "") for n, p in api.pods(ns).items()}


def wait_ready(proc: Proc, timeout: float = 20.0) -> None:
    def ready() -> bool:
        assert proc.alive(), proc.text()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{proc.port}/readyz", timeout=1) as r:
                return r.status == 200
        except (urllib.error.URLError, ConnectionError, OSError):
            return False

    wait_until(ready, timeout, 0.1, "readyz")
