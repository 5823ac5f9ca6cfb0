"""The API server's pod create and bind, folded into one replace per level, against the same steps made in turn.

EmbeddedClient.create of a pod sets the namespace, the defaults, the Priority admission's fields, generation 1
and the store's stamp in one replace of each level (ClusterStore.create_with); bind sets spec and status in the
stamp's replace (ClusterStore.update_with). The references below are those steps one after the other, as the
client made them before: every pod must come out equal, with the same resourceVersions, uids and events.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from kubesched.api.core import PodCondition
from kubesched.api.decode import decode
from kubesched.cluster import admission
from kubesched.cluster.client import POD, EmbeddedClient, update_pod_condition
from kubesched.cluster.clock import VirtualClock
from kubesched.cluster.store import ClusterStore
from kubesched.scenario import load_scenario

CASES = Path(__file__).parents[1] / "conformance" / "cases"


def _reference_create(client: EmbeddedClient, pod: Any) -> Any:
    """The pod create as a chain of whole-object steps."""
    if not pod.metadata.namespace:
        pod = msgspec.structs.replace(pod, metadata=msgspec.structs.replace(pod.metadata, namespace="default"))
    pod = admission.admit_priority(admission.default_pod(pod), client.priority_classes())
    pod = msgspec.structs.replace(pod, metadata=msgspec.structs.replace(pod.metadata, generation=1))
    return client.store.create(POD, pod)


def _reference_bind(client: EmbeddedClient, namespace: str, name: str, node: str) -> None:
    """The bind's write as whole-object steps: the changed pod made, then handed to the store's update."""
    pod = client.store.get(POD, f"{namespace}/{name}")
    cond = PodCondition(type="PodScheduled", status="True", last_transition_time=client.store.clock.datetime())
    status = msgspec.structs.replace(
        pod.status, conditions=update_pod_condition(pod.status.conditions, cond), phase=pod.status.phase or "Pending"
    )
    spec = msgspec.structs.replace(pod.spec, node_name=node)
    client.store.update(POD, msgspec.structs.replace(pod, spec=spec, status=status))


def _pod(spec: dict[str, Any], meta: dict[str, Any] | None = None, status: dict[str, Any] | None = None) -> Any:
    raw: dict[str, Any] = {"metadata": {"name": "p", **(meta or {})}, "spec": spec}
    if status is not None:
        raw["status"] = status
    return decode("Pod", raw)


_CONTAINER = {"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}

HANDMADE = [
    _pod({"containers": [_CONTAINER]}),
    _pod({"containers": [_CONTAINER]}, {"namespace": "team", "uid": "u-1", "generation": 7}),
    _pod({"containers": [_CONTAINER]}, {"creationTimestamp": "2024-01-02T03:04:05Z"}),
    _pod({"containers": [{"name": "c", "ports": [{"containerPort": 80, "protocol": ""}]}], "hostNetwork": True}),
    _pod({"containers": [_CONTAINER], "initContainers": [_CONTAINER], "schedulerName": "other"}),
    _pod({"containers": [_CONTAINER], "schedulingGates": [{"name": "wait"}]}),
    _pod({"containers": [_CONTAINER], "nodeName": "n1"}),
    _pod({"containers": [_CONTAINER]}, status={"phase": "Running"}),
    _pod({"containers": [_CONTAINER], "priority": 5}),
    _pod({"containers": [_CONTAINER], "priority": 5, "preemptionPolicy": "Never"}),
    _pod({"containers": [_CONTAINER], "priorityClassName": "high"}),
    _pod({"containers": [_CONTAINER], "priorityClassName": "high", "preemptionPolicy": "Never"}),
    _pod({"containers": [_CONTAINER], "priorityClassName": "system-node-critical"}),
    _pod({"containers": [_CONTAINER], "resources": {"limits": {"cpu": "2", "hugepages-2Mi": "2Mi"}}}),
    _pod(
        {
            "containers": [_CONTAINER],
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {}, "topologyKey": "zone", "matchLabelKeys": ["app"]}
                    ]
                }
            },
        },
        {"labels": {"app": "web"}},
    ),
]


def _classes(default: bool) -> list[Any]:
    classes = [decode("PriorityClass", {"metadata": {"name": "high"}, "value": 1000})]
    if default:
        classes.append(
            decode(
                "PriorityClass",
                {"metadata": {"name": "low"}, "value": 10, "globalDefault": True, "preemptionPolicy": "Never"},
            )
        )
    return classes


def _case_pods() -> list[tuple[str, list[Any], list[Any]]]:
    """Each conformance case's PriorityClasses and pods, as its scenario file declares them."""
    out = []
    for path in sorted(CASES.rglob("*.yaml")):
        scenario = load_scenario(str(path))
        classes = [m.obj for m in scenario.manifests if m.kind == "PriorityClass"]
        pods = [m.obj for m in scenario.manifests if m.kind == POD]
        out.append((path.stem, classes, pods))
    return out


def _both(store_type: type[ClusterStore] = ClusterStore) -> tuple[EmbeddedClient, EmbeddedClient]:
    return EmbeddedClient(store_type(VirtualClock())), EmbeddedClient(ClusterStore(VirtualClock()))


def _recorder(events: list[Any]) -> Any:
    def handler(etype: str, old: Any, new: Any) -> None:
        events.append((etype, old, new))

    return handler


def _create_all(classes: list[Any], pods: list[Any], store_type: type[ClusterStore] = ClusterStore) -> None:
    folded, reference = _both(store_type)
    seen: tuple[list[Any], list[Any]] = ([], [])
    for client, events in zip((folded, reference), seen, strict=True):
        client.store.subscribe(POD, _recorder(events))
        for pc in classes:
            client.create("PriorityClass", pc)
    for i, pod in enumerate(pods):
        pod = msgspec.structs.replace(
            pod, metadata=msgspec.structs.replace(pod.metadata, name=f"{pod.metadata.name}-{i}")
        )
        got = folded.create(POD, pod)
        want = _reference_create(reference, pod)
        assert got == want, pod.metadata.name
        assert msgspec.json.encode(got) == msgspec.json.encode(want)
    folded.store.deliver()
    reference.store.deliver()
    assert seen[0] == seen[1]
    assert folded.store.objects == reference.store.objects


@pytest.mark.parametrize("default_class", [False, True])
def test_a_folded_create_makes_the_pod_the_steps_in_turn_make(default_class: bool) -> None:
    _create_all(_classes(default_class), HANDMADE)


@pytest.mark.parametrize(("name", "classes", "pods"), _case_pods())
def test_a_folded_create_makes_each_conformance_pod_the_steps_in_turn_make(
    name: str, classes: list[Any], pods: list[Any]
) -> None:
    _create_all(classes, pods)


class _WholeWrites(ClusterStore):
    """A store that sees every write as a whole object (as ServedStore does)."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(clock)
        self.written: list[str] = []

    def create(self, kind: str, obj: Any) -> Any:
        self.written.append(f"create {obj.metadata.name}")
        return super().create(kind, obj)

    def update(self, kind: str, obj: Any) -> Any:
        self.written.append(f"update {obj.metadata.name}")
        return super().update(kind, obj)


def test_a_store_that_overrides_its_writes_gets_whole_objects_and_the_same_pods() -> None:
    _create_all(_classes(True), HANDMADE, _WholeWrites)
    store = _WholeWrites(VirtualClock())
    client = EmbeddedClient(store)
    client.create("Node", decode("Node", {"metadata": {"name": "n1"}}))
    client.create(POD, HANDMADE[0])
    client.bind("default", "p", "", "n1")
    assert store.written == ["create n1", "create p", "update p"]
    assert client.store.get(POD, "default/p").spec.node_name == "n1"


def test_a_bind_writes_what_the_steps_in_turn_write() -> None:
    folded, reference = _both()
    clocks = []
    for client in (folded, reference):
        clock = VirtualClock()
        clocks.append(clock)
        client.store.clock = clock
        client.create("Node", decode("Node", {"metadata": {"name": "n1"}}))
        for pc in _classes(True):
            client.create("PriorityClass", pc)
        for i, pod in enumerate(HANDMADE):
            client.create(
                POD, msgspec.structs.replace(pod, metadata=msgspec.structs.replace(pod.metadata, name=f"p{i}"))
            )
        client.store.deliver()
    for clock in clocks:
        clock.advance(1.5)
    for i, pod in enumerate(HANDMADE):
        if pod.spec.node_name:
            continue
        ns = pod.metadata.namespace or "default"
        folded.bind(ns, f"p{i}", "", "n1")
        _reference_bind(reference, ns, f"p{i}", "n1")
        assert folded.store.get(POD, f"{ns}/p{i}").spec.node_name == "n1"
    assert folded.store.objects == reference.store.objects
    assert list(folded.store.pending) == list(reference.store.pending)
