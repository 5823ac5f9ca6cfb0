"""A random scheduler configuration for a random cluster's header: scoring strategy, weights, disabled
score plugins and plugin args, all of which kube-scheduler accepts."""

from __future__ import annotations

import random
from typing import Any

from kubesched.simulate.generate.shape import ZONE

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
