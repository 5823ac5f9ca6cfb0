"""kube-scheduler and `kubesched run` through the same API server outage: how many writes each sends.

    LIVE_DIR=/tmp/my-apiserver API_PORT=17443 ETCD_PORT=... ../shared/k8s/up.sh
    python tools/outage_compare.py --live-dir /tmp/my-apiserver --api-port 17443 --pods 1000 --outage 18

Each scheduler in turn (alternately, `--rounds` times) gets its own namespace of `--pods` pending pods
(no requests: they all fit), starts, and once it has bound `--bound-before` of them the outage begins:
the real kube-apiserver is killed (by its pid file, which up.sh wrote) and started again with up.sh,
and for `--outage` seconds a counting proxy between the scheduler and the server answers every request
503, which both retry as a refused connection (client-go's util.Retriable, kubesched's
ApiError.retriable); event writes differ: client-go gives up on any answer, a 503 too, but retries
when the server is unreachable. The proxy counts each request by method and resource: during the
outage, and after it until every pod is bound and the scheduler has been quiet for a second (not what
it sends while it shuts down). Both schedulers run with the same KubeSchedulerConfiguration (`--qps`,
`--burst`, parallelism 16, no leader election).

Prints one JSON line per run. Only processes this script starts are stopped (by their pid).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

SHARED = Path(__file__).resolve().parents[2] / "shared" / "k8s"


# ---------------------------------------------------------------- the counting proxy


def what(method: str, path: str, query: str) -> str:
    """ "PATCH pods/status", "POST pods/binding", "WATCH pods", ... (namespaces and names dropped)."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"]:
        parts = parts[2:]
    elif parts[:1] == ["apis"]:
        parts = parts[3:]
    if parts[:1] == ["namespaces"] and len(parts) >= 3:
        parts = parts[2:]
    resource = parts[0] if parts else path
    sub = parts[2] if len(parts) > 2 else ""
    if method == "GET" and ("watch=true" in query or "watch=1" in query):
        method = "WATCH"
    return f"{method} {resource}{'/' + sub if sub else ''}"


class Proxy:
    """Plain HTTP in, the API server (client certificate) out; counts requests; 503 while `down`."""

    def __init__(self, upstream: str, ssl_ctx: ssl.SSLContext) -> None:
        self.upstream = upstream
        self.ssl = ssl_ctx
        self.down = False
        self.window = "before"
        self.counts: dict[str, Counter[str]] = {}
        self.session: aiohttp.ClientSession | None = None

    def count(self, key: str) -> None:
        self.counts.setdefault(self.window, Counter())[key] += 1

    async def handle(self, req: web.Request) -> web.StreamResponse:
        key = what(req.method, req.path, req.query_string)
        self.count(key)
        unavailable = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 503}
        if self.down:
            return web.json_response({**unavailable, "message": "connection refused (outage)"}, status=503)
        assert self.session is not None
        body = await req.read()
        headers = {k: v for k, v in req.headers.items() if k.lower() not in ("host", "content-length")}
        try:
            async with self.session.request(
                req.method,
                self.upstream + req.path_qs,
                data=body or None,
                headers=headers,
                ssl=self.ssl,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=5),
            ) as up:
                resp = web.StreamResponse(status=up.status)
                for k, v in up.headers.items():
                    if k.lower() not in ("content-length", "transfer-encoding", "content-encoding", "connection"):
                        resp.headers[k] = v
                await resp.prepare(req)
                async for chunk in up.content.iter_any():
                    if self.down:
                        break
                    await resp.write(chunk)
                await resp.write_eof()
                return resp
        except (TimeoutError, aiohttp.ClientError, OSError):
            return web.json_response({**unavailable, "message": "connection refused"}, status=503)

    async def start(self, port: int) -> None:
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        app = web.Application(client_max_size=64 << 20)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()


def start_proxy(upstream: str, ssl_ctx: ssl.SSLContext, port: int) -> Proxy:
    proxy = Proxy(upstream, ssl_ctx)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    asyncio.run_coroutine_threadsafe(proxy.start(port), loop).result(10)
    return proxy


# ---------------------------------------------------------------- the API server (direct, for setup and checks)


class Direct:
    def __init__(self, base: str, ctx: ssl.SSLContext) -> None:
        self.base, self.ctx = base, ctx

    def call(self, method: str, path: str, body: Any = None, ctype: str = "application/json") -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method, headers={"Content-Type": ctype})
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=30) as r:
                return json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as err:
            if err.code == 409:
                return None
            raise

    def bound(self, ns: str) -> tuple[int, int]:
        items = self.call("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
        return sum(1 for p in items if p["spec"].get("nodeName")), len(items)


def setup_nodes(api: Direct, n: int) -> None:
    for i in range(n):
        name = f"outage-node-{i}"
        cap = {"cpu": "64", "memory": "256Gi", "pods": "5000"}
        api.call("POST", "/api/v1/nodes", {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}})
        ready = [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}]
        api.call(
            "PATCH",
            f"/api/v1/nodes/{name}/status",
            {"status": {"capacity": cap, "allocatable": cap, "conditions": ready}},
            "application/merge-patch+json",
        )


def create_pods(api: Direct, ns: str, n: int, scheduler: str) -> None:
    api.call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    # No controller-manager: the ServiceAccount admission plugin wants the namespace's default account.
    api.call("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "default"}})
    for i in range(n):
        pod = {
            "metadata": {"name": f"p{i}"},
            "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
        }
        api.call("POST", f"/api/v1/namespaces/{ns}/pods", pod)


# ---------------------------------------------------------------- one run


def config(path: Path, scheduler: str, qps: float, burst: int, kubeconfig: Path) -> None:
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"clientConnection: {{kubeconfig: {kubeconfig}, qps: {qps}, burst: {burst}}}\n"
        "leaderElection: {leaderElect: false}\nparallelism: 16\n"
        f"profiles:\n- schedulerName: {scheduler}\n"
    )


def restart_apiserver(env: dict[str, str], live_dir: str) -> None:
    pid = int(Path(live_dir, "pids", "apiserver.pid").read_text())
    os.kill(pid, signal.SIGKILL)  # a crash: its graceful shutdown would keep answering for a while
    for _ in range(200):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    subprocess.run([str(SHARED / "up.sh")], env=env, check=True, capture_output=True, timeout=120)


def run_one(args: argparse.Namespace, who: str, tag: str, api: Direct, proxy: Proxy, tmp: Path) -> dict[str, Any]:
    scheduler = "default-scheduler" if who == "kube-scheduler" else "kubesched"
    ns = f"outage-{tag}"
    create_pods(api, ns, args.pods, scheduler)
    cfg = tmp / f"{tag}.yaml"
    config(cfg, scheduler, args.qps, args.burst, tmp / "proxy.kubeconfig")
    log = open(tmp / f"{tag}.log", "w")  # noqa: SIM115 - closed below
    if who == "kube-scheduler":
        binary = Path(os.environ.get("K8S_BIN", Path.home() / ".cache/kubesched-k8s-v1.34.1")) / "kube-scheduler"
        cmd = [str(binary), f"--config={cfg}", "--secure-port=0", "-v=1"]
    else:
        cmd = [sys.executable, "-m", "kubesched.live", "--config", str(cfg), "--port", "0"]
    proxy.window = "before"
    proxy.counts.clear()
    env = {**os.environ, "PYTHONPATH": args.kubesched_src} if args.kubesched_src else None
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 120
        while api.bound(ns)[0] < args.bound_before:
            assert time.monotonic() < deadline and proc.poll() is None, f"{who} did not start binding"
            time.sleep(0.05)
        bound_at_start = api.bound(ns)[0]
        proxy.window, proxy.down = "outage", True
        t0 = time.monotonic()
        restart_apiserver(args.env, args.live_dir)
        time.sleep(max(0.0, args.outage - (time.monotonic() - t0)))
        proxy.window, proxy.down = "after", False
        t1 = time.monotonic()
        while api.bound(ns)[0] < args.pods:
            assert time.monotonic() - t1 < 300 and proc.poll() is None, f"{who} did not bind every pod"
            time.sleep(0.2)
        recovered = time.monotonic() - t1
        quiet = sum(proxy.counts.get("after", Counter()).values())
        while True:  # until the scheduler is quiet (its watches aside) for a second
            time.sleep(1.0)
            now = sum(v for k, v in proxy.counts.get("after", Counter()).items() if not k.startswith("WATCH"))
            if now == quiet:
                break
            quiet = now
        # What the scheduler sent up to now: not what it writes while it shuts down.
        counts = {window: Counter(c) for window, c in proxy.counts.items()}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
    keys = ("PATCH pods/status", "POST pods/binding", "POST events", "PATCH events")
    out: dict[str, Any] = {"scheduler": who, "pods": args.pods, "qps": args.qps, "outage_s": args.outage}
    out["pending_at_outage"] = args.pods - bound_at_start
    out["recovery_s"] = round(recovered, 1)
    for window in ("outage", "after"):
        c = counts.get(window, Counter())
        out[window] = {k: c.get(k, 0) for k in keys}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--live-dir", required=True, help="LIVE_DIR of the API server up.sh started (yours)")
    p.add_argument("--api-port", type=int, required=True)
    p.add_argument("--etcd-port", type=int, default=0)
    p.add_argument("--etcd-peer-port", type=int, default=0)
    p.add_argument("--proxy-port", type=int, default=18080)
    p.add_argument("--pods", type=int, default=1000)
    p.add_argument("--nodes", type=int, default=10)
    p.add_argument("--bound-before", type=int, default=50)
    p.add_argument("--outage", type=float, default=18.0)
    p.add_argument("--qps", type=float, default=50.0)
    p.add_argument("--burst", type=int, default=100)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--only", choices=("kube-scheduler", "kubesched"))
    p.add_argument("--kubesched-src", help="run `kubesched run` from this source tree (another version)")
    args = p.parse_args()
    args.env = {**os.environ, "LIVE_DIR": args.live_dir, "API_PORT": str(args.api_port)}
    if args.etcd_port:
        args.env.update(ETCD_PORT=str(args.etcd_port), ETCD_PEER_PORT=str(args.etcd_peer_port))
    pki = Path(args.live_dir, "pki")
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    base = f"https://127.0.0.1:{args.api_port}"
    api = Direct(base, ctx)
    proxy = start_proxy(base, ctx, args.proxy_port)
    tmp = Path(tempfile.mkdtemp(prefix="outage-compare-"))
    server = f"http://127.0.0.1:{args.proxy_port}"
    (tmp / "proxy.kubeconfig").write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: p, cluster: {{server: '{server}'}}}}]\nusers: [{{name: u, user: {{}}}}]\n"
        "contexts: [{name: c, context: {cluster: p, user: u}}]\ncurrent-context: c\n"
    )
    setup_nodes(api, args.nodes)
    stamp = int(time.time())
    for r in range(args.rounds):
        for who in ("kube-scheduler", "kubesched"):
            if args.only and who != args.only:
                continue
            print(json.dumps(run_one(args, who, f"{stamp}-{r}-{who}", api, proxy, tmp)), flush=True)


if __name__ == "__main__":
    main()
