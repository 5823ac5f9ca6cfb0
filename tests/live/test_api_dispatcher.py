"""The API dispatcher's rules (one call per pod, merge, relevance, no-ops, the watch's sync), on a fake server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest

from kubesched.api.core import Pod, PodCondition
from kubesched.live.api_calls import PodBindingCall, PodStatusPatchCall, with_retry
from kubesched.live.api_dispatcher import ApiDispatcher, CallOverwritten, CallSkipped, DispatcherClosed
from kubesched.live.errors import ApiError
from kubesched.live.iothread import IoLoop
from kubesched.testing import make_pod


class FakeRest:
    """Records requests; holds them while `gate` is closed; answers 503 while `down`."""

    def __init__(self, io: IoLoop) -> None:
        self.io = io
        self.log: list[tuple[str, str, Any]] = []
        self.down = False
        self.gate = asyncio.Event()
        self.gate.set()

    def close_gate(self) -> None:
        self.io.call_soon(self.gate.clear)

    def open_gate(self) -> None:
        self.io.call_soon(self.gate.set)

    async def _answer(self, method: str, path: str, body: Any) -> None:
        self.log.append((method, path, body))
        await self.gate.wait()
        if self.down:
            raise ApiError(503, "ServiceUnavailable", "the server is currently unable to handle the request")

    async def call(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        await self._answer(method, path, body)
        return None

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> tuple[int, bytes]:
        await self._answer(method, path, body)
        return 201, b'{"kind":"Status","apiVersion":"v1","status":"Success","code":201}'

    def sent(self, method: str, pod: str) -> list[Any]:
        return [body for m, path, body in self.log if m == method and f"/pods/{pod}/" in path]


@pytest.fixture
def io() -> Iterator[IoLoop]:
    loop = IoLoop()
    loop.start()
    try:
        yield loop
    finally:
        loop.stop()


@pytest.fixture
def rest(io: IoLoop) -> FakeRest:
    return FakeRest(io)


def dispatcher(io: IoLoop, rest: FakeRest, parallelism: int = 1) -> ApiDispatcher:
    return ApiDispatcher(rest, io, parallelism)  # type: ignore[arg-type]


def wait_for(cond: Callable[[], Any], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def occupy_the_worker(d: ApiDispatcher, rest: FakeRest) -> None:
    """Close the server's gate and wait until a "busy" patch holds the dispatcher's only worker there."""
    rest.close_gate()
    d.add(PodStatusPatchCall(make_pod("busy"), unschedulable("m0"), None))
    wait_for(lambda: rest.log)


def unschedulable(message: str, generation: int = 1) -> PodCondition:
    return PodCondition(
        type="PodScheduled", status="False", observed_generation=generation, reason="Unschedulable", message=message
    )


def with_condition(pod: Pod, cond: PodCondition) -> Pod:
    return msgspec.structs.replace(pod, status=msgspec.structs.replace(pod.status, conditions=[cond]))


class Outcomes:
    """on_finish callbacks that remember what each call got."""

    def __init__(self) -> None:
        self.got: dict[str, BaseException | str | None] = {}

    def __call__(self, name: str) -> Callable[[BaseException | None], None]:
        self.got[name] = "pending"
        return lambda err: self.got.__setitem__(name, err)


def test_a_newer_patch_is_merged_into_the_waiting_one(io: IoLoop, rest: FakeRest) -> None:
    d = dispatcher(io, rest)
    out = Outcomes()
    occupy_the_worker(d, rest)
    p = make_pod("p")
    d.add(PodStatusPatchCall(p, unschedulable("first"), "node-1"), out("first"))
    d.add(PodStatusPatchCall(p, unschedulable("second"), None), out("second"))
    assert isinstance(out.got["first"], CallOverwritten)
    rest.open_gate()
    assert d.wait_idle(5)
    [body] = rest.sent("PATCH", "p")
    # The newer condition, and the nomination only the older call carried.
    assert body["status"]["conditions"][0]["message"] == "second"
    assert body["status"]["conditions"][0]["observedGeneration"] == 1
    assert body["status"]["nominatedNodeName"] == "node-1"
    assert out.got["second"] is None


def test_a_binding_replaces_a_waiting_patch_and_a_patch_behind_a_binding_is_skipped(io: IoLoop, rest: FakeRest) -> None:
    d = dispatcher(io, rest)
    out = Outcomes()
    occupy_the_worker(d, rest)
    p = make_pod("p")
    d.add(PodStatusPatchCall(p, unschedulable("m"), None), out("patch"))
    d.add(PodBindingCall("default", "p", p.metadata.uid, "node-1"), out("bind"))
    assert isinstance(out.got["patch"], CallOverwritten)
    late = d.add(PodStatusPatchCall(p, unschedulable("late"), None), out("late"))
    assert isinstance(late, CallSkipped) and out.got["late"] is late
    rest.open_gate()
    assert d.wait_idle(5)
    assert rest.sent("PATCH", "p") == []
    [binding] = rest.sent("POST", "p")
    assert binding["target"] == {"kind": "Node", "name": "node-1"}
    assert binding["metadata"]["uid"] == p.metadata.uid
    assert out.got["bind"] is None


def test_a_pod_has_one_call_running_at_a_time_and_the_next_waits(io: IoLoop, rest: FakeRest) -> None:
    d = dispatcher(io, rest, parallelism=4)
    rest.close_gate()
    p = make_pod("p")
    d.add(PodStatusPatchCall(p, unschedulable("first"), None))
    wait_for(lambda: rest.log)
    d.add(PodStatusPatchCall(p, unschedulable("second"), None))
    d.add(PodStatusPatchCall(p, unschedulable("third"), None))
    time.sleep(0.05)
    assert len(rest.sent("PATCH", "p")) == 1, "the second call waits for the first, though workers are free"
    rest.open_gate()
    assert d.wait_idle(5)
    sent = rest.sent("PATCH", "p")
    assert [b["status"]["conditions"][0]["message"] for b in sent] == ["first", "third"]


def test_calls_without_effect_are_not_sent(io: IoLoop, rest: FakeRest) -> None:
    d = dispatcher(io, rest)
    out = Outcomes()
    already = with_condition(make_pod("p"), unschedulable("m"))
    assert isinstance(d.add(PodStatusPatchCall(already, unschedulable("m"), None), out("same")), CallSkipped)
    assert isinstance(d.add(PodStatusPatchCall(already, None, ""), out("nnn")), CallSkipped), "no nomination to clear"
    # A condition differing only in observedGeneration is not a change (UpdatePodCondition ignores it).
    assert isinstance(d.add(PodStatusPatchCall(already, unschedulable("m", 2), None)), CallSkipped)

    occupy_the_worker(d, rest)
    q = make_pod("q")
    d.add(PodStatusPatchCall(q, unschedulable("m"), None), out("waiting"))
    d.sync_pod(with_condition(q, unschedulable("m")))  # the watch shows it written (another replica did)
    assert isinstance(out.got["waiting"], CallSkipped)
    rest.open_gate()
    assert d.wait_idle(5)
    assert rest.sent("PATCH", "p") == [] and rest.sent("PATCH", "q") == []


def test_the_watch_updates_the_base_of_a_waiting_patch(io: IoLoop, rest: FakeRest) -> None:
    d = dispatcher(io, rest)
    occupy_the_worker(d, rest)
    p = make_pod("p")
    d.add(PodStatusPatchCall(p, unschedulable("new"), None))
    d.sync_pod(with_condition(p, unschedulable("old")))
    rest.open_gate()
    assert d.wait_idle(5)
    [body] = rest.sent("PATCH", "p")
    # Measured against the newest copy: only what changed in its condition is sent.
    assert body["status"]["conditions"] == [{"type": "PodScheduled", "message": "new"}]


@pytest.mark.parametrize("deleted", [True, False], ids=["deleted", "bound"])
def test_a_waiting_patch_of_a_pod_deleted_or_bound_is_dropped(io: IoLoop, rest: FakeRest, deleted: bool) -> None:
    d = dispatcher(io, rest)
    out = Outcomes()
    occupy_the_worker(d, rest)
    p = make_pod("p")
    d.add(PodStatusPatchCall(p, unschedulable("m"), None), out("patch"))
    d.drop_obsolete(p if deleted else make_pod("p", node="node-1"), deleted=deleted)
    assert isinstance(out.got["patch"], CallSkipped)
    rest.open_gate()
    assert d.wait_idle(5)
    assert rest.sent("PATCH", "p") == []
    assert d.stats.dropped["pod_status_patch"] == 1


def test_retries_while_the_server_is_down_do_not_multiply_calls(io: IoLoop, rest: FakeRest) -> None:
    d = dispatcher(io, rest, parallelism=4)
    rest.down = True
    p = make_pod("p")
    outcomes = Outcomes()
    d.add(PodStatusPatchCall(p, unschedulable("attempt 0"), None), outcomes("0"))
    wait_for(lambda: rest.log)
    for i in range(1, 20):  # nineteen more failed attempts of the pod while its first patch is being retried
        d.add(PodStatusPatchCall(p, unschedulable(f"attempt {i}"), None), outcomes(str(i)))
    assert d.wait_idle(10)
    sent = rest.sent("PATCH", "p")
    # util.PatchPodStatus tries 4 times; the 19 later calls were folded into one, tried 4 times too.
    assert len(sent) == 8
    assert sent[-1]["status"]["conditions"][0]["message"] == "attempt 19"
    assert isinstance(outcomes.got["19"], ApiError) and outcomes.got["19"].code == 503
    # Every earlier call heard it was overwritten, the running one too (as upstream: the first outcome wins).
    assert sum(isinstance(e, CallOverwritten) for e in outcomes.got.values()) == 19
    assert d.stats.executed[("pod_status_patch", "error")] == 2


def test_at_most_parallelism_calls_run_at_once(io: IoLoop, rest: FakeRest) -> None:
    d = dispatcher(io, rest, parallelism=2)
    rest.close_gate()
    for i in range(6):
        d.add(PodStatusPatchCall(make_pod(f"p{i}"), unschedulable("m"), None))
    wait_for(lambda: len(rest.log) == 2)
    time.sleep(0.05)
    assert len(rest.log) == 2
    assert d.pending_by_type() == {"pod_status_patch": 4, "pod_binding": 0}
    rest.open_gate()
    assert d.wait_idle(5)
    # First come, first served.
    assert [path.split("/")[-2] for _, path, _ in rest.log] == [f"p{i}" for i in range(6)]


def test_close_fails_what_is_left(io: IoLoop, rest: FakeRest) -> None:
    d = dispatcher(io, rest)
    out = Outcomes()
    occupy_the_worker(d, rest)
    d.add(PodBindingCall("default", "p", "uid-p", "node-1"), out("bind"))
    d.close()
    assert isinstance(out.got["bind"], DispatcherClosed)
    assert isinstance(d.add(PodStatusPatchCall(make_pod("q"), unschedulable("m"), None)), DispatcherClosed)
    rest.open_gate()


@pytest.mark.parametrize(
    ("error", "tries"),
    [
        (ApiError(503, "ServiceUnavailable", "down"), 4),
        (ApiError(500, "InternalError", "oops"), 4),
        (ApiError(0, "ConnectionRefused", "nothing listens"), 4),
        (ApiError(0, "ConnectionError", "timed out"), 1),
        (ApiError(429, "TooManyRequests", "slow down"), 1),
    ],
    ids=["503", "500", "refused", "timeout", "429"],
)
def test_status_patches_are_retried_as_util_retriable_says(error: ApiError, tries: int) -> None:
    calls = 0

    async def op() -> None:
        nonlocal calls
        calls += 1
        raise error

    with pytest.raises(ApiError):
        asyncio.run(with_retry(op))
    assert calls == tries


def test_a_refused_connection_is_told_from_other_transport_failures() -> None:
    import socket

    from kubesched.live.kubeconfig import Connection
    from kubesched.live.rest import RestClient

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the request: nothing listens there

    async def attempt() -> ApiError:
        rest = RestClient(Connection(f"http://127.0.0.1:{port}"))
        await rest.open()
        try:
            await rest.call("GET", "/api")
        except ApiError as err:
            return err
        finally:
            await rest.close()
        raise AssertionError("no error")

    err = asyncio.run(attempt())
    assert err.code == 0 and err.reason == "ConnectionRefused" and err.retriable
