"""Scenario generators: random clusters for equivalence tests, and large clusters for benchmarks.

Everything is drawn from a seeded generator, so a (shape, seed) pair always
gives the same scenario. The output is a list of plain manifests (dicts) that
can be dumped as YAML or parsed directly.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import yaml

from kubesched.scenario import Scenario, parse_scenario

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


@dataclass
class Shape:
    """What a random cluster may contain."""

    nodes: int = 12
    zones: int = 3
    running_pods: int = 20
    pending_pods: int = 30
    taint_fraction: float = 0.2
    selector_fraction: float = 0.2
    port_fraction: float = 0.1
    priorities: tuple[int, ...] = (0,)
    images: int = 4
    mode: str = "sequential"
    # Pending pods with inter-pod (anti-)affinity terms, and with topology spread constraints.
    pod_affinity_fraction: float = 0.25
    spread_fraction: float = 0.25
    # Each app gets a PodDisruptionBudget with this probability (preemption then weighs violations).
    pdb_fraction: float = 0.5
    # PDBs carry a status (disruptionsAllowed 0..2), as in the conformance cases: kube-scheduler run
    # against a bare API server has no disruption controller to compute one, while kubesched's
    # embedded cluster computes a missing status the way that controller would.
    pdb_status: bool = False
    # Add-ons, each drawn from its own generator so the rest of a (shape, seed) cluster stays the same:
    # persistent volumes (local WaitForFirstConsumer PVs, zonal and CSI-limited bound PVs, ReadWriteOncePod),
    # DRA devices (ResourceSlices, DeviceClasses, claims and claim templates), and a random scheduler
    # configuration (scoring strategy, weights, disabled score plugins, plugin args) in the header.
    volumes: bool = False
    dra: bool = False
    config: bool = False
    # Extended resources example.com/r0.. offered by nodes (some nodes lack some) and requested by pods.
    extended_resources: int = 0


def _quantity_cpu(rng: random.Random) -> str:
    return rng.choice(["100m", "250m", "500m", "1", "1500m", "2", "3"])


def _quantity_mem(rng: random.Random) -> str:
    return rng.choice(["128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"])


APPS = ("web", "db", "cache")
NAMESPACES = ("default", "team")


def _app_selector(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.7:
        return {"matchLabels": {"app": rng.choice(APPS)}}
    return {"matchExpressions": [{"key": "app", "operator": "In", "values": rng.sample(APPS, 2)}]}


def _pod_affinity_term(rng: random.Random) -> dict[str, Any]:
    term: dict[str, Any] = {"labelSelector": _app_selector(rng), "topologyKey": rng.choice([HOSTNAME, ZONE])}
    r = rng.random()
    if r < 0.2:
        term["namespaces"] = list(NAMESPACES)
    elif r < 0.3:
        term["namespaceSelector"] = {"matchLabels": {"team": "yes"}}
    return term


def _pod_affinity(rng: random.Random) -> dict[str, Any]:
    """Required and preferred, affinity and anti-affinity, in random combinations."""
    out: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        if rng.random() < 0.5:
            continue
        spec: dict[str, Any] = {}
        if rng.random() < 0.5:
            spec["requiredDuringSchedulingIgnoredDuringExecution"] = [_pod_affinity_term(rng)]
        if rng.random() < 0.6:
            spec["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.choice([1, 10, 100]), "podAffinityTerm": _pod_affinity_term(rng)}
                for _ in range(rng.choice([1, 2]))
            ]
        if spec:
            out[kind] = spec
    return out


def _spread_constraints(rng: random.Random, app: str) -> list[dict[str, Any]]:
    out = []
    for key in rng.sample([ZONE, HOSTNAME], rng.choice([1, 2])):
        c: dict[str, Any] = {
            "maxSkew": rng.choice([1, 2]),
            "topologyKey": key,
            "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
            "labelSelector": {"matchLabels": {"app": app}},
        }
        if rng.random() < 0.2:
            c["minDomains"] = rng.choice([2, 5])
            c["whenUnsatisfiable"] = "DoNotSchedule"
        if rng.random() < 0.2:
            c["nodeTaintsPolicy"] = "Honor"
        if rng.random() < 0.2:
            c["nodeAffinityPolicy"] = "Ignore"
        out.append(c)
    return out


def random_scenario(shape: Shape, seed: int) -> list[dict[str, Any]]:
    """A cluster exercising the default plugins: resources, taints, selectors, ports, images, priorities,
    inter-pod affinity and topology spread (own constraints, and the system defaults through a Service)."""
    rng = random.Random(seed)
    docs: list[dict[str, Any]] = [
        {"kind": "Scenario", "description": f"random cluster seed={seed}", "mode": shape.mode},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labels": {"team": "yes"}}},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
        },
    ]
    for app in APPS:
        if rng.random() < shape.pdb_fraction:
            pdb: dict[str, Any] = {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": f"{app}-pdb", "namespace": rng.choice(NAMESPACES)},
                "spec": {"selector": {"matchLabels": {"app": app}}, "maxUnavailable": rng.choice([0, 1])},
            }
            if shape.pdb_status:
                pdb["status"] = {"disruptionsAllowed": rng.choice([0, 1, 2])}
            docs.append(pdb)
    for p in sorted(set(shape.priorities)):
        if p:
            docs.append(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": f"p{p}"},
                    "value": p,
                }
            )
    images = [f"registry.example.com/app-{i}:v{i}" for i in range(shape.images)]
    node_names = []
    for i in range(shape.nodes):
        name = f"node-{i:03d}"
        node_names.append(name)
        labels = {
            HOSTNAME: name,
            ZONE: f"zone-{i % shape.zones}",
            "disk": rng.choice(["ssd", "hdd"]),
        }
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {},
            "status": {
                "capacity": {
                    "cpu": rng.choice(["2", "4", "8"]),
                    "memory": rng.choice(["4Gi", "8Gi", "16Gi"]),
                    "pods": rng.choice(["8", "110"]),
                },
                "images": [
                    {"names": [img], "sizeBytes": rng.choice([50, 300, 800]) * 1024 * 1024}
                    for img in images
                    if rng.random() < 0.4
                ],
            },
        }
        for j in range(shape.extended_resources):
            if rng.random() < 0.98:
                node["status"]["capacity"][f"example.com/r{j}"] = str(rng.choice([2, 4, 8]))
        if rng.random() < shape.taint_fraction:
            node["spec"]["taints"] = [
                {
                    "key": "dedicated",
                    "value": rng.choice(["infra", "gpu"]),
                    "effect": rng.choice(["NoSchedule", "PreferNoSchedule"]),
                }
            ]
        docs.append(node)

    def pod(name: str, running: bool) -> dict[str, Any]:
        container: dict[str, Any] = {
            "name": "c",
            "image": rng.choice(images) if images else "pause",
        }
        req: dict[str, Any] = {}
        if rng.random() < 0.9:
            req["cpu"] = _quantity_cpu(rng)
        if rng.random() < 0.8:
            req["memory"] = _quantity_mem(rng)
        if shape.extended_resources:
            # Half the pods ask for every extended resource, the others for a few.
            share = 1.0 if rng.random() < 0.5 else 0.2
            for j in range(shape.extended_resources):
                if rng.random() < share:
                    req[f"example.com/r{j}"] = str(rng.choice([1, 1, 2, 3]))
        if req:
            # Extended resources cannot be overcommitted: their limits must equal their requests.
            limits = {k: v for k, v in req.items() if "/" in k}
            container["resources"] = {"requests": req, **({"limits": limits} if limits else {})}
        if rng.random() < shape.port_fraction:
            container["ports"] = [{"containerPort": 80, "hostPort": rng.choice([8080, 8081])}]
        spec: dict[str, Any] = {"containers": [container]}
        app = rng.choice(APPS)
        affinity: dict[str, Any] = {}
        if rng.random() < shape.pod_affinity_fraction:
            affinity.update(_pod_affinity(rng))
        if rng.random() < shape.spread_fraction:
            spec["topologySpreadConstraints"] = _spread_constraints(rng, app)
        prio = rng.choice(shape.priorities)
        if prio:
            spec["priorityClassName"] = f"p{prio}"
        if running:
            spec["nodeName"] = rng.choice(node_names)
        else:
            if rng.random() < shape.selector_fraction:
                spec["nodeSelector"] = {"disk": "ssd"}
            if rng.random() < 0.3:
                spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
            if rng.random() < 0.2:
                affinity["nodeAffinity"] = {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": rng.choice([1, 5, 50]),
                            "preference": {
                                "matchExpressions": [
                                    {
                                        "key": ZONE,
                                        "operator": "In",
                                        "values": [f"zone-{rng.randrange(shape.zones)}"],
                                    }
                                ]
                            },
                        }
                    ]
                }
        if affinity:
            spec["affinity"] = affinity
        doc: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": rng.choice(NAMESPACES), "labels": {"app": app}},
            "spec": spec,
        }
        if running:
            doc["status"] = {
                "phase": "Running",
                "startTime": f"2025-01-01T00:{rng.randrange(60):02d}:00Z",
            }
        return doc

    for i in range(shape.running_pods):
        docs.append(pod(f"running-{i}", True))
    for i in range(shape.pending_pods):
        docs.append(pod(f"pending-{i}", False))
    if shape.volumes:
        _add_volumes(docs, node_names, shape.zones, random.Random(f"{seed}-volumes"))
    if shape.dra:
        _add_devices(docs, node_names, random.Random(f"{seed}-dra"))
    if shape.config:
        docs[0]["config"] = random_config(random.Random(f"{seed}-config"))
    return docs


CSI_DRIVER = "pd.csi.example.com"


def _pods(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in docs if d.get("kind") == "Pod"]


def _bound_pvc(name: str, ns: str, pv: str, size: str, modes: list[str], sc: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": ns, "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
        "spec": {
            "accessModes": modes,
            "resources": {"requests": {"storage": size}},
            "storageClassName": sc,
            "volumeName": pv,
        },
        "status": {"phase": "Bound", "accessModes": modes, "capacity": {"storage": size}},
    }


def _mount(pod: dict[str, Any], claim: str) -> None:
    vols = pod["spec"].setdefault("volumes", [])
    vols.append({"name": f"v{len(vols)}", "persistentVolumeClaim": {"claimName": claim}})


def _add_volumes(docs: list[dict[str, Any]], node_names: list[str], zones: int, rng: random.Random) -> None:
    """Storage for VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits to decide on."""
    docs += [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "local"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "zonal"},
            "provisioner": CSI_DRIVER,
            "volumeBindingMode": "Immediate",
        },
    ]
    for name in node_names:
        if rng.random() < 0.7:
            docs.append(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "CSINode",
                    "metadata": {"name": name},
                    "spec": {
                        "drivers": [
                            {"name": CSI_DRIVER, "nodeID": name, "allocatable": {"count": rng.choice([1, 2, 3])}}
                        ]
                    },
                }
            )
        for j in range(rng.choice([0, 1, 2])):
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": f"local-{name}-{j}"},
                    "spec": {
                        "capacity": {"storage": rng.choice(["5Gi", "20Gi", "50Gi"])},
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": "local",
                        "persistentVolumeReclaimPolicy": "Retain",
                        "local": {"path": f"/mnt/{j}"},
                        "nodeAffinity": {
                            "required": {
                                "nodeSelectorTerms": [
                                    {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [name]}]}
                                ]
                            }
                        },
                    },
                    "status": {"phase": "Available"},
                }
            )
    counter = 0

    def zonal(ns: str, modes: list[str]) -> str:
        """A CSI volume in one zone, bound to a new claim; returns the claim's name."""
        nonlocal counter
        counter += 1
        claim, pv = f"zonal-{counter}", f"zonal-pv-{counter}"
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": pv, "labels": {ZONE: f"zone-{rng.randrange(zones)}"}},
                "spec": {
                    "capacity": {"storage": "10Gi"},
                    "accessModes": modes,
                    "storageClassName": "zonal",
                    "csi": {"driver": CSI_DRIVER, "volumeHandle": f"vol-{counter}"},
                    "claimRef": {"namespace": ns, "name": claim},
                },
                "status": {"phase": "Bound"},
            }
        )
        docs.append(_bound_pvc(claim, ns, pv, "10Gi", modes, "zonal"))
        return claim

    rwop: list[tuple[str, str]] = []
    for pod in _pods(docs):
        ns = pod["metadata"]["namespace"]
        running = "nodeName" in pod["spec"]
        r = rng.random()
        if running:
            if r < 0.3:
                _mount(pod, zonal(ns, ["ReadWriteOnce"]))
            elif r < 0.4:
                claim = zonal(ns, ["ReadWriteOncePod"])
                _mount(pod, claim)
                rwop.append((ns, claim))
            continue
        if r < 0.35:
            counter += 1
            claim = f"local-claim-{counter}"
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {"name": claim, "namespace": ns},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": rng.choice(["1Gi", "10Gi", "30Gi"])}},
                        "storageClassName": "local",
                    },
                }
            )
            _mount(pod, claim)
        elif r < 0.6:
            _mount(pod, zonal(ns, ["ReadWriteOnce"]))
        elif r < 0.65:
            _mount(pod, "missing-claim")
        elif r < 0.75 and any(n == ns for n, _ in rwop):
            _mount(pod, rng.choice([c for n, c in rwop if n == ns]))


def _device_selector(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.5:
        return {"cel": {"expression": f'device.attributes["gpu.example.com"].model == "{rng.choice(GPU_MODELS)}"'}}
    gib = rng.choice([16, 24])
    return {"cel": {"expression": f'device.capacity["gpu.example.com"].memory.compareTo(quantity("{gib}Gi")) >= 0'}}


GPU_MODELS = ("t4", "l4", "a100")


def _device_request(rng: random.Random, name: str) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu"}
    if rng.random() < 0.1:
        exactly["allocationMode"] = "All"
    else:
        exactly["allocationMode"] = "ExactCount"
        exactly["count"] = rng.choice([1, 1, 2, 3])
    if rng.random() < 0.5:
        exactly["selectors"] = [_device_selector(rng)]
    return {"name": name, "exactly": exactly}


def _add_devices(docs: list[dict[str, Any]], node_names: list[str], rng: random.Random) -> None:
    """GPUs for DynamicResources: per-node ResourceSlices, one DeviceClass, claims and claim templates."""
    docs.append(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        }
    )
    for name in node_names:
        if rng.random() < 0.3:
            continue
        devices = []
        for j in range(rng.choice([1, 2, 4])):
            model = rng.choice(GPU_MODELS)
            mem = {"t4": 16, "l4": 24, "a100": 40}[model]
            devices.append(
                {
                    "name": f"gpu-{j}",
                    "attributes": {"model": {"string": model}, "memoryGi": {"int": mem}},
                    "capacity": {"memory": {"value": f"{mem}Gi"}},
                }
            )
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-gpu"},
                "spec": {
                    "driver": "gpu.example.com",
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": devices,
                },
            }
        )
    templates: set[tuple[str, str]] = set()
    shared: dict[str, str] = {}
    for pod in _pods(docs):
        if "nodeName" in pod["spec"] or rng.random() < 0.5:
            continue
        ns = pod["metadata"]["namespace"]
        r = rng.random()
        if r < 0.5:
            tmpl = f"gpus-{rng.randrange(3)}"
            if (ns, tmpl) not in templates:
                templates.add((ns, tmpl))
                docs.append(
                    {
                        "apiVersion": "resource.k8s.io/v1",
                        "kind": "ResourceClaimTemplate",
                        "metadata": {"name": tmpl, "namespace": ns},
                        "spec": {"spec": {"devices": {"requests": [_device_request(rng, "gpu")]}}},
                    }
                )
            ref: dict[str, Any] = {"name": "gpu", "resourceClaimTemplateName": tmpl}
        else:
            if ns in shared and rng.random() < 0.3:
                claim = shared[ns]
            else:
                claim = f"claim-{pod['metadata']['name']}"
                shared[ns] = claim
                docs.append(
                    {
                        "apiVersion": "resource.k8s.io/v1",
                        "kind": "ResourceClaim",
                        "metadata": {"name": claim, "namespace": ns},
                        "spec": {"devices": {"requests": [_device_request(rng, "gpu")]}},
                    }
                )
            ref = {"name": "gpu", "resourceClaimName": claim}
        pod["spec"]["resourceClaims"] = [ref]
        pod["spec"]["containers"][0].setdefault("resources", {})["claims"] = [{"name": "gpu"}]


SCORE_PLUGINS = (
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "InterPodAffinity",
    "PodTopologySpread",
)


def random_config(rng: random.Random) -> dict[str, Any]:
    """A valid KubeSchedulerConfiguration with one profile of random scoring choices."""
    strategy: dict[str, Any] = {
        "type": rng.choice(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]),
        "resources": [{"name": "cpu", "weight": rng.randint(1, 5)}, {"name": "memory", "weight": rng.randint(1, 5)}],
    }
    if strategy["type"] == "RequestedToCapacityRatio":
        strategy["requestedToCapacityRatio"] = {
            "shape": [
                {"utilization": 0, "score": rng.randint(0, 10)},
                {"utilization": rng.choice([50, 80]), "score": rng.randint(0, 10)},
                {"utilization": 100, "score": rng.randint(0, 10)},
            ]
        }
    plugin_config: list[dict[str, Any]] = [{"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}}]
    if rng.random() < 0.5:
        plugin_config.append(
            {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": rng.choice([0, 1, 50, 100])}}
        )
    if rng.random() < 0.3:
        plugin_config.append(
            {
                "name": "NodeResourcesBalancedAllocation",
                # Weights other than 1 are refused (as kube-scheduler refuses them).
                "args": {
                    "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": rng.choice([1, 1, 1, 2])}]
                },
            }
        )
    if rng.random() < 0.3:
        plugin_config.append(
            {
                "name": "PodTopologySpread",
                "args": {
                    "defaultingType": "List",
                    "defaultConstraints": [
                        {"maxSkew": rng.choice([1, 3]), "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}
                    ],
                },
            }
        )
    disabled = [{"name": n} for n in SCORE_PLUGINS if rng.random() < 0.15]
    off = {d["name"] for d in disabled}
    enabled = [{"name": n, "weight": rng.randint(1, 10)} for n in SCORE_PLUGINS if n not in off and rng.random() < 0.4]
    score: dict[str, Any] = {}
    if enabled:
        score["enabled"] = enabled
    if disabled:
        score["disabled"] = disabled
    profile: dict[str, Any] = {"schedulerName": "default-scheduler", "pluginConfig": plugin_config}
    if score:
        profile["plugins"] = {"score": score}
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    }


def basic_cluster(nodes: int, init_pods: int, pods: int, mode: str = "batch") -> list[dict[str, Any]]:
    """scheduler_perf's SchedulingBasic shape (../shared/benchmarks/WORKLOADS.md) as a scenario."""
    docs: list[dict[str, Any]] = [{"kind": "Scenario", "description": f"basic {nodes} nodes", "mode": mode}]
    for i in range(nodes):
        name = f"scheduler-perf-{i}"
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {HOSTNAME: name}},
                "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
            }
        )
    container = {
        "name": "pause",
        "image": "registry.k8s.io/pause:3.10.1",
        "ports": [{"containerPort": 80}],
        "resources": {
            "requests": {"cpu": "100m", "memory": "500Mi"},
            "limits": {"cpu": "100m", "memory": "500Mi"},
        },
    }
    for i in range(init_pods):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"init-pod-{i}"},
                "spec": {"containers": [container], "nodeName": f"scheduler-perf-{i % nodes}"},
            }
        )
    for i in range(pods):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"pod-{i}"},
                "spec": {"containers": [container]},
            }
        )
    return docs


def to_yaml(docs: list[dict[str, Any]]) -> str:
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump_all(docs, Dumper=dumper, sort_keys=False)


def to_scenario(docs: list[dict[str, Any]], source: str = "<generated>") -> Scenario:
    return parse_scenario(to_yaml(docs), source)
