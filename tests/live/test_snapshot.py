"""`kubesched snapshot` against `kubesched serve`: the captured scenario is trimmed, and simulating it places
the pending pods where `kubesched run` places them in the served cluster."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

# Importing the live fixtures skips this module without the 'live' extra (aiohttp, orjson, kubernetes).
from tests.live.conftest import (
    SCHEDULER,
    Cluster,
    free_port,
    sched_config,
    wait_ready,
    wait_until,
)

from kubesched.cli import main
from kubesched.config import load_config_mapping
from kubesched.scenario import parse_scenario
from kubesched.simulate.runner import Simulation

CLUSTER = f"""
apiVersion: v1
kind: Namespace
metadata: {{name: team, labels: {{team: 'yes'}}}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: low}}
value: 100
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {{name: local}}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata: {{name: pv-1}}
spec:
  capacity: {{storage: 10Gi}}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  local: {{path: /data}}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{{key: kubernetes.io/hostname, operator: In, values: [node-1]}}]
status: {{phase: Available}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data, namespace: team}}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local
  resources: {{requests: {{storage: 5Gi}}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: batch}}
spec: {{maxUnavailable: 0, selector: {{matchLabels: {{app: batch}}}}}}
---
apiVersion: v1
kind: Node
metadata: {{name: node-0, labels: {{kubernetes.io/hostname: node-0, zone: a}}}}
status:
  capacity: {{cpu: '4', memory: 16Gi, pods: '110'}}
  conditions: [{{type: Ready, status: 'True'}}]
---
apiVersion: v1
kind: Node
metadata: {{name: node-1, labels: {{kubernetes.io/hostname: node-1, zone: b}}}}
status:
  capacity: {{cpu: '6', memory: 16Gi, pods: '110'}}
  conditions: [{{type: Ready, status: 'True'}}]
---
apiVersion: v1
kind: Node
metadata: {{name: node-2, labels: {{kubernetes.io/hostname: node-2, zone: b}}}}
spec:
  taints: [{{key: dedicated, value: gpu, effect: NoSchedule}}]
status:
  capacity: {{cpu: '8', memory: 32Gi, pods: '110'}}
  conditions: [{{type: Ready, status: 'True'}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: batch-0, labels: {{app: batch}}}}
spec:
  schedulerName: {SCHEDULER}
  nodeName: node-0
  priorityClassName: low
  containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: '2', memory: 1Gi}}}}}}]
status: {{phase: Running, startTime: '2025-01-01T00:00:00Z'}}
---
apiVersion: v1
kind: Pod
metadata: {{name: done}}
spec:
  schedulerName: {SCHEDULER}
  nodeName: node-1
  containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: '5'}}}}}}]
status: {{phase: Succeeded}}
"""

PENDING = [
    ("p1", "default", {"cpu": "1500m"}, {}),
    ("p2", "team", {"cpu": "3"}, {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}),
    ("p3", "default", {"cpu": "2"}, {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}),
    ("p4", "default", {"cpu": "1"}, {"nodeSelector": {"zone": "a"}}),
    ("p5", "default", {"cpu": "16"}, {}),
]


def _pending_yaml() -> str:
    docs = []
    for name, ns, req, extra in PENDING:
        spec: dict[str, Any] = {
            "schedulerName": SCHEDULER,
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": req}}],
            **extra,
        }
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec})
    return yaml.safe_dump_all(docs, sort_keys=False)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path)
    try:
        c.start_serve(CLUSTER + "---\n" + _pending_yaml())
        yield c
    finally:
        c.close()


def test_snapshot_then_simulate_places_pods_as_the_served_cluster(
    served: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    assert served.kubeconfig is not None
    code = main(["snapshot", "--kubeconfig", str(served.kubeconfig)])
    text, err = capsys.readouterr()
    assert code == 0, err
    assert f"from {served.url}" in err

    # Trimmed of what the API server adds and the scheduler never reads.
    for noise in ("managedFields", "resourceVersion", "uid:", "creationTimestamp", "lastTransitionTime"):
        assert noise not in text
    docs = [d for d in yaml.safe_load_all(text) if d]
    assert docs[0]["kind"] == "Scenario" and docs[0]["mode"] == "batch"
    kinds: dict[str, list[str]] = {}
    for d in docs[1:]:
        m = d["metadata"]
        kinds.setdefault(d["kind"], []).append(f"{m['namespace']}/{m['name']}" if "namespace" in m else m["name"])
    assert kinds["Node"] == ["node-0", "node-1", "node-2"]
    # The finished pod is left out; bound pods come first, then the pending ones in the server's list order.
    assert kinds["Pod"] == ["default/batch-0", "default/p1", "default/p3", "default/p4", "default/p5", "team/p2"]
    assert kinds["PersistentVolume"] == ["pv-1"] and kinds["PersistentVolumeClaim"] == ["team/data"]
    assert kinds["StorageClass"] == ["local"] and kinds["PriorityClass"] == ["low"]
    assert kinds["PodDisruptionBudget"] == ["default/batch"]
    assert "team" in kinds["Namespace"]
    node2 = next(d for d in docs if d["kind"] == "Node" and d["metadata"]["name"] == "node-2")
    assert node2["spec"] == {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
    assert node2["status"]["allocatable"] == {"cpu": "8", "memory": "32Gi", "pods": "110"}
    assert node2["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    batch = next(d for d in docs if d["kind"] == "Pod" and d["metadata"]["name"] == "batch-0")
    assert batch["spec"]["priority"] == 100 and batch["spec"]["nodeName"] == "node-0"
    assert batch["status"] == {"phase": "Running", "startTime": "2025-01-01T00:00:00Z"}

    # Simulate the snapshot ...
    config = load_config_mapping(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": SCHEDULER}],
        },
        "test",
    )
    simulated = {o.key: o for o in Simulation(parse_scenario(text, "snapshot.yaml"), config).run().results}
    assert {k: o.node for k, o in simulated.items()} == {
        "default/p1": "node-1",
        "team/p2": "node-1",
        "default/p3": "node-2",
        "default/p4": "node-0",
        "default/p5": None,
    }

    # ... and let `kubesched run` schedule the served cluster itself.
    run = served.start_run(sched_config(leader_elect=False))
    wait_ready(run)
    api = served.api

    def settled() -> dict[str, Any] | None:
        pods = {f"{ns}/{name}": api.pod(name, ns) for name, ns, _, _ in PENDING}
        p5 = pods["default/p5"]
        conds = (p5 or {}).get("status", {}).get("conditions") or []
        if all(p and p["spec"].get("nodeName") for k, p in pods.items() if k != "default/p5") and conds:
            return pods
        return None

    live = wait_until(settled, timeout=20, what="the served cluster's pods scheduled")
    assert {k: p["spec"].get("nodeName") for k, p in live.items()} == {k: o.node for k, o in simulated.items()}
    cond = next(c for c in live["default/p5"]["status"]["conditions"] if c["type"] == "PodScheduled")
    assert cond["message"] == simulated["default/p5"].message


def test_unreachable_server_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kubesched.live.kubeconfig import write_kubeconfig

    kc = tmp_path / "kubeconfig"
    write_kubeconfig(str(kc), f"http://127.0.0.1:{free_port()}")
    code = main(["snapshot", "--kubeconfig", str(kc)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("error: http://127.0.0.1:") and "cannot reach the API server" in err
    assert "Traceback" not in err


def test_missing_kubeconfig(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["snapshot", "--kubeconfig", str(tmp_path / "nope")])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith(f"error: {tmp_path / 'nope'}: ") and "Traceback" not in err
