"""Random clusters for equivalence tests: nodes and pods exercising the default plugins, with the
storage, device and configuration add-ons a Shape asks for."""

from __future__ import annotations

import random
from typing import Any

from kubesched.simulate.generate.config import random_config
from kubesched.simulate.generate.devices import add_devices
from kubesched.simulate.generate.shape import APPS, HOSTNAME, NAMESPACES, ZONE, Shape
from kubesched.simulate.generate.storage import add_volumes


def _quantity_cpu(rng: random.Random) -> str:
    return rng.choice(["100m", "250m", "500m", "1", "1500m", "2", "3"])


def _quantity_mem(rng: random.Random) -> str:
    return rng.choice(["128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"])


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
        add_volumes(docs, node_names, shape.zones, random.Random(f"{seed}-volumes"))
    if shape.dra:
        add_devices(docs, node_names, random.Random(f"{seed}-dra"))
    if shape.config:
        docs[0]["config"] = random_config(random.Random(f"{seed}-config"))
    return docs
