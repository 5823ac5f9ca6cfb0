"""Helpers for the live tests: `kubesched serve` and `kubesched run` as real processes on loopback."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("orjson")
pytest.importorskip("kubernetes")

from tests.live.apiserver import KubeApiServer, apiserver, kube  # noqa: F401 - fixtures for tests/live
from tests.live.client import SCHEDULER, Api, Proc, free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]

# The real API server: fixtures `apiserver` (session) and `kube` (emptied per test). See tests/live/apiserver.py.
BOTH = pytest.mark.parametrize(
    "cluster", ["serve", pytest.param("apiserver", marks=pytest.mark.apiserver)], indirect=True
)
APISERVER = pytest.mark.parametrize("cluster", [pytest.param("apiserver", marks=pytest.mark.apiserver)], indirect=True)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that asks for the real API server is an `apiserver` test (`-m "not apiserver"` leaves it out)."""
    for item in items:
        if {"apiserver", "kube"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.apiserver)


def make_pod(
    name: str,
    cpu: str = "100m",
    *,
    scheduler: str = SCHEDULER,
    priority: int | None = None,
    priority_class: str = "",
    node_selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu}}}],
    }
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
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


def priority_classes(**values: int) -> str:
    """PriorityClass documents (the API server's admission wants a class, not a bare spec.priority)."""
    docs = [
        f"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: {n}}}\nvalue: {v}\n"
        for n, v in values.items()
    ]
    return "---\n" + "---\n".join(docs)


def sched_config(
    qps: float = 5000,
    lease: str = "2s",
    renew: str = "1500ms",
    retry: str = "250ms",
    leader_elect: bool = True,
    burst: int = 0,
) -> str:
    return f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{qps: {qps}, burst: {burst or max(int(qps), 1)}}}
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


def _env() -> dict[str, str]:
    env = dict(os.environ)
    src = os.environ.get("KUBESCHED_LIVE_SRC")  # to try a patched tree: KUBESCHED_LIVE_SRC=/path/to/src
    if src:
        env["PYTHONPATH"] = src
    return env


@dataclass
class Cluster:
    """The cluster a test schedules: `kubesched serve`, or the real API server (`server`), and the processes on it."""

    tmp: Path
    procs: list[Proc] = field(default_factory=list)
    serve: Proc | None = None
    url: str = ""
    kubeconfig: Path | None = None
    server: KubeApiServer | None = None

    @property
    def api(self) -> Api:
        return self.server.api if self.server is not None else Api(self.url)

    def start(self, objects: str) -> Api:
        """The cluster with these objects (YAML): `kubesched serve` of them, or them created in the API server."""
        if self.server is None:
            return self.start_serve(objects)
        self.server.create_objects(objects)
        self.url, self.kubeconfig = self.server.url, self.server.kubeconfig
        return self.api

    def binds(self) -> dict[str, int]:
        """Successful bindings per pod (namespace/name): serve counts them, the API server's audit log has them."""
        if self.server is None:
            return dict(self.api.stats()["binds"])
        return self.server.bound_counts()

    def finish_terminating(self) -> list[str]:
        """Remove pods marked for deletion (a kubelet's part; serve deletes pods at once)."""
        return self.server.finish_terminating() if self.server is not None else []

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

    def start_run(
        self,
        config: str,
        name: str = "run",
        *extra: str,
        kubeconfig: Path | None = None,
        env: dict[str, str] | None = None,
        in_cluster: bool = False,
    ) -> Proc:
        """`kubesched run` with this configuration, as `name` (its leader identity, log and config file names).

        With the cluster's kubeconfig unless given another, or none (`in_cluster`: the service account that
        `env` points at)."""
        cfg = self.tmp / f"{name}.yaml"
        cfg.write_text(config)
        port = free_port()
        log = self.tmp / f"{name}.log"
        args = [sys.executable, "-m", "kubesched.live", "--config", str(cfg)]
        if not in_cluster:
            args += ["--kubeconfig", str(kubeconfig or self.kubeconfig)]
        args += ["--port", str(port), "--identity", name, *extra]
        with open(log, "a") as logf:
            p = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT, text=True, env={**_env(), **(env or {})})
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
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    """`kubesched serve`; or, parametrized with "apiserver" (BOTH, APISERVER), the real API server, emptied."""
    server = request.getfixturevalue("kube") if getattr(request, "param", "serve") == "apiserver" else None
    c = Cluster(tmp_path, server=server)
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
