"""Several profiles in one scheduler (profile.NewMap): each its own framework, one queue and one cache between
them; a pod whose schedulerName names no profile is not this scheduler's business."""

from __future__ import annotations

from typing import Any

from kubesched.scenario import Manifest, Scenario
from kubesched.simulate.runner import Simulation
from kubesched.testing import make_node, make_pod, placements, simulate

TWO_PROFILES: dict[str, Any] = {
    "profiles": [
        {"schedulerName": "default-scheduler"},
        {
            "schedulerName": "packer",
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}]}},
                }
            ],
        },
    ]
}


def _pod(name: str, cpu: str, scheduler: str = "default-scheduler", **kw: Any) -> Any:
    return make_pod(name, cpu=cpu, spec={"schedulerName": scheduler}, **kw)


def test_each_profile_decides_with_its_own_plugins() -> None:
    nodes = [make_node("n1", cpu="4"), make_node("n2", cpu="4")]
    running = make_pod("running", cpu="2", node="n1")
    pods = [_pod("spread", "1"), _pod("pack", "1", "packer")]
    # LeastAllocated (default profile) picks the emptier node, MostAllocated (packer) the fuller one.
    assert placements(simulate([*nodes, running, *pods], TWO_PROFILES)) == {
        "default/spread": "n2",
        "default/pack": "n1",
    }


def test_pods_of_no_profile_are_ignored() -> None:
    objects = [make_node("n1", cpu="4"), _pod("mine", "1", "packer"), _pod("stranger", "1", "other-scheduler")]
    scenario = Scenario(
        source="<test>",
        config={"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", **TWO_PROFILES},
    )
    scenario.manifests = [Manifest(type(o).__name__, o, {}, i) for i, o in enumerate(objects)]
    sim = Simulation(scenario)
    result = sim.run()
    by_key = {o.key: o for o in result.results}
    assert by_key["default/mine"].status == "Scheduled"
    stranger = by_key["default/stranger"]
    # Never queued, never tried, never told anything: no condition, no event, no attempt.
    assert (stranger.status, stranger.node, stranger.message, stranger.attempt) == ("Pending", None, None, None)
    assert sim.scheduler.queue is not None and sim.scheduler.queue.find(stranger_uid(sim)) is None
    assert not [e for e in sim.cluster.client.events.events if e.regarding == "default/stranger"]


def stranger_uid(sim: Simulation) -> str:
    return sim.cluster.store.get("Pod", "default/stranger").metadata.uid


def test_profiles_share_one_cache() -> None:
    # One node with room for one pod: the second profile sees what the first one placed.
    objects = [make_node("n1", cpu="2"), _pod("first", "2"), _pod("second", "2", "packer")]
    result = simulate(objects, TWO_PROFILES)
    by_key = {o.key: o for o in result.results}
    assert by_key["default/first"].node == "n1"
    assert by_key["default/second"].status == "Unschedulable"
    assert by_key["default/second"].message.startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_profiles_share_one_queue() -> None:
    # Both pods arrive at once; one queue sorts them together, so the higher priority one (of the other
    # profile, created second) takes the only place.
    objects = [
        make_node("n1", cpu="2"),
        _pod("low", "2", priority=1),
        _pod("high", "2", "packer", priority=1000),
    ]
    result = simulate(objects, TWO_PROFILES, mode="batch")
    assert placements(result) == {"default/low": None, "default/high": "n1"}
    sim_profiles = {o.key: o.attempt for o in result.results}
    assert sim_profiles["default/low"] is not None  # tried, after "high", and found the node full
