"""`kubesched run` against kube-scheduler v1.34.1, on the same real kube-apiserver, alternately.

    .venv/bin/python benchmarks/live_vs_kube_scheduler.py                    # both shapes, 3 rounds
    .venv/bin/python benchmarks/live_vs_kube_scheduler.py --nodes 500 --pods 2000 --rounds 1

Starts etcd + kube-apiserver with ../shared/k8s/up.sh (its own directory and ports), creates the
nodes (Ready, 32 cpu / 256Gi / 110 pods each), then for each round and each scheduler: creates the
pods (schedulerName `bench`, 100m cpu / 128Mi each) before the scheduler starts, starts it
(clientConnection qps/burst 5000, no leader election), watches the pods until every one is bound,
stops it and deletes the pods. The clock starts when the scheduler's process does, so start-up
(imports, the initial LIST, cache sync) counts, as it does for a user.

Per run: seconds to the first bind, pods/s over the whole run (pods / seconds to the last bind), and
the scheduler's CPU seconds (its rusage). The summary takes each scheduler's best round (the machine
is noisy; the rounds alternate so both see the same conditions) and prints kubesched / kube-scheduler.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
K8S = ROOT.parent / "shared" / "k8s"
SCHEDULER = "bench"
NAMESPACE = "default"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ApiServer:
    """An etcd + kube-apiserver of our own, started and stopped with the shared scripts."""

    live_dir: Path
    env: dict[str, str]

    @classmethod
    def start(cls, live_dir: Path) -> ApiServer:
        env = {
            **os.environ,
            "LIVE_DIR": str(live_dir),
            "ETCD_PORT": str(free_port()),
            "ETCD_PEER_PORT": str(free_port()),
            "API_PORT": str(free_port()),
            "ETCD_DATA": f"/dev/shm/kubesched-bench-etcd-{os.getpid()}",
        }
        subprocess.run([str(K8S / "up.sh")], env=env, check=True, stdout=subprocess.DEVNULL)
        return cls(live_dir, env)

    def stop(self) -> None:
        subprocess.run([str(K8S / "down.sh"), "--wipe"], env=self.env, check=False, stdout=subprocess.DEVNULL)

    @property
    def kubeconfig(self) -> Path:
        return self.live_dir / "admin.kubeconfig"

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.env['API_PORT']}"

    def cpu_seconds(self) -> float:
        """CPU seconds etcd and kube-apiserver have used so far (user + system, from /proc)."""
        total = 0
        for pid_file in (self.live_dir / "pids").glob("*.pid"):
            try:
                fields = Path(f"/proc/{pid_file.read_text().strip()}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])  # utime, stime in clock ticks
        return total / os.sysconf("SC_CLK_TCK")

    def ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.live_dir / "pki" / "ca.crt"))
        ctx.load_cert_chain(str(self.live_dir / "pki" / "admin.crt"), str(self.live_dir / "pki" / "admin.key"))
        return ctx


class Admin:
    """The benchmark's own client: bulk creation and deletion, and a watch that counts binds."""

    def __init__(self, server: ApiServer) -> None:
        self.server = server
        self.session = aiohttp.ClientSession(
            server.url, connector=aiohttp.TCPConnector(ssl=server.ssl(), limit=64), timeout=aiohttp.ClientTimeout(None)
        )

    async def close(self) -> None:
        await self.session.close()

    async def request(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200, 201)) -> Any:
        async with self.session.request(method, path, json=body) as resp:
            data = await resp.json()
            if resp.status not in ok:
                raise RuntimeError(f"{method} {path}: {resp.status} {data.get('message')}")
            return data

    async def many(self, method: str, path: str, bodies: list[Any]) -> None:
        sem = asyncio.Semaphore(64)

        async def one(body: Any) -> None:
            async with sem:
                await self.request(method, path, body)

        await asyncio.gather(*(one(b) for b in bodies))

    async def nodes(self, n: int) -> None:
        status = {
            "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        }
        bodies = [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
                "status": status,
            }
            for i in range(n)
        ]
        await self.many("POST", "/api/v1/nodes", bodies)
        # No controller-manager: the default ServiceAccount that pod admission wants is made here.
        sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
        await self.request("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", sa, ok=(201, 409))

    async def pods(self, n: int, prefix: str) -> None:
        container = {
            "name": "c",
            "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
        }
        bodies = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{prefix}-{i}"},
                "spec": {"schedulerName": SCHEDULER, "containers": [container]},
            }
            for i in range(n)
        ]
        await self.many("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", bodies)

    async def delete_pods(self) -> None:
        await self.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods?gracePeriodSeconds=0", ok=(200,))
        while (await self.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?limit=1"))["items"]:
            await asyncio.sleep(0.2)

    async def watch_binds(self, total: int, started: float, timeout: float) -> tuple[float, float]:
        """Seconds from `started` to the first and to the last bind of `total` pods."""
        listed = await self.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?limit=1")
        rv = listed["metadata"]["resourceVersion"]
        bound: set[str] = set()
        first = 0.0
        path = f"/api/v1/namespaces/{NAMESPACE}/pods?watch=1&resourceVersion={rv}&allowWatchBookmarks=false"
        deadline = time.monotonic() + timeout
        async with self.session.get(path) as resp:
            async for line in resp.content:
                event = json.loads(line)
                obj = event.get("object") or {}
                if event.get("type") == "MODIFIED" and (obj.get("spec") or {}).get("nodeName"):
                    name = obj["metadata"]["name"]
                    if name not in bound:
                        bound.add(name)
                        if len(bound) == 1:
                            first = time.monotonic() - started
                        if len(bound) == total:
                            return first, time.monotonic() - started
                if time.monotonic() > deadline:
                    break
        raise RuntimeError(f"only {len(bound)} of {total} pods bound within {timeout:.0f} s")


def config_file(directory: Path, kubeconfig: Path) -> Path:
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 5000, "burst": 5000},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": SCHEDULER}],
    }
    path = directory / "scheduler.json"
    path.write_text(json.dumps(cfg))
    return path


PROFILE: Path | None = None  # --profile: py-spy's collapsed stacks of kubesched's runs go here


def command(which: str, cfg: Path, kubeconfig: Path) -> list[str]:
    if which == "kubesched":
        cmd = [sys.executable, "-m", "kubesched.cli", "run", "--config", str(cfg), "--kubeconfig", str(kubeconfig)]
        cmd += ["--port", "0"]
        if PROFILE is not None:
            spy = [str(Path(sys.executable).with_name("py-spy")), "record", "--format", "raw", "--threads"]
            return [*spy, "--rate", "200", "-o", str(PROFILE), "--", *cmd]
        return cmd
    binary = Path(os.environ.get("K8S_BIN", Path.home() / ".cache" / "kubesched-k8s-v1.34.1")) / "kube-scheduler"
    return [str(binary), "--config", str(cfg), "--secure-port", "0", "--v", "0"]


def children_of(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


@dataclass
class Run:
    scheduler: str
    first_bind: float
    seconds: float
    cpu: float
    pods: int
    server_cpu: float

    @property
    def pods_per_second(self) -> float:
        return self.pods / self.seconds


async def one_run(admin: Admin, which: str, cfg: Path, kubeconfig: Path, pods: int, round_: int) -> Run:
    await admin.pods(pods, f"{which[:5]}-{round_}")
    server_cpu = admin.server.cpu_seconds()
    started = time.monotonic()
    log = open(f"/tmp/bench-{which}.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(command(which, cfg, kubeconfig), stdout=log, stderr=log)
    try:
        first, last = await admin.watch_binds(pods, started, timeout=600)
    finally:
        target = proc.pid
        if PROFILE is not None and which == "kubesched":  # stop the profiled process: py-spy then writes
            target = next((c for c in children_of(proc.pid)), proc.pid)
        os.kill(target, signal.SIGTERM)
        _, _, usage = os.wait4(proc.pid, 0)
        server_cpu = admin.server.cpu_seconds() - server_cpu
    await admin.delete_pods()
    return Run(which, first, last, usage.ru_utime + usage.ru_stime, pods, server_cpu)


async def shape(server: ApiServer, nodes: int, pods: int, rounds: int, directory: Path) -> list[Run]:
    admin = Admin(server)
    runs: list[Run] = []
    try:
        await admin.nodes(nodes)
        cfg = config_file(directory, server.kubeconfig)
        for r in range(rounds):
            order = ("kubesched", "kube-scheduler") if r % 2 == 0 else ("kube-scheduler", "kubesched")
            for which in order:
                run = await one_run(admin, which, cfg, server.kubeconfig, pods, r)
                runs.append(run)
                print(
                    f"  {nodes} nodes / {pods} pods, round {r + 1}, {which:14}: {run.pods_per_second:6.0f} pods/s, "
                    f"first bind {run.first_bind:5.2f} s, all bound {run.seconds:6.2f} s, cpu {run.cpu:5.1f} s "
                    f"(apiserver + etcd {run.server_cpu:5.1f} s)",
                    flush=True,
                )
        await admin.request("DELETE", "/api/v1/nodes", ok=(200,))
    finally:
        await admin.close()
    return runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, help="one shape: this many nodes (with --pods)")
    ap.add_argument("--pods", type=int)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", type=Path, help="record kubesched's runs with py-spy (collapsed stacks) to this file")
    args = ap.parse_args()
    global PROFILE
    PROFILE = args.profile
    shapes = [(args.nodes, args.pods)] if args.nodes else [(500, 2000), (5000, 10000)]
    if not (K8S / "up.sh").exists():
        print(f"no {K8S}/up.sh: the benchmark needs ../shared/k8s beside the checkout", file=sys.stderr)
        return 2
    # Byte-compiled first, as an installed package is: no run pays for compiling the sources it imports
    # (an environment with PYTHONDONTWRITEBYTECODE would otherwise compile them at every start).
    import kubesched

    compileall.compile_dir(Path(kubesched.__file__).parent, quiet=1)
    with tempfile.TemporaryDirectory(prefix="kubesched-bench-") as tmp:
        server = ApiServer.start(Path(tmp) / "apiserver")
        try:
            summary = []
            for nodes, pods in shapes:
                runs = asyncio.run(shape(server, nodes, pods, args.rounds, Path(tmp)))
                best = {
                    w: max((r for r in runs if r.scheduler == w), key=lambda r: r.pods_per_second)
                    for w in ("kubesched", "kube-scheduler")
                }
                summary.append((nodes, pods, best))
        finally:
            server.stop()
    print("\nbest round of each (pods/s, first bind):")
    for nodes, pods, best in summary:
        ours, theirs = best["kubesched"], best["kube-scheduler"]
        print(
            f"  {nodes:5} nodes / {pods:6} pods: "
            f"kubesched {ours.pods_per_second:5.0f} pods/s ({ours.first_bind:.2f} s), "
            f"kube-scheduler {theirs.pods_per_second:5.0f} pods/s ({theirs.first_bind:.2f} s): "
            f"{ours.pods_per_second / theirs.pods_per_second:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
