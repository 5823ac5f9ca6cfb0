"""The objects of upstream's scheduler_perf templates, by workload: nodes, initial pods, measured pods.

Each workload is one of the shapes of ../shared/benchmarks/WORKLOADS.md (basic,
pod affinity, pod anti-affinity, topology spread, preemption), written as plain
manifests so that the bench creates them through the API as scheduler_perf does.
"""

from __future__ import annotations

from typing import Any

WORKLOADS = ("basic", "podaffinity", "antiaffinity", "spread", "preemption")
PAUSE = "registry.k8s.io/pause:3.10.1"


def _container(cpu: str = "100m", memory: str = "500Mi") -> dict[str, Any]:
    req = {"cpu": cpu, "memory": memory}
    return {
        "name": "pause",
        "image": PAUSE,
        "ports": [{"containerPort": 80}],
        "resources": {"requests": req, "limits": req},
    }


def node(i: int, workload: str) -> dict[str, Any]:
    name = f"scheduler-perf-{i}"
    labels = {"kubernetes.io/hostname": name}
    if workload == "podaffinity":
        labels["topology.kubernetes.io/zone"] = "zone1"
    elif workload == "spread":
        labels["topology.kubernetes.io/zone"] = f"moon-{i % 3 + 1}"
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {
            "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _affinity_pod(name: str, ns: str, color: str, kind: str, topology: str) -> dict[str, Any]:
    term = {
        "labelSelector": {"matchLabels": {"color": color}},
        "topologyKey": topology,
        "namespaces": ["sched-1", "sched-0"],
    }
    return {
        "metadata": {"name": name, "namespace": ns, "labels": {"color": color}},
        "spec": {
            "containers": [_container()],
            "affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
        },
    }


def initial_pod(workload: str, i: int, nodes: int) -> dict[str, Any]:
    if workload == "podaffinity":
        pod = _affinity_pod(f"init-{i}", "sched-0", "blue", "podAffinity", "topology.kubernetes.io/zone")
    elif workload == "antiaffinity":
        pod = _affinity_pod(f"init-{i}", "sched-0", "green", "podAntiAffinity", "kubernetes.io/hostname")
    elif workload == "preemption":
        pod = {
            "metadata": {"name": f"init-{i}", "namespace": "default"},
            "spec": {"containers": [_container(cpu="900m")], "priority": 0, "terminationGracePeriodSeconds": 0},
        }
    else:
        pod = {"metadata": {"name": f"init-{i}", "namespace": "default"}, "spec": {"containers": [_container()]}}
    node = i // 4 if workload == "preemption" else i % nodes
    pod["spec"]["nodeName"] = f"scheduler-perf-{node % nodes}"
    pod["status"] = {"phase": "Running"}
    return pod


def measured_pod(workload: str, i: int) -> dict[str, Any]:
    if workload == "podaffinity":
        return _affinity_pod(f"pod-{i}", "sched-1", "blue", "podAffinity", "topology.kubernetes.io/zone")
    if workload == "antiaffinity":
        return _affinity_pod(f"pod-{i}", "sched-1", "green", "podAntiAffinity", "kubernetes.io/hostname")
    if workload == "spread":
        return {
            "metadata": {"name": f"pod-{i}", "namespace": "default", "labels": {"color": "blue"}},
            "spec": {
                "containers": [_container()],
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 5,
                        "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"color": "blue"}},
                    }
                ],
            },
        }
    if workload == "preemption":
        return {
            "metadata": {"name": f"pod-{i}", "namespace": "default"},
            "spec": {"containers": [_container(cpu="3000m")], "priority": 10},
        }
    return {"metadata": {"name": f"pod-{i}", "namespace": "default"}, "spec": {"containers": [_container()]}}
