"""`kubesched explain` for pods with ResourceClaims: the devices of each claim, node by node, and why none.

The devices explain reports come from the DynamicResources state of its own
analysis (before the cycle); the cycle then writes its allocation with PreBind.
The two must agree, and looking must change nothing (same placements, same
messages, same claims as `simulate`).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from dra_helpers import (
    CLASS,
    DRIVER,
    claim,
    doc_claim,
    doc_class,
    doc_node,
    doc_pod,
    doc_slice,
    doc_template,
    first_available,
    gpu,
    node_slice,
    request,
)
from rich.console import Console

from kubesched.cli import main
from kubesched.explain import explain
from kubesched.explain.claims import NOT_REACHABLE, ClaimOnNode
from kubesched.explain.model import Explanation
from kubesched.explain.render import render
from kubesched.plugins.dynamicresources.allocator import (
    Allocator,
    ClaimDiagnosis,
    DeviceClassLister,
    Features,
    RequestSupply,
    diagnose,
)
from kubesched.plugins.dynamicresources.pools import SliceIndex
from kubesched.scenario import parse_scenario
from kubesched.simulate.claims import claims_report
from kubesched.simulate.runner import Simulation
from kubesched.testing import make_node

ROOT = Path(__file__).resolve().parents[3]
NUMA = f"{DRIVER}/numa"


def _scenario(*docs: dict[str, Any]) -> Any:
    return parse_scenario(yaml.safe_dump_all([{"kind": "Scenario", "mode": "sequential"}, *docs]), "dra.yaml")


def _gpus(node: str, n: int, model: str = "a100", **attrs: Any) -> dict[str, Any]:
    return doc_slice(node, [gpu(f"gpu-{i}", model, **attrs) for i in range(n)])


def _on(ex: Explanation) -> dict[str, list[ClaimOnNode]]:
    assert ex.capture is not None
    return {r.name: r.claims for r in ex.capture.nodes if r.claims is not None}


def _ids(c: ClaimOnNode) -> list[str]:
    return [d.id for d in c.devices]


def _text(ex: Explanation) -> str:
    buf = io.StringIO()
    Console(file=buf, width=200, color_system=None).print(render(ex))
    return buf.getvalue()


def test_a_placed_pod_gets_the_devices_prebind_wrote_and_every_other_node_says_what_it_would_give() -> None:
    docs = [doc_class(), doc_node("g1", "8"), doc_node("g2", "32"), doc_node("cpu-only")]
    docs += [_gpus("g1", 2), _gpus("g2", 2), doc_template("one")]
    docs += [doc_pod("w0", templates={"gpu": "one"}), doc_pod("w1", templates={"gpu": "one"})]
    scenario = _scenario(*docs)
    ex = explain(scenario, "w1")
    assert ex.outcome.status == "Scheduled" and ex.outcome.node == "g2"
    assert ex.notes == []  # no "the analysis found ..., PreBind wrote ..." disagreement
    assert ex.claims is not None
    [mine] = ex.claims
    assert (mine.claim, mine.pod_claim, mine.template, mine.allocated_before) == (
        "default/w1-gpu-xxxxx",
        "gpu",
        "one",
        False,
    )
    simulated = Simulation(scenario)
    simulated.run()
    report = claims_report(simulated.cluster.store.list("ResourceClaim"))
    assert _ids(mine) == report["default/w1-gpu-xxxxx"]["devices"] == [f"{DRIVER}/g2/gpu-1"]
    assert [(d.request, d.driver, d.pool, d.device) for d in mine.devices] == [("gpu", DRIVER, "g2", "gpu-1")]
    on = _on(ex)
    # w0 holds g2/gpu-0: g1 would give its first GPU, g2 its second, the node without a slice none.
    assert _ids(on["g1"][0]) == [f"{DRIVER}/g1/gpu-0"]
    assert _ids(on["g2"][0]) == [f"{DRIVER}/g2/gpu-1"]
    assert on["cpu-only"][0].devices == []
    assert on["cpu-only"][0].reason == "request gpu: wants 1, no matching device here"
    assert on["cpu-only"][0].requests == [RequestSupply("gpu", CLASS, 1, 0, 0)]


def test_a_pending_pod_shows_per_node_which_request_is_short() -> None:
    docs = [doc_class(), doc_node("g1"), doc_node("g2"), doc_node("g3")]
    docs += [_gpus("g1", 1), _gpus("g2", 3), doc_template("one"), doc_template("two", count=2)]
    docs += [doc_pod("a", templates={"gpu": "one"}), doc_pod("b", templates={"gpu": "two"})]
    docs += [doc_pod("big", templates={"gpu": "two"})]
    ex = explain(_scenario(*docs), "big")
    assert ex.outcome.status == "Unschedulable"
    assert ex.claims is not None and [(c.claim, c.devices) for c in ex.claims] == [("default/big-gpu-xxxxx", [])]
    on = _on(ex)
    # a and b both went to g2 (it scores higher): its 3 GPUs are taken, g1's one is free but not enough.
    assert {n: cs[0].reason for n, cs in on.items()} == {
        "g1": "request gpu: wants 2, 1 of 1 matching devices free",
        "g2": "request gpu: wants 2, 0 of 3 matching devices free",
        "g3": "request gpu: wants 2, no matching device here",
    }
    assert on["g2"][0].requests == [RequestSupply("gpu", CLASS, 2, 3, 0)]
    doc = ex.to_dict()
    g2 = next(n for n in doc["nodes"] if n["name"] == "g2")
    assert g2["claims"] == [
        {
            "claim": "default/big-gpu-xxxxx",
            "podClaim": "gpu",
            "template": "two",
            "allocatedBefore": False,
            "devices": [],
            "reason": "request gpu: wants 2, 0 of 3 matching devices free",
            "requests": [{"request": "gpu", "deviceClass": CLASS, "wanted": 2, "matching": 3, "free": 0}],
        }
    ]
    text = _text(ex)
    assert "Claims, node by node: the devices they would get, or why none" in text
    assert "default/big-gpu-xxxxx: request gpu: wants 2, 1 of 1 matching devices free" in text


def test_constraints_claims_competing_and_all_mode_are_told_apart() -> None:
    docs = [doc_class(), doc_node("split"), doc_node("three")]
    docs += [doc_slice("split", [gpu("gpu-0", numa=0), gpu("gpu-1", numa=1)]), _gpus("three", 3, numa=0)]
    docs += [doc_template("pair", count=2, match=NUMA), doc_template("two", count=2)]
    docs += [doc_template("every", mode="All")]
    # numa-pair fits "three" only; two-twos needs 4 GPUs on one node; "every" wants all GPUs of a node.
    docs += [doc_pod("numa-pair", cpu="30", templates={"gpu": "pair"})]
    docs += [doc_pod("two-twos", templates={"x": "two", "y": "two"})]
    docs += [doc_pod("every", templates={"gpu": "every"})]
    scenario = _scenario(*docs)
    pair = _on(explain(scenario, "numa-pair"))
    assert pair["split"][0].reason == f"enough matching devices are free, but none that satisfy matchAttribute {NUMA}"
    assert pair["split"][0].requests == [RequestSupply("gpu", CLASS, 2, 2, 2)]
    assert _ids(pair["three"][0]) == [f"{DRIVER}/three/gpu-0", f"{DRIVER}/three/gpu-1"]
    twos = explain(scenario, "two-twos")
    on = _on(twos)
    # On "three" only gpu-2 is left: neither claim fits. On "split" each claim alone fits, not both.
    assert [c.reason for c in on["split"]] == ["fits on its own, but not together with the pod's other claims"] * 2
    assert [c.pod_claim for c in on["split"]] == ["x", "y"]
    assert [c.reason for c in on["three"]] == ["request gpu: wants 2, 1 of 3 matching devices free"] * 2
    every_ex = explain(scenario, "every")
    every = _on(every_ex)
    assert every["three"][0].reason == "request gpu: wants all 3 matching devices, 2 in use"
    assert every["three"][0].requests == [RequestSupply("gpu", CLASS, None, 3, 1)]
    # "split" is untouched (two-twos did not fit anywhere): all of its GPUs go to the claim.
    assert every_ex.outcome.node == "split"
    assert _ids(every["split"][0]) == [f"{DRIVER}/split/gpu-0", f"{DRIVER}/split/gpu-1"]
    assert [d.request for d in every["split"][0].devices] == ["gpu", "gpu"]


def test_a_shared_claim_allocated_elsewhere_and_the_pods_own_claim_on_that_node() -> None:
    docs = [doc_class(), doc_node("a"), doc_node("b"), _gpus("a", 2), _gpus("b", 2)]
    docs += [doc_claim("team"), doc_template("one")]
    docs += [doc_pod("t1", claims={"team": "team"})]
    docs += [doc_pod("t2", templates={"own": "one"}, claims={"team": "team"})]
    scenario = _scenario(*docs)
    first = explain(scenario, "t1")
    assert first.outcome.node is not None
    home = first.outcome.node
    away = "a" if home == "b" else "b"
    ex = explain(scenario, "t2")
    assert ex.outcome.node == home and ex.notes == []
    assert ex.claims is not None
    own, team = ex.claims  # in spec.resourceClaims order: templates first in doc_pod
    assert (team.claim, team.template, team.allocated_before) == ("default/team", None, True)
    assert _ids(team) == [f"{DRIVER}/{home}/gpu-0"]
    assert _ids(own) == [f"{DRIVER}/{home}/gpu-1"]
    on = _on(ex)
    # Elsewhere the shared claim cannot follow; the pod's own claim would still get that node's first GPU.
    assert on[away][1].reason == NOT_REACHABLE and on[away][1].devices == []
    assert _ids(on[away][0]) == [f"{DRIVER}/{away}/gpu-0"]
    text = _text(ex)
    assert f"Claims: the devices each claim gets on {home}" in text
    assert "named claim, allocated earlier" in text and "template one" in text


def test_pods_without_claims_have_none_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(ROOT / "examples" / "cluster.yaml"), "web-1", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["claims"] is None
    assert all(n["claims"] is None for n in doc["nodes"])
    assert main(["explain", str(ROOT / "examples" / "dra" / "cluster.yaml"), "train-pair", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    [c] = doc["claims"]
    assert [(d["pool"], d["device"]) for d in c["devices"]] == [("gpu-a100", "gpu-0"), ("gpu-a100", "gpu-1")]
    assert c["template"] == "a100-pair" and c["allocatedBefore"] is False


def _dra_scenarios() -> list[Path]:
    cases = sorted((ROOT / "tests" / "conformance" / "cases" / "dra").glob("*.yaml"))
    return [ROOT / "examples" / "dra" / "cluster.yaml", *cases]


@pytest.mark.parametrize("path", _dra_scenarios(), ids=lambda p: "examples-dra" if "examples" in p.parts else p.stem)
def test_looking_changes_nothing_and_agrees_with_what_prebind_wrote(path: Path) -> None:
    from kubesched.scenario import load_scenario

    scenario = load_scenario(str(path))
    sim = Simulation(scenario)
    result = sim.run()
    report = claims_report(sim.cluster.store.list("ResourceClaim"))
    for o in result.results:
        if o.attempt is None:
            continue  # never tried (held at PreEnqueue): nothing to explain
        ex = explain(scenario, o.key)
        assert (ex.outcome.status, ex.outcome.node, ex.outcome.message) == (o.status, o.node, o.message), o.key
        assert ex.notes == [], o.key
        if o.status != "Scheduled" or ex.claims is None:
            continue
        for c in ex.claims:
            assert _ids(c) == report[c.claim]["devices"], (o.key, c.claim)


# ---------------------------------------------------------------- the allocator's diagnosis itself

GPU = "gpu"


def _allocator(slices: list[Any], allocated: set[Any] | None = None) -> Allocator:
    from dra_helpers import device_class

    klass = device_class(GPU, f'device.driver == "{DRIVER}"')[1]
    return Allocator(Features(), allocated or set(), DeviceClassLister({GPU: klass}.get), SliceIndex(slices))


def test_diagnose_counts_subrequests_and_lets_admin_access_use_held_devices() -> None:
    node = make_node("n1")
    a = _allocator([node_slice("n1", 2)[1]], allocated={(DRIVER, "n1", "gpu-0"), (DRIVER, "n1", "gpu-1")})
    fa = first_available("gpu", ("big", GPU, 3, []), ("small", GPU, 1, []))
    admin = request("watch", mode="All", admin=True)
    [short, watcher] = diagnose(a, node, [claim("c", fa)[1], claim("w", admin)[1]])
    assert short == ClaimDiagnosis(
        False,
        [RequestSupply("gpu/big", GPU, 3, 2, 0), RequestSupply("gpu/small", GPU, 1, 2, 0)],
    )
    assert watcher.fits_alone and watcher.requests == [RequestSupply("watch", GPU, None, 2, 2, admin_access=True)]
    broken = claim("b", request(selectors=["device.attributes.nope"]))[1]
    [err] = diagnose(a, node, [broken])
    assert not err.fits_alone and "CEL" in err.error
