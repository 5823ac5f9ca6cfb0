"""kubectl against `kubesched serve` (skipped when kubectl is not installed)."""

from __future__ import annotations

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
    # kubectl >= 1.24 validates on the server (our OpenAPI v3 stubs say so); older ones (Debian's 1.20) read the
    # OpenAPI v2 document as protobuf, and serve's holds no schema to validate against: the server validates.
    assert kubectl(cluster, "create", "-f", str(cluster.tmp / "pod.yaml")).strip() == "pod/hello created"

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


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        resources:
          requests: {cpu: 100m}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 2
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: postgres
        image: postgres:17
        resources:
          requests: {cpu: 100m}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - name: agent
        image: busybox:1.36
        resources:
          requests: {cpu: 50m}
"""


def _bound(cluster: Cluster, selector: str) -> dict[str, str]:
    """Pod name -> node of the pods the label selector picks (unbound ones with "")."""
    out = kubectl(
        cluster,
        "get",
        "pods",
        "-l",
        selector,
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName}{'\\n'}{end}",
    )
    return {line.split()[0]: [*line.split(), ""][1] for line in out.splitlines() if line.strip()}


def test_workloads_apply_scale_and_delete_as_in_a_cluster(cluster: Cluster) -> None:
    cluster.start_serve(nodes_yaml(2), scheduler=True)
    (cluster.tmp / "workloads.yaml").write_text(DEPLOYMENT)
    applied = kubectl(cluster, "apply", "-f", str(cluster.tmp / "workloads.yaml")).split("\n")
    assert applied[:3] == ["deployment.apps/web created", "statefulset.apps/db created", "daemonset.apps/agent created"]

    def placed(selector: str, n: int) -> dict[str, str] | None:
        pods = _bound(cluster, selector)
        return pods if len(pods) == n and all(pods.values()) else None

    web = wait_until(lambda: placed("app=web", 3), what="the Deployment's 3 pods bound")
    # Applied again: nothing changed (kubectl patches against its last-applied annotation).
    assert "deployment.apps/web unchanged" in kubectl(cluster, "apply", "-f", str(cluster.tmp / "workloads.yaml"))
    rs = kubectl(cluster, "get", "rs", "-o", "jsonpath={.items[0].metadata.name}")
    assert rs.startswith("web-") and all(name.startswith(f"{rs}-") for name in web)
    # The StatefulSet's pods by ordinal (web-1 once web-0 ran); one agent on each node.
    assert sorted(wait_until(lambda: placed("app=db", 2), what="db-0 and db-1")) == ["db-0", "db-1"]
    agents = wait_until(lambda: placed("app=agent", 2), what="an agent per node")
    assert sorted(agents.values()) == ["node-0", "node-1"]

    # The workloads' columns, as kube-apiserver prints them (no pod is ready: there is no kubelet).
    deploy = kubectl(cluster, "get", "deploy", "web").splitlines()
    assert deploy[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert deploy[1].split()[:4] == ["web", "0/3", "3", "0"]
    assert kubectl(cluster, "get", "sts", "db").splitlines()[1].split()[:2] == ["db", "0/2"]
    assert kubectl(cluster, "scale", "deploy/web", "--replicas=5").strip() == "deployment.apps/web scaled"
    wait_until(lambda: placed("app=web", 5), what="5 pods after scaling up")
    kubectl(cluster, "scale", "deploy/web", "--replicas=1")
    wait_until(lambda: placed("app=web", 1), what="1 pod after scaling down")
    kubectl(cluster, "delete", "deploy", "web")
    wait_until(
        lambda: not _bound(cluster, "app=web") and not kubectl(cluster, "get", "rs", "-o", "name"), what="all gone"
    )
