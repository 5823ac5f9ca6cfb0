"""Unit tests of the live pieces that need no server."""

from __future__ import annotations

import asyncio
import gc
import time
from datetime import UTC, datetime

import pytest

from kubesched.api.core import PodCondition
from kubesched.cluster.store import FINAL_STATE_UNKNOWN
from kubesched.live import gc_policy
from kubesched.live.client import merge_diff, pod_status_patch
from kubesched.live.errors import ApiError
from kubesched.live.events import event_key, make_event, micro_time
from kubesched.live.mirror import MirrorStore
from kubesched.live.ratelimit import TokenBucket
from kubesched.serve.patch import json_patch, merge_patch, strategic_merge_patch
from kubesched.serve.selectors import field_matcher, label_matcher
from kubesched.testing import make_pod


def test_pod_status_patch_is_two_way_strategic_merge() -> None:
    old = [PodCondition(type="Ready", status="True")]
    new = [*old, PodCondition(type="PodScheduled", status="False", reason="Unschedulable", message="m")]
    assert pod_status_patch(old, new, "", None) == {
        "status": {
            "$setElementOrder/conditions": [{"type": "Ready"}, {"type": "PodScheduled"}],
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "m"}],
        }
    }
    changed = [old[0], PodCondition(type="PodScheduled", status="False", reason="Unschedulable", message="m2")]
    patch = pod_status_patch(new, changed, "n1", "")
    assert patch == {
        "status": {
            "$setElementOrder/conditions": [{"type": "Ready"}, {"type": "PodScheduled"}],
            "conditions": [{"type": "PodScheduled", "message": "m2"}],
            "nominatedNodeName": None,
        }
    }
    assert pod_status_patch(new, new, "n1", "n1") is None


def test_merge_diff_round_trips_through_merge_patch() -> None:
    old = {"a": 1, "b": {"c": 2, "d": 3}, "l": [1, 2]}
    new = {"a": 1, "b": {"c": 5}, "l": [1], "e": "x"}
    diff = merge_diff(old, new)
    assert diff == {"b": {"c": 5, "d": None}, "l": [1], "e": "x"}
    assert merge_patch(old, diff) == new


def test_strategic_merge_patch_lists_by_key() -> None:
    pod = {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}], "finalizers": ["f"]}}
    patch = {
        "spec": {
            "containers": [{"name": "b", "image": "z"}, {"name": "a", "$patch": "delete"}, {"name": "c"}],
            "finalizers": ["g"],
        }
    }
    out = strategic_merge_patch(pod, patch)
    assert out["spec"]["containers"] == [{"name": "b", "image": "z"}, {"name": "c"}]
    assert out["spec"]["finalizers"] == ["f", "g"]
    assert json_patch({"a": [1, 2]}, [{"op": "add", "path": "/a/-", "value": 3}, {"op": "remove", "path": "/a/0"}]) == {
        "a": [2, 3]
    }


def test_selectors() -> None:
    obj = {"metadata": {"name": "p", "labels": {"app": "web", "tier": "fe"}}, "status": {"phase": "Running"}}
    assert label_matcher("app=web,tier in (fe,be),!gpu")(obj)
    assert not label_matcher("app!=web")(obj)
    assert label_matcher("")(obj)
    assert field_matcher("status.phase!=Succeeded,status.phase!=Failed,metadata.name=p")(obj)
    assert not field_matcher("spec.nodeName=n1")(obj)


def test_events_aggregate_on_everything_but_the_note() -> None:
    reg = {"kind": "Pod", "name": "p", "namespace": "ns", "uid": "u", "apiVersion": "v1"}
    t = datetime(2025, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    a = make_event(reg, None, "Warning", "FailedScheduling", "Scheduling", "first", "sched", t)
    b = make_event(reg, None, "Warning", "FailedScheduling", "Scheduling", "second", "sched", t)
    assert event_key(a) == event_key(b)
    assert a["metadata"] == {"name": f"p.{int(t.timestamp() * 1e9):x}", "namespace": "ns"}
    assert a["eventTime"] == micro_time(t) == "2025-01-02T03:04:05.000006Z"
    c = make_event({**reg, "uid": "other"}, None, "Warning", "FailedScheduling", "Scheduling", "x", "sched", t)
    assert event_key(a) != event_key(c)


def test_mirror_apply_and_replace() -> None:
    store = MirrorStore()
    seen: list[tuple[str, str]] = []
    store.subscribe("Pod", lambda et, old, new: seen.append((et, (new or old).metadata.name)))
    missed: list[str] = []
    store.subscribe("Pod", lambda et, old, new: new is FINAL_STATE_UNKNOWN and missed.append(old.metadata.name))

    def pod(name: str, rv: str, uid: str = "") -> object:
        p = make_pod(name)
        import msgspec

        return msgspec.structs.replace(
            p, metadata=msgspec.structs.replace(p.metadata, resource_version=rv, uid=uid or name)
        )

    store.apply("Pod", "ADDED", pod("a", "1"))
    store.apply("Pod", "MODIFIED", pod("a", "1"))  # a replay: nothing changes
    store.apply("Pod", "MODIFIED", pod("a", "2"))
    store.apply("Pod", "DELETED", pod("zz", "3"))  # unknown: ignored
    store.replace("Pod", [pod("a", "2"), pod("b", "4")])
    store.replace("Pod", [pod("b", "5", uid="b2")])  # a gone; b re-created under the same name
    store.deliver()
    assert seen == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("ADDED", "b"),
        ("DELETED", "a"),
        ("DELETED", "b"),
        ("ADDED", "b"),
    ]
    assert missed == ["a", "b"]  # found gone by a relist, not seen deleted by a watch


def test_token_bucket_limits_rate() -> None:
    async def take(n: int) -> float:
        tb = TokenBucket(qps=100, burst=5)
        start = time.monotonic()
        for _ in range(n):
            await tb.acquire()
        return time.monotonic() - start

    assert asyncio.run(take(5)) < 0.05
    assert 0.08 < asyncio.run(take(15)) < 0.5


def test_broadcaster_turns_repeats_into_a_series() -> None:
    from kubesched.live.events import EventBroadcaster

    calls: list[tuple[str, str, dict]] = []

    class FakeRest:
        async def call(self, method: str, path: str, *, body: dict, **_: object) -> dict:
            calls.append((method, path, body))
            return body

    async def scenario() -> EventBroadcaster:
        b = EventBroadcaster(FakeRest(), finish_time=0.0)  # type: ignore[arg-type]
        reg = {"kind": "Pod", "name": "p", "namespace": "ns", "uid": "u", "apiVersion": "v1"}
        for note in ("a", "b", "c", "d"):
            b.record(make_event(reg, None, "Warning", "FailedScheduling", "Scheduling", note, "sched"))
            await asyncio.sleep(0)
        await b.flush(1.0)
        return b

    asyncio.run(scenario())
    methods = [(m, body.get("series", {}).get("count")) for m, _, body in calls]
    # Created once; the second occurrence makes a series (count 2); the rest are counted and written on flush.
    assert methods[:2] == [("POST", None), ("PATCH", 2)]
    assert methods[-1] == ("PATCH", 4)
    assert calls[0][2]["note"] == "a"
    assert calls[1][1] == f"/apis/events.k8s.io/v1/namespaces/ns/events/{calls[0][2]['metadata']['name']}"


@pytest.mark.parametrize(
    ("error", "again"),
    [
        (ApiError(503, "ServiceUnavailable", "down"), False),
        (ApiError(500, "InternalError", "oops"), False),
        (ApiError(403, "Forbidden", "no"), False),
        (ApiError(0, "ConnectionRefused", "nothing listens"), True),
        (ApiError(0, "ConnectionError", "timed out"), True),
    ],
    ids=["503", "500", "403", "refused", "timeout"],
)
def test_an_event_is_written_again_only_when_the_server_was_not_reached(error: ApiError, again: bool) -> None:
    """client-go's recordEvent: any answer of the server (a StatusError, 5xx too) is final; a transport error is not."""
    from kubesched.live.events import EventBroadcaster

    class FailingRest:
        async def call(self, *_: object, **__: object) -> None:
            raise error

    reg = {"kind": "Pod", "name": "p", "namespace": "ns", "uid": "u", "apiVersion": "v1"}
    ev = make_event(reg, None, "Warning", "FailedScheduling", "Scheduling", "note", "sched")
    done = asyncio.run(EventBroadcaster(FailingRest())._write(ev))  # type: ignore[arg-type]
    assert done is not again


def test_broadcaster_drops_single_events_that_can_no_longer_repeat() -> None:
    """An event about a pod at a resourceVersion the pod left, or about a deleted pod, cannot aggregate again."""
    from kubesched.live.events import EventBroadcaster

    calls: list[tuple[str, dict]] = []

    class FakeRest:
        async def call(self, method: str, path: str, *, body: dict, **_: object) -> dict:
            calls.append((method, body))
            return body

    def failed(rv: str, note: str) -> dict:
        reg = {"kind": "Pod", "name": "p", "namespace": "ns", "uid": "u", "apiVersion": "v1", "resourceVersion": rv}
        return make_event(reg, None, "Warning", "FailedScheduling", "Scheduling", note, "sched")

    async def scenario() -> EventBroadcaster:
        b = EventBroadcaster(FakeRest())  # type: ignore[arg-type]
        b.record(failed("1", "a"))
        b.record(failed("2", "b"))
        b.record(failed("2", "c"))  # the same pod, unchanged: a series (count 2)
        b.forget("u", "2")  # the pod is at 2: the event about 1 goes, the series stays
        assert len(b.cache) == 1
        b.record(failed("2", "d"))  # still aggregates: count 3
        b.record(failed("3", "e"))
        b.record(failed("3", "f"))
        b.record(failed("4", "g"))
        b.forget("u", "")  # deleted: the single event about 4 goes; both series stay for their final write
        assert len(b.cache) == 2
        await b.flush(1.0)
        return b

    asyncio.run(scenario())
    writes = [(m, body.get("note"), (body.get("series") or {}).get("count")) for m, body in calls]
    assert ("POST", "g", None) in writes  # every event was written once, the dropped ones too
    finals = sorted(count for m, _, count in writes[-2:] if m == "PATCH")
    assert finals == [2, 3]


def test_a_pod_bound_and_deleted_while_unwatched_frees_its_node() -> None:
    """A relist finds a pod gone that we bound but never saw bound: its capacity comes back, nothing is kept."""
    from kubesched.config import default_configuration
    from kubesched.live.mirror import MirrorCluster
    from kubesched.scheduler import Scheduler
    from kubesched.testing import make_node

    mirror = MirrorStore()

    class Client:
        def __init__(self) -> None:
            self.bound: list[str] = []

        def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
            self.bound.append(name)  # the API answers 201; the watch that would show it is down

        def get_pod(self, namespace: str, name: str) -> object:
            return mirror.find("Pod", f"{namespace}/{name}")

        def record_event(self, *args: object) -> None:
            pass

        def update_pod_status(self, *args: object, **kwargs: object) -> None:
            pass

    client = Client()
    sched = Scheduler(MirrorCluster(mirror, client), default_configuration(), clock=time.monotonic)
    mirror.replace("Node", [make_node("n1", cpu="2")])
    mirror.apply("Pod", "ADDED", make_pod("first", cpu="2"))
    assert sched.schedule_one() and client.bound == ["first"]
    assert sched.cache.is_assumed("uid-default-first")
    mirror.replace("Pod", [])  # the watch expired; the new LIST no longer has it
    sched.sync()
    assert not sched.cache.pod_states and not sched.cache.assumed
    mirror.apply("Pod", "ADDED", make_pod("second", cpu="2"))
    assert sched.schedule_one() and client.bound == ["first", "second"]


def test_gc_policy_collects_rarely_until_synced_then_as_usual_with_the_synced_objects_frozen() -> None:
    before = gc.get_threshold()
    try:
        saved = gc_policy.start_up()
        assert saved == before
        assert gc.get_threshold() == (gc_policy.START_UP_THRESHOLD, before[1], before[2])
        kept = [[i] for i in range(1000)]
        gc_policy.synced(saved)
        assert gc.get_threshold() == before
        assert gc.get_freeze_count() >= len(kept)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_the_openapi_v2_document_is_the_protobuf_of_a_document_without_schemas() -> None:
    from kubesched.serve.discovery import openapi_v2_protobuf

    # Document{swagger: "2.0" (field 1), info: {title: "Kubernetes" (1), version: "v1.34.0" (2)} (field 2)}.
    assert openapi_v2_protobuf() == b"\n\x032.0\x12\x15\n\nKubernetes\x12\x07v1.34.0"
