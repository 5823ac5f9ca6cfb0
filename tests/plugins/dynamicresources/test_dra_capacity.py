"""`kubesched capacity` with devices: replicas get a claim each from a template, or share a named claim."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from dra_helpers import DRIVER, doc_claim, doc_class, doc_node, doc_pod, doc_slice, doc_template, gpu

from kubesched.capacity import FAILED_SCHEDULING, LIMIT_REACHED, CapacityResult, capacity
from kubesched.cli import main
from kubesched.scenario import parse_scenario

A100 = f'device.attributes["{DRIVER}"].model == "a100"'


def _pod(name: str = "trainer", *, template: str | None = None, claim: str | None = None) -> dict[str, Any]:
    return doc_pod(name, templates={"gpu": template} if template else None, claims={"gpu": claim} if claim else None)


def _gpu_cluster(models: dict[str, list[str]], *extra: dict[str, Any], cpu: str = "32", pods: str = "110") -> list[Any]:
    docs: list[Any] = [{"kind": "Scenario", "mode": "sequential"}, doc_class()]
    for node, ms in models.items():
        docs += [doc_node(node, cpu, pods), doc_slice(node, [gpu(f"gpu-{i}", m) for i, m in enumerate(ms)])]
    return [*docs, *extra]


def _capacity(docs: list[Any], pod: dict[str, Any], max_replicas: int | None = None) -> tuple[CapacityResult, Any]:
    """The capacity answer, and the store the replicas were placed in (claims included)."""
    from kubesched.simulate import runner

    sims: list[Any] = []
    real = runner.Simulation.__init__

    def keep(self: Any, *a: Any, **kw: Any) -> None:
        real(self, *a, **kw)
        sims.append(self)

    scenario = parse_scenario(yaml.safe_dump_all(docs), "cluster.yaml")
    template = parse_scenario(yaml.safe_dump(pod), "pod.yaml").manifests[0]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner.Simulation, "__init__", keep)
        result = capacity(scenario, template, max_replicas=max_replicas)
    return result, sims[0].cluster.store


def _exhausted(n: int) -> str:
    return (
        f"0/{n} nodes are available: {n} cannot allocate all claims. still not schedulable, "
        f"preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
    )


def _allocations(store: Any) -> dict[str, tuple[list[str], list[str]]]:
    """Allocated claims: name -> (devices, pods in reservedFor)."""
    out = {}
    for c in store.list("ResourceClaim"):
        alloc = c.status.allocation
        if alloc is not None:
            devices = [f"{r.pool}/{r.device}" for r in alloc.devices.results]
            out[c.metadata.name] = (devices, [r.name for r in c.status.reserved_for])
    return out


def test_each_replica_gets_its_own_claim_until_the_gpus_run_out() -> None:
    docs = _gpu_cluster({"n1": ["a100"] * 4, "n2": ["a100"] * 4}, doc_template("one-gpu"))
    result, store = _capacity(docs, _pod(template="one-gpu"))
    assert result.replicas == 8
    assert result.nodes == {"n1": 4, "n2": 4}
    assert (result.stop_reason, result.stop_message) == (FAILED_SCHEDULING, _exhausted(2))
    assert result.failed_pod == "default/trainer-8"
    assert result.resource_claims == [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    allocated = _allocations(store)
    assert sorted(allocated) == [f"trainer-{i}-gpu-xxxxx" for i in range(8)]
    devices = [d for ds, _ in allocated.values() for d in ds]
    assert sorted(devices) == sorted(f"{n}/gpu-{i}" for n in ("n1", "n2") for i in range(4))
    assert all(pods == [name.removesuffix("-gpu-xxxxx")] for name, (_, pods) in allocated.items())
    # The replica that did not fit has its claim, unallocated, as the controller leaves it.
    last = store.find("ResourceClaim", "default/trainer-8-gpu-xxxxx")
    assert last is not None and last.status.allocation is None


def test_selectors_and_counts_decide_how_many_fit() -> None:
    models = {"n1": ["a100", "t4", "a100"], "n2": ["t4", "t4", "a100"], "n3": ["t4"]}
    docs = _gpu_cluster(models, doc_template("a100", selector=A100), doc_template("pair", count=2))
    one, _ = _capacity(docs, _pod(template="a100"))
    assert (one.replicas, one.nodes) == (3, {"n1": 2, "n2": 1, "n3": 0})
    assert one.stop_message == _exhausted(3)
    # Two GPUs of any model per replica, on one node: 7 GPUs, but only 2 pairs (one GPU left on each node).
    pairs, store = _capacity(docs, _pod(template="pair"))
    assert (pairs.replicas, pairs.nodes) == (2, {"n1": 1, "n2": 1, "n3": 0})
    assert pairs.stop_message == _exhausted(3)
    assert sorted(ds for ds, _ in _allocations(store).values()) == [["n1/gpu-0", "n1/gpu-1"], ["n2/gpu-0", "n2/gpu-1"]]


def test_max_limits_the_replicas_and_cpu_can_end_it_before_the_devices() -> None:
    docs = _gpu_cluster({"n1": ["a100"] * 4}, doc_template("one-gpu"), cpu="2")
    limited, _ = _capacity(docs, _pod(template="one-gpu"), max_replicas=1)
    assert (limited.replicas, limited.stop_reason) == (1, LIMIT_REACHED)
    by_cpu, _ = _capacity(docs, _pod(template="one-gpu"))
    assert by_cpu.replicas == 2
    assert by_cpu.stop_message.startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_replicas_share_a_named_claim_on_the_node_it_was_allocated_on() -> None:
    docs = _gpu_cluster({"n1": ["a100"], "n2": ["a100"]}, doc_claim("team"), cpu="4")
    result, store = _capacity(docs, _pod(claim="team"))
    # The first replica allocates the claim on one of the two equal nodes (a tie, picked with seed 0);
    # every later one follows it there until that node's cpu is used up: the other node's GPU stays free.
    node = next(n for n, k in result.nodes.items() if k)
    assert result.replicas == 4 and result.nodes[node] == 4
    assert result.resource_claims == [{"name": "gpu", "resourceClaimName": "team"}]
    assert result.stop_message == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 resourceclaim not available on the node. "
        "still not schedulable, preemption: 0/2 nodes are available: 1 No preemption victims found for "
        "incoming pod, 1 Preemption is not helpful for scheduling."
    )
    assert _allocations(store) == {"team": ([f"{node}/gpu-0"], [f"trainer-{i}" for i in range(4)])}


def test_a_shared_claim_takes_at_most_256_consumers() -> None:
    docs = _gpu_cluster({"n1": ["a100"]}, doc_claim("team"), cpu="1000", pods="1000")
    result, store = _capacity(docs, _pod(claim="team"))
    assert result.replicas == 256
    # resourceclaim.CanBeReserved: reservedFor is full, PreFilter rejects the pod before any Filter.
    assert result.stop_message == (
        "0/1 nodes are available: resourceclaim in use. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    assert len(store.find("ResourceClaim", "default/team").status.reserved_for) == 256


def test_long_pod_names_still_give_every_replica_its_own_claim() -> None:
    name = "a-very-long-training-job-name-for-the-capacity-check-x"
    docs = _gpu_cluster({"n1": ["a100"] * 3}, doc_template("one-gpu"))
    result, store = _capacity(docs, _pod(name, template="one-gpu"))
    assert result.replicas == 3
    names = sorted(c.metadata.name for c in store.list("ResourceClaim"))
    # generateName cut "<pod>-<i>-gpu-" to the same 57 characters for every replica.
    base = "a-very-long-training-job-name-for-the-capacity-check-gp"
    assert names == [f"{base}xxxx1", f"{base}xxxx2", f"{base}xxxx3", f"{base}xxxxx"]


def test_cli_json_and_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = _gpu_cluster({"n1": ["a100"] * 2, "n2": ["t4"] * 2}, doc_template("a100", selector=A100))
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(docs))
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(_pod(template="a100")))
    args = ["capacity", str(tmp_path / "cluster.yaml"), "--pod", str(tmp_path / "pod.yaml")]
    assert main([*args, "-o", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["replicas"] == 2 and got["nodes"] == {"n1": 2, "n2": 0}
    assert got["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "a100"}]
    assert got["stop"] == {"reason": "FailedScheduling", "message": _exhausted(2), "pod": "default/trainer-2"}
    monkeypatch.setenv("COLUMNS", "200")
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "resourceClaims: gpu (a claim per replica from template a100)" in out
    assert "The cluster can schedule 2 instance(s) of the pod default/trainer." in out
