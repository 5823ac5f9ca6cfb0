"""kubectl against `kubesched serve` (skipped when kubectl is not installed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from tests.live.conftest import Cluster, nodes_yaml, wait_until

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

POD = """apiVersion: v1
kind: Pod
metadata:
  name: hello
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
    resources:
      requests: {cpu: 500m}
"""


def _client_minor() -> int:
    out = subprocess.run(["kubectl", "version", "--client", "-o", "json"], capture_output=True, text=True, check=False)
    try:
        return int(json.loads(out.stdout)["clientVersion"]["minor"].rstrip("+"))
    except (ValueError, KeyError):
        return 0


def kubectl(cluster: Cluster, *args: str) -> str:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "HOME": str(cluster.tmp)}
    out = subprocess.run(["kubectl", *args], capture_output=True, text=True, env=env, timeout=30, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_kubectl_sees_where_pods_land(cluster: Cluster) -> None:
    cluster.start_serve(nodes_yaml(2), scheduler=True)
    nodes = kubectl(cluster, "get", "nodes")
    assert nodes.split()[:5] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert "node-0" in nodes and "Ready" in nodes
    (cluster.tmp / "pod.yaml").write_text(POD)
    # kubectl >= 1.24 validates on the server (our OpenAPI v3 stubs say so); older ones want the full OpenAPI v2
    # schema (protobuf), which serve does not have: Debian's kubernetes-client (1.20) then needs --validate=false.
    validate = [] if _client_minor() >= 24 else ["--validate=false"]
    assert kubectl(cluster, "create", *validate, "-f", str(cluster.tmp / "pod.yaml")).strip() == "pod/hello created"

    def node_column() -> str:
        lines = kubectl(cluster, "get", "pod", "hello", "-o", "wide").splitlines()
        header, row = lines[0].split(), lines[1].split()
        return row[header.index("NODE")] if row[header.index("NODE")] != "<none>" else ""

    node = wait_until(node_column, what="kubectl shows the node")
    assert node in ("node-0", "node-1")
    events = kubectl(cluster, "get", "events")
    assert f"Successfully assigned default/hello to {node}" in events
    assert kubectl(cluster, "get", "pod", "hello", "-o", "jsonpath={.spec.nodeName}") == node
    assert "deleted" in kubectl(cluster, "delete", "pod", "hello")
