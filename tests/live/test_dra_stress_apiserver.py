"""No device twice: the DRA stress run of test_dra_stress.py against a real kube-apiserver v1.34.1.

The API server is started for this module with /work/shared/k8s/up.sh (its own
directory and ports) and stopped with down.sh. It runs no controllers, so the
test plays the resourceclaim controller's part: it creates each pod's claim
(the pod names it in `resourceClaimName`) and, when it deletes a pod, releases
the claim as the controller would (reservation and allocation cleared, the
delete-protection finalizer removed) and deletes it. Nodes are created Ready,
DeviceClass and ResourceSlices by hand, as a driver would publish them.

`apiserver` is a small local fixture; it stands in for the shared real-API-server
fixtures (marker `apiserver`) until they exist.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.live.conftest import ROOT, Api, Cluster, free_port, sched_config, wait_ready
from tests.live.dra_stress import CLAIMS, NS, PODS, Ops, claim_spec, device_class, gpu_pod, node_slice, stress

K8S = Path(os.environ.get("KUBESCHED_K8S_DIR", ROOT.parent / "shared" / "k8s"))
GPU_NODES = 3
GPUS_PER_NODE = 2
ROUNDS = 3
PODS_PER_ROUND = 10
MERGE = "application/merge-patch+json"


class TlsApi(Api):
    """The tests' tiny client, over HTTPS with the admin's client certificate."""

    def __init__(self, url: str, context: ssl.SSLContext) -> None:
        super().__init__(url)
        self.context = context

    def call(self, method: str, path: str, body: Any = None, ctype: str = "application/json") -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(req, timeout=10, context=self.context) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as err:
            raw = err.read()
            return err.code, json.loads(raw) if raw else None

    def ok(self, method: str, path: str, body: Any = None, ctype: str = "application/json") -> Any:
        code, out = self.call(method, path, body, ctype)
        assert code in (200, 201), (method, path, code, out)
        return out


@dataclass
class ApiServer:
    """etcd + kube-apiserver of this module's own, started and stopped by the shared scripts."""

    live_dir: Path
    env: dict[str, str]

    @property
    def kubeconfig(self) -> Path:
        return self.live_dir / "admin.kubeconfig"

    def api(self) -> TlsApi:
        pki = self.live_dir / "pki"
        ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        return TlsApi(f"https://127.0.0.1:{self.env['API_PORT']}", ctx)


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    if not (K8S / "up.sh").is_file():
        pytest.skip(f"no real API server here: {K8S}/up.sh is missing")
    if shutil.which("etcd") is None:
        pytest.skip("no etcd on PATH (apt-get install etcd-server): kube-apiserver cannot start")
    live_dir = tmp_path_factory.mktemp("apiserver")
    env = {
        **os.environ,
        "LIVE_DIR": str(live_dir),
        "ETCD_PORT": str(free_port()),
        "ETCD_PEER_PORT": str(free_port()),
        "API_PORT": str(free_port()),
    }
    up = subprocess.run([str(K8S / "up.sh")], env=env, capture_output=True, text=True, timeout=180)
    server = ApiServer(live_dir, env)
    try:
        assert up.returncode == 0, f"up.sh failed:\n{up.stdout}\n{up.stderr}"
        yield server
    finally:
        subprocess.run([str(K8S / "down.sh"), "--wipe"], env=env, capture_output=True, timeout=120, check=False)


def _nodes(api: TlsApi) -> None:
    """GPU nodes and one without devices, Ready through nodes/status (there is no kubelet)."""
    resources = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    for i in range(GPU_NODES + 1):
        name = f"node-{i}"
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        }
        api.ok("POST", "/api/v1/nodes", node)
        status = {"capacity": resources, "allocatable": resources, "conditions": [{"type": "Ready", "status": "True"}]}
        api.ok("PATCH", f"/api/v1/nodes/{name}/status", {"status": status}, MERGE)


def _ops(api: TlsApi) -> Ops:
    def create(name: str) -> None:
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": f"{name}-gpu"}}
        api.ok("POST", CLAIMS, {**claim, "spec": claim_spec()})
        api.ok("POST", PODS, gpu_pod(name, {"resourceClaimName": f"{name}-gpu"}))

    def delete(name: str) -> None:
        api.ok("DELETE", f"{PODS}/{name}", {"gracePeriodSeconds": 0})
        # The resourceclaim controller's part: the claim has no consumer left, so it is deallocated (the write
        # that requeues pods waiting for devices), its finalizer goes, and the claim with it.
        claim = f"{CLAIMS}/{name}-gpu"
        api.ok("PATCH", f"{claim}/status", {"status": {"reservedFor": None, "allocation": None}}, MERGE)
        api.ok("PATCH", claim, {"metadata": {"finalizers": None}}, MERGE)
        api.ok("DELETE", claim)

    return Ops(create, delete)


def test_no_device_is_allocated_twice_when_many_claims_are_scheduled_at_once(
    apiserver: ApiServer, tmp_path: Path
) -> None:
    api = apiserver.api()
    # No controller-manager: the ServiceAccount admission wants the namespace's default ServiceAccount.
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    assert api.call("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", sa)[0] in (201, 409)
    _nodes(api)
    api.ok("POST", "/apis/resource.k8s.io/v1/deviceclasses", device_class())
    for i in range(GPU_NODES):
        api.ok("POST", "/apis/resource.k8s.io/v1/resourceslices", node_slice(f"node-{i}", GPUS_PER_NODE))
    cluster = Cluster(tmp_path, kubeconfig=apiserver.kubeconfig)
    try:
        run = cluster.start_run(sched_config())
        wait_ready(run, timeout=60)
        tally = stress(api, _ops(api), GPU_NODES * GPUS_PER_NODE, ROUNDS, PODS_PER_ROUND)
        assert tally.allocations == ROUNDS * PODS_PER_ROUND, "every claim allocated once, each seen by a check"
        assert run.stop() == 0
    finally:
        cluster.close()
