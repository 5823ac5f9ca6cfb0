"""The Coscheduling example plugin: a PodGroup binds all of minMember pods or none, on the virtual clock."""

from __future__ import annotations

import textwrap
import tomllib
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
from kubesched_examples.coscheduling import Coscheduling, CoschedulingArgs
from kubesched_examples.podgroup import POD_GROUP_LABEL, PodGroup

from kubesched.api.decode import decode
from kubesched.cluster.clock import EPOCH
from kubesched.config import load_config_mapping
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.scenario import load_scenario, parse_scenario
from kubesched.simulate.runner import Simulation
from kubesched.testing import Env, make_node, make_pod, placements, simulate

REF = "kubesched_examples.coscheduling:Coscheduling"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plugins"
SCENARIOS = EXAMPLES / "scenarios"


def _config(args: dict[str, Any] | None = None, name: str = REF) -> dict[str, Any]:
    return {
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"multiPoint": {"enabled": [{"name": name}], "disabled": [{"name": "PrioritySort"}]}},
                "pluginConfig": [{"name": name, "args": args or {}}],
            }
        ]
    }


def _group(name: str, min_member: int, timeout: int | None = None, **spec: Any) -> PodGroup:
    raw: dict[str, Any] = {"metadata": {"name": name, "namespace": "default"}, "spec": {"minMember": min_member}}
    if timeout is not None:
        raw["spec"]["scheduleTimeoutSeconds"] = timeout
    raw["spec"].update(spec)
    return decode("PodGroup", raw)


def _member(name: str, group: str, cpu: str = "1", **kw: Any) -> Any:
    return make_pod(name, cpu=cpu, labels={POD_GROUP_LABEL: group}, **kw)


def _by_key(result: Any) -> dict[str, Any]:
    return {o.key: o for o in result.results}


# ---------------------------------------------------------------- packaging


def test_entry_points_are_the_packages_own() -> None:
    project = tomllib.loads((EXAMPLES / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["kubesched.plugins"] == {
        "Coscheduling": "kubesched_examples.coscheduling:Coscheduling",
        "GPUPacking": "kubesched_examples.gpu_packing:GPUPacking",
    }


# ---------------------------------------------------------------- the example scenario (README)


def test_gang_scenario_all_or_nothing(installed: Path) -> None:
    sim = Simulation(
        load_scenario(SCENARIOS / "gang.yaml"),
        load_config_mapping(__import__("yaml").safe_load((SCENARIOS / "gang-config.yaml").read_text())),
    )
    out = _by_key(sim.run())
    # a-train fits whole: all three bound.
    assert all(out[f"default/a-train-{i}"].status == "Scheduled" for i in range(3))
    # b-sweep (4 x 3 cpu) fits only partly: none bound, the group refused for podGroupBackoffSeconds.
    for i in range(4):
        o = out[f"default/b-sweep-{i}"]
        assert o.node is None and o.status == "Unschedulable"
        assert o.message.startswith("0/4 nodes are available: podGroup default/b-sweep failed recently.")
    # c-wait misses its gated third member: the two others wait 20 s at Permit, then both give up.
    c0, c1, c2 = (out[f"default/c-wait-{i}"] for i in range(3))
    assert c0.message == "0/1 nodes are available: 1 rejected due to timeout after waiting 20s at plugin Coscheduling."
    assert c1.message == "0/1 nodes are available: 1 rejection in Unreserve."
    assert c0.attempt.time == c1.attempt.time == 20.0
    assert c2.status == "SchedulingGated"
    # A pod of no group is scheduled as usual.
    assert out["default/web"].status == "Scheduled"


# ---------------------------------------------------------------- Permit: wait, allow, time out


def test_group_waits_at_permit_until_min_member_then_binds_together() -> None:
    pg = _group("job", 3, timeout=30)
    gated = _member("job-2", "job", spec={"schedulingGates": [{"name": "example.com/later"}]})
    objects = [make_node("n1", cpu="8"), pg, _member("job-0", "job"), _member("job-1", "job"), gated]
    sim = _simulation(objects, _config(), mode="batch")
    for m in sim.scenario.pending_pods():
        sim._create(m)
    sched = sim.scheduler
    while sched.schedule_one():
        pass
    # Two members assumed and waiting at Permit, nothing bound yet.
    fw = next(iter(sched.profiles.values()))
    assert sorted(wp.pod.name for wp in fw.waiting_pods) == ["job-0", "job-1"]
    assert _bound(sim) == {}
    # The third member's gate is lifted at t=10 (before the 30 s timeout): all three bind at once.
    sim.cluster.clock.advance_to(10.0)
    pod = sim.cluster.store.get("Pod", "default/job-2")
    sim.cluster.store.update(
        "Pod", msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, scheduling_gates=[]))
    )
    sim.run_until_settled()
    assert _bound(sim) == {"default/job-0": "n1", "default/job-1": "n1", "default/job-2": "n1"}
    assert sim.cluster.clock.now() == 10.0


def test_all_or_nothing_under_a_timeout() -> None:
    pg = _group("job", 3, timeout=30)
    gated = _member("job-2", "job", spec={"schedulingGates": [{"name": "example.com/later"}]})
    objects = [make_node("n1", cpu="8"), pg, _member("job-0", "job"), _member("job-1", "job"), gated]
    sim = _simulation(objects, _config({"permitWaitingTimeSeconds": 5}), mode="batch")
    out = _by_key(sim.run())
    # Both members that could be placed were held, then released when the group's timeout (not the args') ran out.
    assert out["default/job-0"].node is None and out["default/job-1"].node is None
    assert out["default/job-0"].message == (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 30s at plugin " + REF + "."
    )
    assert out["default/job-1"].message == "0/1 nodes are available: 1 rejection in Unreserve."
    assert _bound(sim) == {}
    # On the virtual clock: the rejection came 30 s in, and nothing happened after it.
    failed = [e for e in sim.cluster.client.events.events if e.reason == "FailedScheduling"]
    assert {e.regarding for e in failed} == {"default/job-0", "default/job-1"}
    assert {e.time for e in failed} == {EPOCH + timedelta(seconds=30)}
    assert sim.cluster.clock.now() == 30.0
    # Without the plugin both would have been bound right away.
    assert placements(simulate(objects, None, mode="batch"))["default/job-0"] == "n1"


def test_timeout_falls_back_to_the_args_then_to_60s() -> None:
    handle = Env([make_node("n1")]).handle
    plugin = Coscheduling(CoschedulingArgs(permit_waiting_time_seconds=7), handle)
    assert plugin._wait_time(_group("g", 2)) == 7.0
    assert plugin._wait_time(_group("g", 2, timeout=3)) == 3.0
    assert Coscheduling(CoschedulingArgs(permit_waiting_time_seconds=0), handle)._wait_time(_group("g", 2)) == 60.0


def test_permit_without_podgroup_object_is_refused() -> None:
    env = Env([make_node("n1")])
    plugin = Coscheduling(CoschedulingArgs(), env.handle)
    s, _ = plugin.permit(CycleState(), PodInfo(_member("p", "ghost")), "n1")
    assert s is not None and s.code == Code.UNSCHEDULABLE and s.message() == "PodGroup not found"
    assert plugin.permit(CycleState(), PodInfo(make_pod("loner")), "n1") == (None, 0.0)


# ---------------------------------------------------------------- PreEnqueue / PreFilter / PostFilter


def test_incomplete_group_waits_before_the_queue_and_its_last_member_brings_the_others() -> None:
    objects = [make_node("n1", cpu="8"), _group("job", 3), *(_member(f"job-{i}", "job") for i in range(3))]
    # Sequential: job-0 and job-1 arrive while the group is short and are held by PreEnqueue (never tried);
    # job-2 completes it, waits at Permit and activates its siblings, which then complete the group.
    result = simulate(objects, _config(), mode="sequential")
    assert placements(result) == {f"default/job-{i}": "n1" for i in range(3)}
    # With only two of the three pods, nothing is even attempted.
    result = simulate(objects[:-1], _config(), mode="sequential")
    assert [(o.status, o.attempt) for o in result.results] == [("Pending", None), ("Pending", None)]


def test_pre_filter_counts_siblings_and_checks_min_resources() -> None:
    pods = [_member("job-0", "job"), _member("job-1", "job")]
    env = Env([make_node("n1", cpu="4"), make_node("n2", cpu="4")], objects=[("Pod", p) for p in pods])
    plugin = Coscheduling(CoschedulingArgs(), env.handle)
    nodes = env.snapshot.nodes
    for obj in (
        _group("job", 3),
        _group("big", 2, minResources={"cpu": "9"}),
        _group("ok", 2, minResources={"cpu": 8}),
    ):
        env.client.create("PodGroup", obj)
    _, s = plugin.pre_filter(CycleState(), PodInfo(pods[0]), nodes)
    assert s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert (
        s.message()
        == "pre-filter pod job-0 cannot find enough sibling pods, current pods number: 2, minMember of group: 3"
    )
    for group, members in (("big", 2), ("ok", 2)):
        for i in range(members):
            env.client.create("Pod", _member(f"{group}-{i}", group))
    _, s = plugin.pre_filter(CycleState(), PodInfo(_member("big-0", "big")), nodes)
    assert s is not None and s.message() == "resource gap: map[cpu:1]"
    assert plugin.pre_filter(CycleState(), PodInfo(_member("ok-0", "ok")), nodes) == (None, None)


def test_group_that_cannot_fit_whole_binds_nothing_and_backs_off() -> None:
    # Two 4-cpu nodes, a group of three 3-cpu pods: two fit, the third never does.
    objects = [make_node("n1", cpu="4"), make_node("n2", cpu="4"), _group("job", 3)]
    objects += [_member(f"job-{i}", "job", cpu="3") for i in range(3)]
    out = _by_key(simulate(objects, _config({"podGroupBackoffSeconds": 60}), mode="batch"))
    assert [o.node for o in out.values()] == [None, None, None]
    assert any(
        "PodGroup default/job gets rejected due to Pod job-2 is unschedulable even after PostFilter" in o.message
        for o in out.values()
    )
    # Two were held at Permit and released at once when the third failed; the third then found the group refused.
    held = "0/1 nodes are available: 1 optimistic rejection in PostFilter."
    assert [out[f"default/job-{i}"].message for i in range(2)] == [held, held]
    assert out["default/job-2"].message.startswith("0/2 nodes are available: podGroup default/job failed recently.")
    # Without the plugin two of the three would be bound.
    assert sum(n is not None for n in placements(simulate(objects, None, mode="batch")).values()) == 2


def test_without_backoff_a_group_that_cannot_fit_is_reported_as_a_livelock() -> None:
    objects = [make_node("n1", cpu="4"), make_node("n2", cpu="4"), _group("job", 3)]
    objects += [_member(f"job-{i}", "job", cpu="3") for i in range(3)]
    with pytest.raises(InputError) as err:
        simulate(objects, _config(), mode="batch")
    msg = str(err.value)
    assert msg.startswith("<test>: the scheduler cannot settle: ")
    assert "scheduling attempts at t=0s without time passing, pods retried over and over: default/job-" in msg
    assert "is unschedulable even after PostFilter" in msg


# ---------------------------------------------------------------- QueueSort


def _queued(pod: Any, seq: int, t: float = 0.0) -> QueuedPodInfo:
    q = QueuedPodInfo(PodInfo(pod), t, seq)
    q.initial_attempt_timestamp = t
    return q


def test_queue_sort_priority_then_group_age_then_name() -> None:
    old = _group("old", 1)
    old = msgspec.structs.replace(old, metadata=msgspec.structs.replace(old.metadata, creation_timestamp=EPOCH))
    young = _group("young", 1)
    later = EPOCH + timedelta(seconds=5)
    young = msgspec.structs.replace(young, metadata=msgspec.structs.replace(young.metadata, creation_timestamp=later))
    env = Env([make_node("n1")], objects=[("PodGroup", old), ("PodGroup", young)])
    plugin = Coscheduling(CoschedulingArgs(), env.handle)
    queued = [
        _queued(_member("z-young", "young"), 0),
        _queued(_member("a-young", "young"), 1),
        _queued(_member("z-old", "old"), 2),
        _queued(make_pod("urgent", priority=10), 3),
    ]
    expected = ["default/urgent", "default/z-old", "default/a-young", "default/z-young"]
    assert [q.pod_info.key for q in sorted(queued, key=plugin.sort_key)] == expected
    for a in queued:
        for b in queued:
            if a is not b:
                assert plugin.less(a, b) == (plugin.sort_key(a) < plugin.sort_key(b))


def test_older_group_goes_first_in_the_queue() -> None:
    text = textwrap.dedent(
        """
        kind: Scenario
        mode: batch
        ---
        apiVersion: v1
        kind: Node
        metadata: {name: n1}
        status: {capacity: {cpu: "2", memory: 4Gi, pods: "10"}}
        ---
        apiVersion: scheduling.x-k8s.io/v1alpha1
        kind: PodGroup
        metadata: {name: a-young, creationTimestamp: "2025-01-01T00:10:00Z"}
        spec: {minMember: 2}
        ---
        apiVersion: scheduling.x-k8s.io/v1alpha1
        kind: PodGroup
        metadata: {name: b-old, creationTimestamp: "2025-01-01T00:00:00Z"}
        spec: {minMember: 2}
        """
    )
    for group in ("a-young", "b-old"):
        for i in range(2):
            text += textwrap.dedent(
                f"""
                ---
                apiVersion: v1
                kind: Pod
                metadata: {{name: {group}-{i}, labels: {{{POD_GROUP_LABEL}: {group}}}}}
                spec: {{containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1"}}}}}}]}}
                """
            )
    result = simulate(text, _config({"podGroupBackoffSeconds": 60}))
    # Room for one group: the older one gets it, though its pods come later in name and in creation.
    assert placements(result) == {
        "default/a-young-0": None,
        "default/a-young-1": None,
        "default/b-old-0": "n1",
        "default/b-old-1": "n1",
    }


# ---------------------------------------------------------------- args and the PodGroup kind


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"podGroupBackoffSeconds": -1}, "pluginConfig[0].args.podGroupBackoffSeconds: expected `int` >= 0"),
        (
            {"permitWaitingTimeSeconds": "10s"},
            "pluginConfig[0].args.permitWaitingTimeSeconds: expected `int`, got `str`",
        ),
        ({"kubeConfigPath": "/x"}, 'pluginConfig[0].args: strict decoding error: unknown field "kubeConfigPath"'),
    ],
)
def test_bad_args(args: dict[str, Any], error: str) -> None:
    with pytest.raises(InputError) as err:
        simulate([make_node("n1")], _config(args))
    assert str(err.value).endswith(f'initializing plugin "{REF}": {error}')


def test_podgroup_documents_are_checked_when_read() -> None:
    doc = "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g}\nspec: {minMember: -2}\n"
    with pytest.raises(InputError, match=r"^<test>: PodGroup default/g: spec.minMember: Expected `int` >= 0$"):
        parse_scenario(doc, "<test>")
    doc = doc.replace("minMember: -2", "minMember: 2, minResources: {cpu: lots}")
    with pytest.raises(InputError, match=r"^<test>: PodGroup default/g: spec: minResources.cpu: quantities must match"):
        parse_scenario(doc, "<test>")


def test_entry_point_name_works_like_the_import_path(installed: Path) -> None:
    objects = [make_node("n1", cpu="8"), _group("job", 2), _member("job-0", "job"), _member("job-1", "job")]
    assert placements(simulate(objects, _config(name="Coscheduling"), mode="batch")) == {
        "default/job-0": "n1",
        "default/job-1": "n1",
    }


# ---------------------------------------------------------------- helpers


def _simulation(objects: list[Any], config: dict[str, Any], mode: str) -> Simulation:
    from kubesched.api.decode import KINDS
    from kubesched.scenario import Manifest, Scenario

    kinds = {t: k for k, t in KINDS.items()}
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", **config}
    scenario = Scenario(source="<test>", mode=mode, config=cfg)
    scenario.manifests = [Manifest(kinds[type(o)], o, {}, i) for i, o in enumerate(objects)]
    return Simulation(scenario)


def _bound(sim: Simulation) -> dict[str, str]:
    return {
        f"{p.metadata.namespace}/{p.metadata.name}": p.spec.node_name
        for p in sim.cluster.store.list("Pod")
        if p.spec.node_name
    }


def test_podgroups_are_watched_by_kubesched_run() -> None:
    from kubesched.live.resources import BY_KIND, PLUGIN_KINDS

    assert "PodGroup" in PLUGIN_KINDS
    path = BY_KIND["PodGroup"].collection_path("team-a")
    assert path == "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/team-a/podgroups"
