"""`kubesched capacity`: replicas placed one by one through the real cycle agree with simulating N replicas."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.terminal import Terminal

from kubesched.capacity import capacity, load_pod
from kubesched.cli import main
from kubesched.errors import InputError
from kubesched.scenario import load_scenario, parse_scenario
from kubesched.simulate.runner import Simulation

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "examples" / "cluster.yaml"
POD = ROOT / "examples" / "pod.yaml"


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _replicas_scenario(cluster: Path, template: dict[str, Any], n: int) -> str:
    """The cluster with n copies of the template appended, named as capacity names its replicas."""
    docs = []
    for i in range(n):
        doc = json.loads(json.dumps(template))
        doc["metadata"]["name"] = f"{template['metadata']['name']}-{i}"
        docs.append(doc)
    return cluster.read_text() + "\n---\n" + yaml.safe_dump_all(docs, sort_keys=False)


def test_example_capacity_agrees_with_simulating_the_replicas(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, "capacity", str(CLUSTER), "--pod", str(POD), "-o", "json")
    assert code == 0, err
    got = json.loads(out)
    assert got["replicas"] == 11  # the shop Deployment's 3 small replicas take part of the room
    assert got["nodes"] == {"zone-a-1": 7, "zone-b-1": 1, "zone-c-1": 0, "zone-a-2": 3, "zone-b-gpu": 0}
    assert got["requests"] == {"cpu": "1", "memory": "2Gi"}
    assert got["stop"]["reason"] == "FailedScheduling"
    assert got["stop"]["pod"] == "default/frontend-11"
    # The production-priority replicas evict the low-priority batch job once the free room is gone.
    assert got["preempted"] == ["default/batch-1"]

    # The same question asked of `simulate`: the cluster plus 12 replicas, in sequence.
    template = yaml.safe_load(POD.read_text())
    sc = parse_scenario(_replicas_scenario(CLUSTER, template, 12), "replicas.yaml")
    result = Simulation(sc).run()
    by_pod = {o.key: o for o in result.results}
    counts: dict[str, int] = {}
    for i in range(11):
        o = by_pod[f"default/frontend-{i}"]
        assert o.status == "Scheduled", o
        counts[o.node] = counts.get(o.node, 0) + 1  # type: ignore[index]
    assert counts == {k: v for k, v in got["nodes"].items() if v}
    last = by_pod["default/frontend-11"]
    assert last.status == "Unschedulable"
    assert last.message == got["stop"]["message"]
    assert got["stop"]["message"] == (
        "0/5 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, "
        "1 node(s) were unschedulable, 3 Insufficient cpu. no new claims to deallocate, preemption: 0/5 nodes "
        "are available: 2 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod."
    )
    assert [d for d in result.deleted if d != "default/batch-2"] == got["preempted"]


def test_limit_reached(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, "capacity", str(CLUSTER), "--pod", str(POD), "--max", "3", "-o", "json")
    assert code == 0, err
    got = json.loads(out)
    assert got["replicas"] == 3 and sum(got["nodes"].values()) == 3
    assert got["stop"] == {"reason": "LimitReached", "message": "Maximum number of pods simulated: 3", "pod": None}


PIPED = """\
default/frontend pod requirements: cpu: 1, memory: 2Gi
The cluster can schedule 11 instance(s) of the pod default/frontend.
Termination reason: FailedScheduling: 0/5 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, 1 node(s) were unschedulable, 3 Insufficient cpu. no new claims to deallocate, preemption: 0/5 nodes are available: 2 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod.
Preempted to make room: default/batch-1
Pod distribution among nodes:
NODE       INSTANCES
zone-a-1           7
zone-b-1           1
zone-a-2           3
2 other node(s): 0
"""  # noqa: E501


def test_piped_output_whole_lines_and_plain_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "40")  # a terminal's width has nothing to do with a pipe
    code, out, err = _cli(capsys, "capacity", str(CLUSTER), "--pod", str(POD))
    assert code == 0, err
    assert out == PIPED


def test_table_output_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    assert main(["capacity", str(CLUSTER), "--pod", str(POD)]) == 0
    lines = terminal.text().splitlines()
    assert lines[:2] == PIPED.splitlines()[:2]
    assert "│ zone-a-1 │         7 │" in lines
    assert lines[-1] == "2 other node(s): 0"


def test_selector_pod_in_a_small_cluster(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"n{i}", "labels": {"tier": "fast" if i < 2 else "slow"}},
            "status": {"capacity": {"cpu": str(2 + i), "memory": "4Gi", "pods": "3"}},
        }
        for i in range(3)
    ]
    cluster.write_text(yaml.safe_dump_all(nodes))
    template = tmp_path / "pod.yaml"
    template.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "job", "namespace": "batch"},
                "spec": {
                    "nodeSelector": {"tier": "fast"},
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
                },
            }
        )
    )

    r = capacity(load_scenario(cluster), load_pod(str(template)))
    # n0: 2 cpu -> 2 replicas; n1: 3 cpu -> 3 replicas (its pod limit); n2 does not match the selector.
    assert (r.replicas, r.nodes) == (5, {"n0": 2, "n1": 3, "n2": 0})
    assert r.pod == "batch/job" and r.failed_pod == "batch/job-5"
    assert r.stop_message == (
        # n1 is out of both cpu and pod slots: each reason counts (sorted as strings, as upstream sorts).
        "0/3 nodes are available: 1 Too many pods, 1 node(s) didn't match Pod's node affinity/selector, "
        "2 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: "
        "1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
    )


POD_HEAD = "apiVersion: v1\nkind: Pod\nmetadata: "
C = "containers: [{name: c, image: x}]"


@pytest.mark.parametrize(
    ("pod_yaml", "message"),
    [
        (f"{POD_HEAD}{{name: a}}\nspec: {{nodeName: n1, {C}}}\n", "spec.nodeName: must not be bound"),
        (
            f"{POD_HEAD}{{name: a}}\nspec: {{{C}}}\n---\n{POD_HEAD}{{name: b}}\nspec: {{{C}}}\n",
            "must hold exactly one Pod or one workload (found: Pod, Pod)",
        ),
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n",
            "must hold exactly one Pod or one workload (found: Node)",
        ),
        (f"{POD_HEAD}{{name: web}}\nspec: {{{C}}}\n", "Pod default/web: metadata.name: the replicas"),
        (
            f"{POD_HEAD}{{name: a}}\n"
            "spec: {containers: [{name: c, image: x, resources: {requests: {cpu: lots}}}]}\n",
            "Pod default/a: spec.containers[0].resources.requests[cpu]:",
        ),
    ],
)
def test_bad_pod_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, pod_yaml: str, message: str) -> None:
    f = tmp_path / "pod.yaml"
    f.write_text(pod_yaml)
    code, out, err = _cli(capsys, "capacity", str(CLUSTER), "--pod", str(f))
    assert code == 2 and out == ""
    assert err.startswith(f"error: {f}: ") and message in err, err
    assert "Traceback" not in err


def test_bad_max(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:  # refused by argparse before any file is read
        main(["capacity", str(CLUSTER), "--pod", str(POD), "--max", "-1"])
    assert info.value.code == 2
    assert capsys.readouterr().err.endswith(
        "kubesched capacity: error: argument --max: must be an integer >= 0, got '-1'\n"
    )
    sc = parse_scenario(CLUSTER.read_text(), str(CLUSTER))
    with pytest.raises(InputError, match=r"^--max: must be 0 or more, not -1$"):  # and by the library
        capacity(sc, load_pod(str(POD), cluster=sc), None, -1)


def test_refused_replica_names_the_pod_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n")
    code, out, err = _cli(capsys, "capacity", str(cluster), "--pod", str(POD))
    assert code == 2 and out == ""
    assert err == (
        f'error: {POD}: Pod default/frontend: pods "frontend" is forbidden: '
        "no PriorityClass with name production was found\n"
    )


def test_no_nodes(tmp_path: Path) -> None:

    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n")
    pod = tmp_path / "pod.yaml"
    pod.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n")
    r = capacity(load_scenario(cluster), load_pod(str(pod)))
    assert (r.replicas, r.nodes, r.stop_reason) == (0, {}, "FailedScheduling")
    assert r.stop_message == "no nodes available to schedule pods"


def test_a_statefulset_gives_each_replica_its_own_claim(tmp_path: Path) -> None:
    """Three local volumes (two on n1, one on n2): three replicas, each binding one through its own claim."""
    docs = [
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: local}\n"
        "provisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\n"
    ]
    for n in (1, 2):
        docs.append(
            f"apiVersion: v1\nkind: Node\nmetadata: {{name: n{n}, labels: {{kubernetes.io/hostname: n{n}}}}}\n"
            "status: {capacity: {cpu: '4', memory: 8Gi, pods: '110'}}\n"
        )
    for i, n in enumerate((1, 1, 2)):
        docs.append(
            f"apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: pv-{i}}}\nspec:\n"
            "  capacity: {storage: 5Gi}\n  accessModes: [ReadWriteOnce]\n  storageClassName: local\n"
            f"  local: {{path: /mnt/{i}}}\n  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n"
            f"      - matchExpressions: [{{key: kubernetes.io/hostname, operator: In, values: [n{n}]}}]\n"
            "status: {phase: Available}\n"
        )
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("---\n".join(docs))
    sts = tmp_path / "sts.yaml"
    sts.write_text(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  serviceName: db\n  replicas: 1\n"
        "  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec:\n"
        "      containers: [{name: c, image: postgres, resources: {requests: {cpu: 500m}}}]\n"
        "  volumeClaimTemplates:\n  - metadata: {name: data}\n    spec:\n      accessModes: [ReadWriteOnce]\n"
        "      storageClassName: local\n      resources: {requests: {storage: 1Gi}}\n"
    )
    sc = load_scenario(cluster)
    r = capacity(sc, load_pod(str(sts), cluster=sc))
    assert r.replicas == 3 and r.nodes == {"n1": 2, "n2": 1}
    assert r.stop_message.startswith("0/2 nodes are available: 2 node(s) didn't find available persistent volumes")
