"""`kubesched run` against `kubesched serve`: binding, failures, preemption, metrics."""

from __future__ import annotations

import json
import re
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from tests.live.conftest import (
    BOTH,
    SCHEDULER,
    Cluster,
    bound_nodes,
    make_pod,
    nodes_yaml,
    priority_classes,
    sched_config,
    wait_ready,
    wait_until,
)


def embedded_message(nodes: str, pod: dict) -> str:
    """What the embedded cluster's scheduler says about the pod: live mode must say the same."""
    import yaml

    from kubesched.scenario import parse_scenario
    from kubesched.simulate.runner import Simulation

    profile = {
        "kind": "Scenario",
        "config": {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": SCHEDULER}],
        },
    }
    text = yaml.safe_dump(profile) + "---\n" + nodes + "---\n" + yaml.safe_dump(pod)
    out = Simulation(parse_scenario(text, "test")).run()
    return str(out.results[0].message)


MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@BOTH
def test_pods_scheduled_end_to_end(cluster: Cluster) -> None:
    api = cluster.start(nodes_yaml(3, cpu="4"))
    run = cluster.start_run(sched_config())
    wait_ready(run)
    for i in range(30):
        api.create("/api/v1/namespaces/default/pods", make_pod(f"p{i}", cpu="300m"))
    api.create("/api/v1/namespaces/default/pods", make_pod("other", scheduler="default-scheduler"))
    wait_until(lambda: all(n for k, n in bound_nodes(api).items() if k != "other"), what="all pods bound")
    nodes = bound_nodes(api)
    assert nodes["other"] == "", "a pod for another scheduler must be left alone"
    per_node: dict[str, int] = {}
    for k, n in nodes.items():
        if k != "other":
            per_node[n] = per_node.get(n, 0) + 1
    assert sorted(per_node) == ["node-0", "node-1", "node-2"]
    assert all(c * 300 <= 4000 for c in per_node.values())
    pod = api.pod("p0")
    cond = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert cond["status"] == "True"
    # One Scheduled event per pod, written the way upstream's recorder writes it.
    events = wait_until(
        lambda: (
            [e for e in api.events() if e["reason"] == "Scheduled"]
            if len([e for e in api.events() if e["reason"] == "Scheduled"]) == 30
            else None
        ),
        what="30 Scheduled events",
    )
    ev = next(e for e in events if e["regarding"]["name"] == "p0")
    assert ev["note"] == f"Successfully assigned default/p0 to {nodes['p0']}"
    assert ev["action"] == "Binding" and ev["type"] == "Normal"
    assert ev["reportingController"] == SCHEDULER
    assert ev["reportingInstance"].startswith(f"{SCHEDULER}-")
    assert MICRO_TIME.match(ev["eventTime"]), ev["eventTime"]
    assert ev["regarding"]["kind"] == "Pod" and ev["regarding"]["uid"] == pod["metadata"]["uid"]
    assert ev["metadata"]["name"].startswith("p0.")
    binds = wait_until(lambda: b if len(b := cluster.binds()) == 30 else None, what="30 bindings")
    assert set(binds.values()) == {1}, binds
    metrics = run.metrics()
    assert f'scheduler_schedule_attempts_total{{profile="{SCHEDULER}",result="scheduled"}} 30.0' in metrics
    assert 'leader_election_master_status{name="kubesched"} 1' in metrics
    assert "scheduler_pending_pods" in metrics
    assert run.stop() == 0
    lease = api.lease()
    assert lease["spec"]["holderIdentity"] == "", "the lease is released on SIGTERM"
    # At the default verbosity (0), as kube-scheduler, no line per pod.
    assert "Successfully bound pod to node" not in run.text()


def test_unschedulable_condition_and_event(cluster: Cluster) -> None:
    api = cluster.start_serve(nodes_yaml(2, cpu="2"))
    run = cluster.start_run(sched_config())
    wait_ready(run)
    api.create("/api/v1/namespaces/default/pods", make_pod("big", cpu="3"))
    msg = embedded_message(nodes_yaml(2, cpu="2"), make_pod("big", cpu="3"))
    assert msg.startswith("0/2 nodes are available: 2 Insufficient cpu.")

    def condition() -> dict | None:
        pod = api.pod("big")
        return next((c for c in pod["status"].get("conditions", []) if c["type"] == "PodScheduled"), None)

    cond = wait_until(condition, what="PodScheduled condition")
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
    assert cond["message"] == msg
    # PodObservedGenerationTracking (beta, on in 1.34): the generation of the pod the scheduler looked at.
    assert cond["observedGeneration"] == api.pod("big")["metadata"]["generation"] == 1
    ev = wait_until(lambda: next((e for e in api.events() if e["reason"] == "FailedScheduling"), None))
    assert ev["type"] == "Warning" and ev["action"] == "Scheduling" and ev["note"] == msg
    # A node that fits arrives: the pod is scheduled (the queue moves it on the Node add event).
    api.create(
        "/api/v1/nodes",
        {"metadata": {"name": "large"}, "status": {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"}}},
    )
    wait_until(lambda: bound_nodes(api)["big"] == "large", what="bound to the new node")
    assert run.stop() == 0


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_verbosity_2_logs_binds_and_failures_as_kube_scheduler(cluster: Cluster, fmt: str) -> None:
    api = cluster.start_serve(nodes_yaml(1, cpu="2"))
    run = cluster.start_run(sched_config(), "run", "-v", "2", "--logging-format", fmt)
    wait_ready(run)
    api.create("/api/v1/namespaces/default/pods", make_pod("fits", cpu="1"))
    api.create("/api/v1/namespaces/default/pods", make_pod("big", cpu="3"))
    wait_until(lambda: bound_nodes(api)["fits"], what="fits bound")
    wait_until(lambda: "Unable to schedule pod; no fit; waiting" in run.text(), what="the failure logged")
    assert run.stop() == 0
    msg = embedded_message(nodes_yaml(1, cpu="2"), make_pod("big", cpu="3"))
    if fmt == "text":
        lines = run.text().splitlines()
        bound = next(line for line in lines if "Successfully bound pod to node" in line)
        assert bound.startswith("I")
        assert bound.endswith(
            '"Successfully bound pod to node" pod="default/fits" node="node-0" evaluatedNodes=1 feasibleNodes=1'
        )
        failed = next(line for line in lines if "no fit" in line)
        assert failed.endswith(f'"Unable to schedule pod; no fit; waiting" pod="default/big" err={json.dumps(msg)}')
        assert not any("Attempting to schedule pod" in line for line in lines), "V(3): not shown at -v 2"
        return
    docs = [json.loads(line) for line in run.text().splitlines() if line.startswith("{")]
    bound = next(d for d in docs if d["msg"] == "Successfully bound pod to node")
    assert bound["v"] == 2 and bound["pod"] == {"name": "fits", "namespace": "default"}
    assert (bound["node"], bound["evaluatedNodes"], bound["feasibleNodes"]) == ("node-0", 1, 1)
    failed = next(d for d in docs if d["msg"] == "Unable to schedule pod; no fit; waiting")
    assert failed["v"] == 2 and failed["err"] == msg


@BOTH
def test_preemption_deletes_victims_and_binds_preemptor(cluster: Cluster) -> None:
    api = cluster.start(nodes_yaml(1, cpu="2") + priority_classes(low=0, high=1000))
    run = cluster.start_run(sched_config())
    wait_ready(run)
    for i in range(2):
        api.create("/api/v1/namespaces/default/pods", make_pod(f"low{i}", cpu="1", priority_class="low"))
    wait_until(lambda: all(bound_nodes(api).values()), what="low-priority pods bound")
    rv = api.get("/api/v1/namespaces/default/pods")["metadata"]["resourceVersion"]
    api.create("/api/v1/namespaces/default/pods", make_pod("high", cpu="2", priority_class="high"))

    def victims_going() -> bool:
        pods = api.pods()
        return all(v not in pods or pods[v]["metadata"].get("deletionTimestamp") for v in ("low0", "low1"))

    wait_until(victims_going, timeout=20, what="victims deleted")
    if cluster.server is not None:
        # A real cluster: the victims terminate gracefully (until their kubelet is done), and meanwhile the
        # preemptor waits, nominated to their node.
        high = wait_until(lambda: (p := api.pod("high"))["status"].get("nominatedNodeName") and p, what="nominated")
        assert high["status"]["nominatedNodeName"] == "node-0" and not high["spec"].get("nodeName")
        time.sleep(0.5)
        assert not api.pod("high")["spec"].get("nodeName"), "bound while the victims still hold the node"
        assert sorted(cluster.finish_terminating()) == ["low0", "low1"]
    wait_until(lambda: bound_nodes(api).get("high") == "node-0", timeout=20, what="preemptor bound")
    pods = api.pods()
    assert "low0" not in pods and "low1" not in pods
    events = api.watch("/api/v1/namespaces/default/pods", rv)
    # Each victim got the DisruptionTarget condition before it was deleted.
    for victim in ("low0", "low1"):
        seen = [(e["type"], e["object"]) for e in events if e["object"]["metadata"]["name"] == victim]
        types = [t for t, _ in seen]
        assert types[-1] == "DELETED", types
        conds = [c for t, o in seen if t == "MODIFIED" for c in o["status"].get("conditions", [])]
        dt = [c for c in conds if c["type"] == "DisruptionTarget"]
        assert dt and dt[0]["reason"] == "PreemptionByScheduler", seen
        assert dt[0]["message"] == f"{SCHEDULER}: preempting to accommodate a higher priority pod"
        assert dt[0]["observedGeneration"] == 1
    # The preemptor was nominated to the node before it was bound there.
    high_states = [
        (o["status"].get("nominatedNodeName", ""), o["spec"].get("nodeName", ""))
        for e in events
        if (o := e["object"])["metadata"]["name"] == "high"
    ]
    assert ("node-0", "") in high_states, high_states
    assert high_states.index(("node-0", "")) < next(i for i, (_, n) in enumerate(high_states) if n), high_states
    high_uid = api.pod("high")["metadata"]["uid"]
    preempted = [e for e in api.events() if e["reason"] == "Preempted"]
    assert {e["regarding"]["name"] for e in preempted} == {"low0", "low1"}
    assert all(e["note"] == f"Preempted by pod {high_uid} on node node-0" for e in preempted)
    assert all(e["related"]["name"] == "high" for e in preempted)
    assert re.search(r"^scheduler_preemption_attempts_total [1-9]", run.metrics(), re.M)
    assert run.stop() == 0


VOLUMES = """---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv1}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  local: {path: /mnt/disk}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [node-1]}]
status: {phase: Available}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local
  resources: {requests: {storage: 5Gi}}
"""


def test_volume_binding_writes_through_the_api(cluster: Cluster) -> None:
    nodes = nodes_yaml(2).replace("labels: {zone: z0}", "labels: {zone: z0, kubernetes.io/hostname: node-0}")
    nodes = nodes.replace("labels: {zone: z1}", "labels: {zone: z1, kubernetes.io/hostname: node-1}")
    api = cluster.start_serve(nodes + VOLUMES)
    run = cluster.start_run(sched_config())
    wait_ready(run)
    pod = make_pod("db")
    pod["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]
    api.create("/api/v1/namespaces/default/pods", pod)
    wait_until(lambda: bound_nodes(api).get("db") == "node-1", what="bound where the volume is")
    pv = api.get("/api/v1/persistentvolumes/pv1")
    assert pv["spec"]["claimRef"]["name"] == "data"
    assert pv["spec"]["local"] == {"path": "/mnt/disk"}, "fields the patch did not touch are kept"
    pvc = api.get("/api/v1/namespaces/default/persistentvolumeclaims/data")
    assert pvc["spec"]["volumeName"] == "pv1"
    # (With no PV controller in `serve`, the binder's own completion step wrote both statuses.)
    assert pv["status"]["phase"] == "Bound" and pvc["status"]["phase"] == "Bound"
    assert run.stop() == 0


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_https_and_bearer_token_from_kubeconfig(cluster: Cluster) -> None:
    cert, key = cluster.tmp / "tls.crt", cluster.tmp / "tls.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=kubesched",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    cluster.start_serve(
        nodes_yaml(1), "--token", "s3cret", "--tls-cert-file", str(cert), "--tls-private-key-file", str(key)
    )
    assert cluster.url.startswith("https://")
    ctx = ssl.create_default_context(cafile=str(cert))

    def call(path: str, body: dict | None = None, token: str = "s3cret") -> tuple[int, dict]:
        req = urllib.request.Request(cluster.url + path, data=json.dumps(body).encode() if body else None)
        req.add_header("Authorization", f"Bearer {token}")
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    assert call("/api/v1/nodes", token="wrong")[0] == 401
    run = cluster.start_run(sched_config())
    wait_ready(run)
    assert call("/api/v1/namespaces/default/pods", make_pod("secure"))[0] == 201
    wait_until(lambda: call("/api/v1/namespaces/default/pods/secure")[1]["spec"].get("nodeName"), what="bound")
    assert run.stop() == 0


BAD_PROFILE = sched_config(leader_elect=False) + "  plugins:\n    score:\n      enabled: [{name: NoSuchPlugin}]\n"
BAD_PROFILE_ERROR = (
    'initializing profiles: creating profile for scheduler name kubesched: ScorePlugin "NoSuchPlugin" does not exist'
)


def test_bad_profile_refused_with_the_cluster_reachable(cluster: Cluster) -> None:
    """The lists go out before the profiles are built (start-up overlaps them): a bad profile still ends
    the run at once, status 2 with upstream's words, nothing scheduled, no health port left open."""
    api = cluster.start(nodes_yaml(1))
    api.create("/api/v1/namespaces/default/pods", make_pod("p0"))
    proc = cluster.start_run(BAD_PROFILE)
    assert proc.popen.wait(30) == 2, proc.text()
    assert f"{BAD_PROFILE_ERROR}\n" in proc.text()
    assert "Serving health" not in proc.text()
    assert bound_nodes(api) == {"p0": ""}


def test_bad_profile_reported_before_a_bad_kubeconfig(cluster: Cluster, tmp_path: Path) -> None:
    """Both wrong: the profile's error comes first, as before any connection is attempted."""
    cluster.kubeconfig = tmp_path / "missing-kubeconfig"
    proc = cluster.start_run(BAD_PROFILE)
    assert proc.popen.wait(30) == 2, proc.text()
    assert BAD_PROFILE_ERROR in proc.text()
    assert "missing-kubeconfig" not in proc.text()
