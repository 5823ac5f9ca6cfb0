"""The DRA add-on of a random cluster: GPUs in per-node ResourceSlices, a DeviceClass, and claims and
claim templates on pods, for DynamicResources to decide on."""

from __future__ import annotations

import random
from typing import Any

from kubesched.simulate.generate.shape import pods_of

GPU_MODELS = ("t4", "l4", "a100")


def _device_selector(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.5:
        return {"cel": {"expression": f'device.attributes["gpu.example.com"].model == "{rng.choice(GPU_MODELS)}"'}}
    gib = rng.choice([16, 24])
    return {"cel": {"expression": f'device.capacity["gpu.example.com"].memory.compareTo(quantity("{gib}Gi")) >= 0'}}


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


def add_devices(docs: list[dict[str, Any]], node_names: list[str], rng: random.Random) -> None:
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
    for pod in pods_of(docs):
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
