"""Memory of a long-running `kubesched run`: pods pushed through in waves, the scheduler's RSS sampled.

A scheduler that runs for weeks sees millions of pods come and go; whatever it
keeps per pod after the pod is gone grows without bound. This pushes `--pods`
pods through a `--nodes`-node cluster in waves of `--wave`: create the wave,
wait until the scheduler has bound all of it, delete it, wait until the
scheduler's cache is empty again. The scheduler is `kubesched run` in its own
process; its RSS (/proc/PID/status) is sampled every 50 ms. One line per wave:
the pods so far, the wave's peak RSS and the RSS once its pods are gone. The
summary says how flat the peaks are after warm-up (the first quarter of the
waves): their spread, and the least-squares slope in MB per 100,000 pods.

Against `kubesched serve --no-scheduler` (started here; the default):

    .venv/bin/python benchmarks/live_memory.py --pods 200000

Against a real kube-apiserver (../shared/k8s/up.sh; its kubeconfig):

    .venv/bin/python benchmarks/live_memory.py --kubeconfig /tmp/live-memory-apiserver/admin.kubeconfig

With a real API server the nodes are created (and marked Ready through
nodes/status) in the namespace-less node list, pods in the namespace
`live-memory` (created, with its default ServiceAccount). Pods are deleted with
gracePeriodSeconds 0 (no kubelet finishes them otherwise), by label per wave.
`--json PATH` writes every sample and wave.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

from kubesched.live.errors import ApiError
from kubesched.live.kubeconfig import load_connection
from kubesched.live.rest import RestClient

NAMESPACE = "live-memory"
SCHEDULER = "kubesched-memory"
CONCURRENCY = 64


@dataclass
class Wave:
    index: int
    pods_total: int
    seconds: float
    peak_mb: float
    settled_mb: float


@dataclass
class Run:
    server: str
    nodes: int
    wave_size: int
    waves: list[Wave] = field(default_factory=list)
    samples: list[tuple[float, float]] = field(default_factory=list)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Sampler(threading.Thread):
    """RSS of one process every `period` seconds; the peak since the last `take_peak()`."""

    def __init__(self, pid: int, period: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.period = period
        self.samples: list[tuple[float, float]] = []
        self.peak = 0.0
        self.stopped = threading.Event()
        self.t0 = time.monotonic()

    def run(self) -> None:
        while not self.stopped.wait(self.period):
            try:
                mb = rss_mb(self.pid)
            except OSError:
                return
            self.samples.append((round(time.monotonic() - self.t0, 3), round(mb, 2)))
            self.peak = max(self.peak, mb)

    def take_peak(self) -> float:
        peak, self.peak = self.peak, 0.0
        return peak


def metric(port: int, name: str, **labels: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    pattern = rf"^{re.escape(name)}{re.escape('{' + want + '}') if want else ''} (\S+)$"
    m = re.search(pattern, text, re.M)
    return float(m.group(1)) if m else float("nan")


def wait_for(cond: Any, what: str, timeout: float, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if proc.poll() is not None:
            raise SystemExit(f"kubesched run exited with {proc.returncode} while waiting for {what}")
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.05)


def node_object(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}", "zone": f"z{i % 3}"}},
        "status": {
            "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}],
        },
    }


def pod_body(name: str, wave: int) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "memory", "wave": str(wave)}},
            "spec": {
                "schedulerName": SCHEDULER,
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                    }
                ],
            },
        }
    )


async def _each(items: list[Any], work: Any) -> None:
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(x: Any) -> None:
        async with sem:
            await work(x)

    await asyncio.gather(*(one(x) for x in items))


async def _ok(rest: RestClient, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200, 201)) -> None:
    code, payload = await rest.request(method, path, body=body)
    if code not in ok:
        raise SystemExit(f"{method} {path}: HTTP {code}: {payload[:300]!r}")


async def prepare_apiserver(rest: RestClient, nodes: int) -> None:
    """The namespace, its default ServiceAccount, Ready nodes (no controller-manager, no kubelet)."""
    ns_body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    await _ok(rest, "POST", "/api/v1/namespaces", ns_body, (201, 409))
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    await _ok(rest, "POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", sa, (201, 409))

    async def node(i: int) -> None:
        obj = node_object(i)
        await _ok(rest, "POST", "/api/v1/nodes", obj, (201, 409))
        code, payload = await rest.request(
            "PATCH",
            f"/api/v1/nodes/node-{i}/status",
            body={"status": obj["status"]},
            content_type="application/merge-patch+json",
        )
        if code != 200:
            raise SystemExit(f"nodes/node-{i}/status: HTTP {code}: {payload[:300]!r}")

    await _each(list(range(nodes)), node)


async def create_wave(rest: RestClient, wave: int, first: int, n: int) -> None:
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"

    async def create(i: int) -> None:
        for tries in range(1, 6):
            try:
                # After a dropped connection the first try may have created it: 409 is fine then.
                await _ok(rest, "POST", path, pod_body(f"p-{i}", wave), (201,) if tries == 1 else (201, 409))
                return
            except ApiError:
                if tries == 5:
                    raise

    await _each(list(range(first, first + n)), create)


async def unbound_in_wave(rest: RestClient, wave: int) -> int:
    code, payload = await rest.request(
        "GET",
        f"/api/v1/namespaces/{NAMESPACE}/pods",
        params={"labelSelector": f"wave={wave}", "fieldSelector": "spec.nodeName="},
        timeout=120,
    )
    if code != 200:
        raise SystemExit(f"list pods: HTTP {code}: {payload[:300]!r}")
    return len(orjson.loads(payload)["items"])


async def delete_wave(rest: RestClient, wave: int) -> None:
    """Delete the wave's pods in one deletecollection, again if the connection dropped (it is idempotent)."""
    for tries in range(1, 6):
        try:
            code, payload = await rest.request(
                "DELETE",
                f"/api/v1/namespaces/{NAMESPACE}/pods",
                params={"labelSelector": f"wave={wave}"},
                body={"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
                timeout=600,  # a loaded API server takes a while over thousands of pods
            )
            break
        except ApiError as err:
            if tries == 5:
                raise
            print(f"delete wave {wave}: {err}; again", file=sys.stderr, flush=True)
    if code != 200:
        raise SystemExit(f"delete wave {wave}: HTTP {code}: {payload[:300]!r}")


def serve_cluster(tmp: Path, nodes: int) -> tuple[subprocess.Popen[bytes], Path]:
    scenario = tmp / "cluster.yaml"
    objs = [node_object(i) for i in range(nodes)]
    objs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    scenario.write_text(yaml.safe_dump_all(objs))
    kubeconfig = tmp / "serve.kubeconfig"
    args = [sys.executable, "-m", "kubesched.serve", str(scenario), "--port", "0", "--no-scheduler"]
    args += ["--write-kubeconfig", str(kubeconfig), "--history", "100000"]
    log = open(tmp / "serve.log", "wb")  # noqa: SIM115 - lives as long as the process
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log)
    assert p.stdout is not None
    line = p.stdout.readline().decode()
    if not line.startswith("serving "):
        raise SystemExit(f"kubesched serve did not start: {line!r}; see {tmp / 'serve.log'}")
    return p, kubeconfig


def scheduler_config(path: Path) -> None:
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "clientConnection: {qps: 5000, burst: 5000}\n"
        "leaderElection: {leaderElect: false}\n"
        f"profiles:\n- schedulerName: {SCHEDULER}\n"
    )


def start_scheduler(tmp: Path, kubeconfig: Path, port: int) -> subprocess.Popen[bytes]:
    cfg = tmp / "sched.yaml"
    scheduler_config(cfg)
    args = [sys.executable, "-m", "kubesched.live", "--kubeconfig", str(kubeconfig), "--config", str(cfg)]
    args += ["--port", str(port), "--identity", "live-memory"]
    log = open(tmp / "run.log", "wb")  # noqa: SIM115 - lives as long as the process
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)


def flatness(waves: list[Wave]) -> dict[str, float]:
    """Spread and slope of the wave peaks after warm-up (the first quarter of the waves)."""
    after = waves[max(1, len(waves) // 4) :]
    if len(after) < 2:
        return {}
    xs = [w.pods_total for w in after]
    ys = [w.peak_mb for w in after]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0
    return {
        "waves_after_warmup": len(after),
        "peak_min_mb": min(ys),
        "peak_max_mb": max(ys),
        "peak_spread_mb": max(ys) - min(ys),
        "slope_mb_per_100k_pods": slope * 100_000,
        "settled_first_mb": after[0].settled_mb,
        "settled_last_mb": after[-1].settled_mb,
    }


async def drive(args: argparse.Namespace, tmp: Path) -> Run:
    serve = None
    if args.kubeconfig:
        kubeconfig = Path(args.kubeconfig)
        server = "kube-apiserver"
    else:
        serve, kubeconfig = serve_cluster(tmp, args.nodes)
        server = "kubesched serve"
    rest = RestClient(load_connection(str(kubeconfig)), qps=1e6, burst=1_000_000)
    await rest.open()
    sched = None
    try:
        if args.kubeconfig:
            await prepare_apiserver(rest, args.nodes)
        port = _free_port()
        sched = start_scheduler(tmp, kubeconfig, port)
        wait_for(lambda: _ready(port), "readyz", 120, sched)
        sampler = Sampler(sched.pid)
        sampler.start()
        run = Run(server, args.nodes, args.wave)
        waves = (args.pods + args.wave - 1) // args.wave
        done = 0
        print(f"{server}: {args.nodes} nodes, {args.pods} pods in {waves} waves of {args.wave}", flush=True)
        print(f"{'wave':>5} {'pods':>8} {'seconds':>8} {'peak MB':>8} {'settled MB':>10}", flush=True)
        sampler.take_peak()
        for w in range(waves):
            n = min(args.wave, args.pods - done)
            t = time.monotonic()
            await create_wave(rest, w, done, n)
            target = done + n
            wait_for(lambda t=target: metric(port, "kubesched_binds_total", result="success") >= t, "binds", 600, sched)
            left = await unbound_in_wave(rest, w)
            if left:
                raise SystemExit(f"wave {w}: {left} pods not bound although the scheduler counted the binds")
            await delete_wave(rest, w)
            wait_for(
                lambda: metric(port, "scheduler_scheduler_cache_size", type="pods") == 0, "empty cache", 600, sched
            )
            done = target
            time.sleep(0.2)  # let the sampler see the settled state
            wave = Wave(
                w, done, round(time.monotonic() - t, 2), round(sampler.take_peak(), 1), round(rss_mb(sched.pid), 1)
            )
            run.waves.append(wave)
            print(f"{w:>5} {done:>8} {wave.seconds:>8.1f} {wave.peak_mb:>8.1f} {wave.settled_mb:>10.1f}", flush=True)
        sampler.stopped.set()
        run.samples = sampler.samples
        return run
    finally:
        await rest.close()
        for p in (sched, serve):
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kubeconfig", help="a real API server's kubeconfig (default: start kubesched serve)")
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--pods", type=int, default=200_000)
    p.add_argument("--wave", type=int, default=5_000)
    p.add_argument("--json", help="write the waves and every RSS sample here")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="live-memory-"))
    run = asyncio.run(drive(args, tmp))
    summary = flatness(run.waves)
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({**asdict(run), "summary": summary}))
    if not args.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"logs in {tmp}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
