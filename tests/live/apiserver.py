"""A real kube-apiserver v1.34.1 for the tests marked `apiserver`, and kube-scheduler v1.34.1 beside it.

The binaries and their scripts live outside the repository, in `../shared/k8s/`
(`up.sh` starts etcd + kube-apiserver on 127.0.0.1 with certificates, RBAC and
an audit log; `down.sh --wipe` stops them; README there); CI checks the
repository out next to `shared/`. Without them, or without etcd, kubectl,
openssl, curl or xz, the tests that use these fixtures are skipped and say
what is missing.

Fixtures (tests/live/conftest.py imports them, so every test under tests/live
can ask for them; a test that does is marked `apiserver` automatically):

- `apiserver` (session): one server for the whole run, started by up.sh in a
  temporary LIVE_DIR on free ports and stopped and wiped at the end.
- `kube`: the same server, emptied for one test: it starts with no nodes, no
  pods, none of the objects earlier tests created through `create_objects`,
  no leases or events of theirs, and the audit log counted from here.

The server is the real thing, with what a cluster without controller-manager
and kubelet implies, which the helpers make up for: `add_node` creates a node
and reports its capacity and Ready condition through `nodes/status` as a
kubelet would; `ensure_namespace` creates the `default` ServiceAccount the
ServiceAccount admission plugin requires before pods; `delete_pod` and
`finish_terminating` delete with grace 0, since nothing finishes a graceful
termination. Also: `mint_user` (a client certificate signed by the cluster CA,
to test RBAC), `service_account_token` (TokenRequest), `bindings` (every
`pods/binding` answer, from the audit log), `stop_apiserver`/`start_apiserver`
(etcd keeps the data), and `kube_scheduler` (the reference binary on the same
cluster with its own schedulerName, for side-by-side comparisons).

    @pytest.mark.apiserver
    def test_something(kube: KubeApiServer, tmp_path: Path) -> None:
        kube.add_node("node-0", cpu="2")
        kube.api.create("/api/v1/namespaces/default/pods", make_pod("p", scheduler="reference"))
        ref = kube.kube_scheduler(tmp_path, "reference")
        ...
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.live.client import STRATEGIC_MERGE_PATCH, Api, Proc, free_port, wait_until

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
K8S = SHARED / "k8s"
K8S_BIN = Path(os.environ.get("K8S_BIN") or Path.home() / ".cache" / "kubesched-k8s-v1.34.1")
TOOLS = ("etcd", "kubectl", "openssl", "curl", "xz")
REFERENCE = "reference"

# Kinds without a namespace; every other kind is created in its object's namespace (default: "default").
CLUSTER_SCOPED = {
    "Node",
    "Namespace",
    "PersistentVolume",
    "PriorityClass",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "VolumeAttachment",
    "DeviceClass",
    "ResourceSlice",
    "ClusterRole",
    "ClusterRoleBinding",
}


def missing() -> str | None:
    """Why the real API server cannot run here, or None."""
    if not (K8S / "up.sh").is_file():
        return f"no kube-apiserver scripts at {K8S.resolve()} (the checkout's parent directory holds shared/ in CI)"
    for binary in ("kube-apiserver", "kube-scheduler"):
        if not (K8S / "bin" / f"{binary}.xz").is_file() and not os.access(K8S_BIN / binary, os.X_OK):
            return f"no {binary} binary: neither {K8S.resolve() / 'bin' / binary}.xz nor {K8S_BIN / binary}"
    tools = [t for t in TOOLS if shutil.which(t) is None]
    if tools:
        hint = " (apt-get install -y etcd-server)" if "etcd" in tools else ""
        return f"{', '.join(tools)} not installed{hint}"
    return None


def api_path(doc: dict[str, Any]) -> str:
    """The collection an object is created in: /api/v1/... or /apis/GROUP/VERSION/..., namespaced or not."""
    kind = doc["kind"]
    lower = kind.lower()
    plural = lower[:-1] + "ies" if lower.endswith("y") else lower + ("es" if lower.endswith("s") else "s")
    version = doc.get("apiVersion", "v1")
    base = f"/api/{version}" if "/" not in version else f"/apis/{version}"
    if kind in CLUSTER_SCOPED:
        return f"{base}/{plural}"
    return f"{base}/namespaces/{doc.get('metadata', {}).get('namespace') or 'default'}/{plural}"


def _tls(ca: Path, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        ctx.load_cert_chain(str(cert), str(key))
    return ctx


@dataclass(frozen=True)
class Binding:
    """One pods/binding request as the audit log has it: the answer's code, who asked, with what."""

    code: int
    user: str
    user_agent: str


@dataclass
class KubeApiServer:
    """etcd + kube-apiserver from ../shared/k8s, in `live_dir`, on free ports."""

    live_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    created: list[tuple[str, str]] = field(default_factory=list)  # (object path, kind), by create_objects
    procs: list[Proc] = field(default_factory=list)
    audit_offset: int = 0

    @property
    def port(self) -> int:
        return int(self.env["API_PORT"])

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def pki(self) -> Path:
        return self.live_dir / "pki"

    @property
    def ca(self) -> Path:
        return self.pki / "ca.crt"

    @property
    def kubeconfig(self) -> Path:
        """The admin's kubeconfig (system:masters)."""
        return self.live_dir / "admin.kubeconfig"

    @property
    def audit_log(self) -> Path:
        return self.live_dir / "logs" / "audit.log"

    @functools.cached_property
    def admin_tls(self) -> ssl.SSLContext:
        """TLS as the admin: the cluster CA and the admin's client certificate."""
        return _tls(self.ca, self.pki / "admin.crt", self.pki / "admin.key")

    @property
    def api(self) -> Api:
        """The admin's client."""
        return Api(self.url, self.admin_tls)

    # ------------------------------------------------------------ processes

    def _script(self, name: str, *args: str) -> str:
        out = subprocess.run(
            ["bash", str(K8S / name), *args], env=self.env, capture_output=True, text=True, timeout=180, check=False
        )
        if out.returncode != 0:
            raise RuntimeError(f"{name} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
        return out.stdout

    def up(self) -> None:
        """etcd and kube-apiserver, on fresh free ports (tried again once if one was taken meanwhile)."""
        for attempt in (1, 2):
            ports = {"ETCD_PORT": free_port(), "ETCD_PEER_PORT": free_port(), "API_PORT": free_port()}
            self.env = {**os.environ, "LIVE_DIR": str(self.live_dir), **{k: str(v) for k, v in ports.items()}}
            self.env["K8S_BIN"] = str(K8S_BIN)
            try:
                self._script("up.sh")
                break
            except RuntimeError:
                self.down(wipe=True)
                if attempt == 2:
                    raise
        self.ensure_namespace("default")

    def down(self, wipe: bool = True) -> None:
        self._script("down.sh", *(["--wipe"] if wipe else []))

    def stop_apiserver(self, grace: float = 3.0) -> None:
        """Stop kube-apiserver alone; etcd keeps running with the data. SIGTERM, then SIGKILL after `grace` s:
        it stops listening at once, but waits up to a minute for open watches to end, and we do not."""
        pidfile = self.live_dir / "pids" / "apiserver.pid"
        pid = int(pidfile.read_text())
        os.kill(pid, signal.SIGTERM)
        with contextlib.suppress(AssertionError):
            wait_until(lambda: not _alive(pid), timeout=grace, interval=0.1)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: not _alive(pid), timeout=10, interval=0.1, what="kube-apiserver killed")
        pidfile.unlink()

    def start_apiserver(self) -> None:
        """up.sh again: it leaves etcd alone and starts kube-apiserver on the same port, with the same certificates."""
        self._script("up.sh")

    # ------------------------------------------------------------ objects

    def add_node(
        self,
        name: str,
        cpu: str = "4",
        memory: str = "16Gi",
        pods: str = "110",
        labels: dict[str, str] | None = None,
        spec: dict[str, Any] | None = None,
    ) -> None:
        """A node, Ready with this capacity (allocatable the same), as its kubelet would report it."""
        status = {"capacity": {"cpu": cpu, "memory": memory, "pods": pods}}
        self._create_node({"metadata": {"name": name, "labels": labels or {}}, "spec": spec or {}, "status": status})

    def _create_node(self, doc: dict[str, Any]) -> None:
        status = dict(doc.get("status") or {})
        body = {"apiVersion": "v1", "kind": "Node", "metadata": doc["metadata"], "spec": doc.get("spec") or {}}
        self.api.create("/api/v1/nodes", body)
        status.setdefault("allocatable", status.get("capacity", {}))
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is ready"}
        conditions = [c for c in status.get("conditions", []) if c.get("type") != "Ready"]
        status["conditions"] = [*conditions, ready]
        self.api.patch(f"/api/v1/nodes/{doc['metadata']['name']}/status", {"status": status}, STRATEGIC_MERGE_PATCH)

    def create_objects(self, text: str) -> None:
        """Create the YAML documents' objects (deleted again when the next test starts); nodes are made Ready."""
        for doc in yaml.safe_load_all(text):
            if not doc:
                continue
            if doc["kind"] == "Node":
                self._create_node(doc)
                continue
            path = api_path(doc)
            out = self.api.create(path, {k: v for k, v in doc.items() if k != "status"})
            self.created.append((f"{path}/{out['metadata']['name']}", doc["kind"]))
            if doc.get("status"):
                self.api.patch(f"{path}/{out['metadata']['name']}/status", {"status": doc["status"]})

    def ensure_namespace(self, name: str) -> None:
        """A namespace pods can be created in: it exists and has its default ServiceAccount."""
        for path, body in (
            ("/api/v1/namespaces", {"metadata": {"name": name}}),
            (f"/api/v1/namespaces/{name}/serviceaccounts", {"metadata": {"name": "default"}}),
        ):
            code, out = self.api.call("POST", path, body)
            assert code in (201, 409), (path, code, out)

    def apply(self, docs: list[dict[str, Any]]) -> None:
        """Create these objects, or replace them where they exist (kept across tests: RBAC, namespaces)."""
        for doc in docs:
            path = api_path(doc)
            code, out = self.api.call("POST", path, doc)
            if code == 409:
                cur = self.api.get(f"{path}/{doc['metadata']['name']}")
                body = {**doc, "metadata": {**doc["metadata"], "resourceVersion": cur["metadata"]["resourceVersion"]}}
                code, out = self.api.call("PUT", f"{path}/{doc['metadata']['name']}", body)
            assert code in (200, 201), (path, code, out)

    def delete_pod(self, name: str, ns: str = "default") -> None:
        """Delete at once (grace 0): there is no kubelet to finish a graceful termination."""
        code, out = self.api.call("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}", {"gracePeriodSeconds": 0})
        assert code in (200, 404), (name, code, out)

    def finish_terminating(self, ns: str = "default") -> list[str]:
        """What a kubelet does once containers stopped: remove the pods marked for deletion. Their names."""
        done = [n for n, p in self.api.pods(ns).items() if p["metadata"].get("deletionTimestamp")]
        for name in done:
            self.delete_pod(name, ns)
        return done

    def reset(self) -> None:
        """Back to an empty cluster: what earlier tests left behind is deleted."""
        if not (self.live_dir / "pids" / "apiserver.pid").exists():
            self.start_apiserver()  # a test stopped it and failed before starting it again
        for p in reversed(self.procs):
            if p.alive():
                p.popen.kill()
                p.popen.wait(10)
        self.procs.clear()
        for pod in self.api.get("/api/v1/pods")["items"]:
            self.delete_pod(pod["metadata"]["name"], pod["metadata"]["namespace"])
        for path, _ in reversed(self.created):
            code, out = self.api.call("DELETE", path, {"gracePeriodSeconds": 0})
            assert code in (200, 404), (path, code, out)
        self.created.clear()
        code, out = self.api.call("DELETE", "/api/v1/nodes")
        assert code == 200, out
        for ns in (n["metadata"]["name"] for n in self.api.get("/api/v1/namespaces")["items"]):
            self.api.call("DELETE", f"/api/v1/namespaces/{ns}/events")
            for lease in self.api.get(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases")["items"]:
                name = lease["metadata"]["name"]
                if not name.startswith("apiserver-"):  # the API servers' own identity leases
                    self.api.call("DELETE", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}")
        self.audit_offset = self.audit_log.stat().st_size if self.audit_log.exists() else 0

    # ------------------------------------------------------------ audit log

    def bindings(self) -> dict[str, list[Binding]]:
        """Every pods/binding answer since this test started, per pod (namespace/name), in order."""
        out: dict[str, list[Binding]] = {}
        with open(self.audit_log, "rb") as f:
            f.seek(self.audit_offset)
            for line in f:
                ev = json.loads(line)
                ref = ev.get("objectRef") or {}
                if ev.get("verb") != "create" or ref.get("subresource") != "binding":
                    continue
                b = Binding(int(ev["responseStatus"]["code"]), ev["user"]["username"], ev.get("userAgent", ""))
                out.setdefault(f"{ref['namespace']}/{ref['name']}", []).append(b)
        return out

    def bound_counts(self) -> dict[str, int]:
        """Successful bindings (201) per pod since this test started."""
        return {k: sum(1 for b in v if b.code == 201) for k, v in self.bindings().items()}

    # ------------------------------------------------------------ identities

    def mint_user(self, name: str, groups: tuple[str, ...] = (), where: Path | None = None) -> Path:
        """A kubeconfig for user `name` (client certificate signed by the cluster CA), with no rights of its own."""
        d = where or self.live_dir / "users"
        d.mkdir(parents=True, exist_ok=True)
        key, csr, crt, ext = (d / f"{name}.{x}" for x in ("key", "csr", "crt", "ext"))
        subject = "".join(f"/O={g}" for g in groups) + f"/CN={name}"
        ext.write_text("extendedKeyUsage=clientAuth\n")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", subject)
        ca = ("-CA", self.ca, "-CAkey", self.pki / "ca.key", "-CAcreateserial")
        _openssl("x509", "-req", "-in", csr, *ca, "-out", crt, "-days", "1", "-extfile", ext)
        path = d / f"{name}.kubeconfig"
        self.write_kubeconfig(path, {"client-certificate": str(crt), "client-key": str(key)}, name)
        return path

    def user_api(self, kubeconfig: Path) -> Api:
        """The client of a user minted by `mint_user`."""
        user = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]
        return Api(self.url, _tls(self.ca, Path(user["client-certificate"]), Path(user["client-key"])))

    def write_kubeconfig(self, path: Path, user: dict[str, str], name: str = "user", server: str = "") -> Path:
        cluster: dict[str, str] = {"server": server or self.url}
        if cluster["server"].startswith("https"):
            cluster["certificate-authority"] = str(self.ca)
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "test", "cluster": cluster}],
            "users": [{"name": name, "user": user}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": name}}],
            "current-context": "test",
        }
        path.write_text(yaml.safe_dump(doc))
        return path

    def service_account_token(self, name: str, ns: str, seconds: int = 3600) -> str:
        """A token for the ServiceAccount from the TokenRequest API (what the kubelet mounts in a pod)."""
        spec = {"expirationSeconds": seconds}
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        out = self.api.create(f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token", body)
        return str(out["status"]["token"])

    # ------------------------------------------------------------ the reference scheduler

    def kube_scheduler(
        self,
        tmp: Path,
        scheduler_name: str = REFERENCE,
        *,
        kubeconfig: Path | None = None,
        config: dict[str, Any] | None = None,
    ) -> Proc:
        """kube-scheduler v1.34.1 on this cluster with one profile named `scheduler_name`, ready; stopped at reset."""
        cfg = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(kubeconfig or self.kubeconfig), "qps": 5000, "burst": 5000},
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": scheduler_name}],
            **(config or {}),
        }
        path = tmp / f"{scheduler_name}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        port = free_port()
        log = tmp / f"{scheduler_name}.log"
        args = [str(K8S_BIN / "kube-scheduler"), "--config", str(path), "--bind-address", "127.0.0.1"]
        args += ["--secure-port", str(port), "--cert-dir", str(tmp / f"{scheduler_name}-certs"), "-v", "2"]
        with open(log, "w") as logf:
            p = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT, text=True)
        proc = Proc(p, log, port)
        self.procs.append(proc)
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE

        def ready() -> bool:
            assert proc.alive(), proc.text()[-3000:]
            url = f"https://127.0.0.1:{port}/readyz"
            with (
                contextlib.suppress(urllib.error.URLError, OSError),
                urllib.request.urlopen(url, timeout=1, context=insecure) as r,
            ):
                return bool(r.status == 200)
            return False

        wait_until(ready, timeout=30, interval=0.1, what="kube-scheduler /readyz")
        return proc


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to reap it is not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture(scope="session")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiServer]:
    """etcd + kube-apiserver v1.34.1 for the whole session (skipped, saying why, where they cannot run)."""
    reason = missing()
    if reason:
        pytest.skip(f"real kube-apiserver unavailable: {reason}")
    server = KubeApiServer(tmp_path_factory.mktemp("apiserver"))
    try:
        server.up()
        yield server
    finally:
        for p in server.procs:
            if p.alive():
                p.popen.kill()
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired, OSError, ValueError, AssertionError):
            server.stop_apiserver(grace=5)  # quicker than down.sh's 30 s, and the data goes anyway
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            server.down(wipe=True)


@pytest.fixture
def kube(apiserver: KubeApiServer) -> Iterator[KubeApiServer]:
    """The session's API server, emptied for this test (and again after it, so that nothing it left runs on)."""
    apiserver.reset()
    yield apiserver
    for p in apiserver.procs:
        if p.alive():
            p.popen.kill()
            p.popen.wait(10)
    apiserver.procs.clear()
