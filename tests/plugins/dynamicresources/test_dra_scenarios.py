"""Whole scheduling runs with claims: several GPU nodes, shared claims, constraints, exhaustion.

They run the real scheduler on the embedded cluster, whose simulation creates
each pod's claims from its ResourceClaimTemplates as the resourceclaim
controller would.
"""

from __future__ import annotations

from typing import Any

import yaml
from dra_helpers import DRIVER, gpu

import kubesched.api.resource  # noqa: F401
from kubesched.scenario import parse_scenario
from kubesched.simulate import runner
from kubesched.simulate.claims import claims_report


def _node(name: str, cpu: str = "16") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": cpu, "memory": "64Gi", "pods": "110"}},
    }


def _slice(node: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpu"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
}


def _claim_spec(count: int = 1, selector: str | None = None, match: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    devices: dict[str, Any] = {"requests": [{"name": "gpu", "exactly": exactly}]}
    if match:
        devices["constraints"] = [{"matchAttribute": match}]
    return {"devices": devices}


def _claim(name: str, **kw: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": _claim_spec(**kw),
    }


def _template(name: str, **kw: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": _claim_spec(**kw)},
    }


def _pod(name: str, *, claim: str | None = None, template: str | None = None, cpu: str = "1") -> dict[str, Any]:
    rc = (
        {"name": "gpu", "resourceClaimName": claim} if claim else {"name": "gpu", "resourceClaimTemplateName": template}
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu}}}
            ],
            "resourceClaims": [rc],
        },
    }


def _run(docs: list[dict[str, Any]], mode: str = "sequential") -> tuple[dict[str, Any], dict[str, Any]]:
    text = yaml.safe_dump_all([{"kind": "Scenario", "mode": mode}, *docs])
    sim = runner.Simulation(parse_scenario(text, "dra-test.yaml"))
    result = sim.run()
    pods = {o.key.split("/")[1]: o for o in result.results}
    return pods, claims_report(sim.cluster.store.list("ResourceClaim"))


def _exhausted(n: int) -> str:
    return (
        f"0/{n} nodes are available: {n} cannot allocate all claims. still not schedulable, "
        f"preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
    )


def test_gpus_of_several_nodes_run_out() -> None:
    docs = [GPU_CLASS, _node("g1", "4"), _node("g2", "8"), _node("g3", "12")]
    docs += [_slice("g1", [gpu("gpu-0")]), _slice("g2", [gpu("gpu-0"), gpu("gpu-1")])]
    docs += [_template("one")] + [_pod(f"w{i}", template="one") for i in range(4)]
    pods, claims = _run(docs)
    assert {k: v.node for k, v in pods.items()} == {"w0": "g2", "w1": "g2", "w2": "g1", "w3": None}
    assert pods["w3"].status == "Unschedulable"
    assert pods["w3"].message == _exhausted(3)
    assert claims["default/w0-gpu-xxxxx"]["devices"] == [f"{DRIVER}/g2/gpu-0"]
    assert claims["default/w1-gpu-xxxxx"]["devices"] == [f"{DRIVER}/g2/gpu-1"]
    assert claims["default/w2-gpu-xxxxx"]["devices"] == [f"{DRIVER}/g1/gpu-0"]
    assert "default/w3-gpu-xxxxx" not in claims


def test_claim_shared_by_pods_keeps_them_on_one_node() -> None:
    docs = [GPU_CLASS, _node("a"), _node("b", "32")]
    docs += [_slice("a", [gpu("gpu-0")]), _slice("b", [gpu("gpu-0")]), _claim("team")]
    docs += [_pod("t1", claim="team"), _pod("t2", claim="team"), _pod("t3", claim="team")]
    pods, claims = _run(docs)
    assert {v.node for v in pods.values()} == {"b"}
    assert claims == {
        "default/team": {
            "node": "b",
            "devices": [f"{DRIVER}/b/gpu-0"],
            "requests": ["gpu"],
            "reservedFor": ["default/t1", "default/t2", "default/t3"],
        }
    }


def test_match_attribute_constraint_picks_a_node_with_a_matching_pair() -> None:
    numa = f"{DRIVER}/numa"
    docs = [GPU_CLASS, _node("split", "32"), _node("paired", "8")]
    docs += [_slice("split", [gpu("gpu-0", numa=0), gpu("gpu-1", numa=1)])]
    docs += [_slice("paired", [gpu("gpu-0", numa=0), gpu("gpu-1", numa=1), gpu("gpu-2", numa=1)])]
    docs += [_template("pair", count=2, match=numa)]
    docs += [_pod("p1", template="pair"), _pod("p2", template="pair")]
    pods, claims = _run(docs)
    assert pods["p1"].node == "paired"
    assert claims["default/p1-gpu-xxxxx"]["devices"] == [f"{DRIVER}/paired/gpu-1", f"{DRIVER}/paired/gpu-2"]
    assert pods["p2"].status == "Unschedulable"
    assert pods["p2"].message == _exhausted(2)


def test_device_taken_by_an_earlier_pod_sends_the_next_one_elsewhere() -> None:
    a100 = f'device.attributes["{DRIVER}"].model == "a100"'
    docs = [GPU_CLASS, _node("big", "32"), _node("small", "4")]
    docs += [_slice("big", [gpu("gpu-0", "a100"), gpu("gpu-1", "t4")]), _slice("small", [gpu("gpu-0", "a100")])]
    docs += [_template("a100", selector=a100)]
    docs += [_pod("first", template="a100"), _pod("second", template="a100"), _pod("third", template="a100")]
    pods, claims = _run(docs)
    assert (pods["first"].node, pods["second"].node, pods["third"].node) == ("big", "small", None)
    assert pods["first"].scores is not None  # both nodes were feasible and scored
    assert claims["default/second-gpu-xxxxx"]["devices"] == [f"{DRIVER}/small/gpu-0"]
    assert pods["third"].message == _exhausted(2)


def test_missing_class_and_missing_claim() -> None:
    bad = _claim("bad")
    bad["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "tpu"
    docs = [GPU_CLASS, _node("n1"), _slice("n1", [gpu("gpu-0")]), bad, _pod("p-bad", claim="bad")]
    docs += [_pod("p-missing", claim="missing")]
    pods, _ = _run(docs)
    assert pods["p-bad"].message == (
        "0/1 nodes are available: request gpu: device class tpu does not exist. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    assert (pods["p-missing"].status, pods["p-missing"].message) == ("Pending", None)


def test_batch_gives_scarce_devices_by_priority() -> None:
    high_class = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "hi"}}
    high_class["value"] = 100
    docs = [GPU_CLASS, high_class, _node("n1"), _slice("n1", [gpu("gpu-0")]), _template("one")]
    low, high = _pod("low", template="one"), _pod("high", template="one")
    high["spec"]["priorityClassName"] = "hi"
    pods, claims = _run([*docs, low, high], mode="batch")
    assert (pods["high"].node, pods["low"].node) == ("n1", None)
    assert list(claims) == ["default/high-gpu-xxxxx"]
