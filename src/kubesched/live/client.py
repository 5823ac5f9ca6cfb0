"""LiveClient: the EmbeddedClient's methods over the Kubernetes REST API.

- bind: POST pods/NAME/binding (answered 201 with a Status); 409 and 404 raise
  Conflict / NotFound, which the scheduler's binding-failure path handles.
- update_pod_status: a strategic-merge PATCH of pods/NAME/status with only what
  changed (util.PatchPodStatus), retried on 500/503/refused connections. It is
  written in the background, in order per pod, so the scheduling thread does not
  wait for it; a later DELETE of the same pod waits for it (DisruptionTarget
  first, then the delete, as upstream's preemption).
- get_pod reads the mirror (upstream reads its pod lister, not the API).
- record_event goes to the aggregating event broadcaster.
- get/update for plugins' objects (PVs, PVCs, ResourceClaims): update sends a
  JSON merge patch of what changed, with the object's resourceVersion as the
  precondition, so fields our structs do not model are never overwritten.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec

from kubesched.api.core import Pod, PodCondition
from kubesched.api.decode import decode
from kubesched.cluster.client import _set_condition
from kubesched.cluster.store import Conflict, object_key
from kubesched.live.errors import ApiError, decode_status, error_for
from kubesched.live.events import EventBroadcaster, make_event, object_reference
from kubesched.live.iothread import IoLoop
from kubesched.live.mirror import MirrorStore
from kubesched.live.resources import BY_KIND, resource_for
from kubesched.live.rest import MERGE_PATCH, STRATEGIC_MERGE_PATCH, RestClient

log = logging.getLogger("kubesched.live.client")
T = TypeVar("T")

POD = "Pod"
# retry.DefaultBackoff: 4 steps from 10 ms, factor 5, jitter 0.1.
RETRY_DELAYS = (0.01, 0.05, 0.25)
FETCHED_MAX = 1024


def _time(dt: datetime | None) -> str | None:
    """metav1.Time: RFC 3339 in whole seconds."""
    return None if dt is None else dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition_json(c: PodCondition) -> dict[str, Any]:
    d: dict[str, Any] = {"type": c.type, "status": c.status}
    if c.reason:
        d["reason"] = c.reason
    if c.message:
        d["message"] = c.message
    if c.last_transition_time is not None:
        d["lastTransitionTime"] = _time(c.last_transition_time)
    return d


def pod_status_patch(
    old: list[PodCondition], new: list[PodCondition], old_nnn: str, new_nnn: str | None
) -> dict[str, Any] | None:
    """The two-way strategic merge patch between two pod statuses (conditions merge on type)."""
    status: dict[str, Any] = {}
    if new is not old and new != old:
        before = {c.type: _condition_json(c) for c in old}
        changed = []
        for c in new:
            cur = _condition_json(c)
            prev = before.get(c.type)
            if prev is None:
                changed.append(cur)
            elif prev != cur:
                diff = {k: v for k, v in cur.items() if prev.get(k) != v}
                diff.update({k: None for k in prev if k not in cur})
                changed.append({"type": c.type, **diff})
        if changed:
            status["$setElementOrder/conditions"] = [{"type": c.type} for c in new]
            status["conditions"] = changed
    if new_nnn is not None and new_nnn != old_nnn:
        status["nominatedNodeName"] = new_nnn or None
    return {"status": status} if status else None


def merge_diff(old: Any, new: Any) -> Any:
    """An RFC 7386 merge patch turning `old` into `new` (maps recurse, lists are replaced)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    out: dict[str, Any] = {}
    for k, v in new.items():
        if k not in old:
            out[k] = v
        elif old[k] != v:
            out[k] = merge_diff(old[k], v) if isinstance(v, dict) and isinstance(old[k], dict) else v
    for k in old:
        if k not in new:
            out[k] = None
    return out


class LiveClient:
    """The scheduler's API client against a real API server."""

    def __init__(self, rest: RestClient, io: IoLoop, mirror: MirrorStore, events: EventBroadcaster) -> None:
        self.rest = rest
        self.io = io
        self.mirror = mirror
        self.events = events
        self._chains: dict[str, asyncio.Future[None]] = {}
        self._fetched: dict[tuple[str, str], Any] = {}
        self._pending_lock = threading.Lock()
        self._pending = 0

    @property
    def pending_writes(self) -> int:
        """Status patches queued or in flight (shutdown waits for them)."""
        return self._pending

    def _track(self, delta: int) -> None:
        with self._pending_lock:
            self._pending += delta

    # ------------------------------------------------------------ ordering per object (on the loop)

    async def _chained(self, key: str, op: Callable[[], Awaitable[T]]) -> T:
        prev = self._chains.get(key)
        mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._chains[key] = mine
        try:
            if prev is not None:
                await asyncio.wait([prev])
            return await op()
        finally:
            mine.set_result(None)
            if self._chains.get(key) is mine:
                del self._chains[key]

    async def _with_retry(self, op: Callable[[], Awaitable[T]]) -> T:
        for delay in RETRY_DELAYS:
            try:
                return await op()
            except ApiError as err:
                if not err.retriable:
                    raise
            await asyncio.sleep(delay * (1 + 0.1 * random.random()))
        return await op()

    # ------------------------------------------------------------ pods

    def get_pod(self, namespace: str, name: str) -> Pod | None:
        return self.mirror.find(POD, f"{namespace}/{name}")  # type: ignore[no-any-return]

    async def bind_async(self, namespace: str, name: str, uid: str, node: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})},
            "target": {"kind": "Node", "name": node},
        }
        path = BY_KIND[POD].object_path(name, namespace, "binding")
        code, payload = await self.rest.request("POST", path, body=body)
        if code >= 300:
            raise error_for(code, payload, POD, f"{namespace}/{name}")
        st = decode_status(payload)
        if st.kind == "Status" and st.status == "Failure":
            raise ApiError(st.code or code, st.reason, st.message)

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        """POST pods/NAME/binding (blocking: called from the bind pool, never the loop)."""
        self.io.call(self.bind_async(namespace, name, uid, node))

    def update_pod_status(
        self,
        namespace: str,
        name: str,
        condition: PodCondition | None = None,
        nominated_node_name: str | None = None,
    ) -> None:
        """PATCH pods/NAME/status with what changed against the mirror's copy; written in the background."""
        pod: Pod | None = self.mirror.find(POD, f"{namespace}/{name}")
        if pod is None:
            return
        conds = pod.status.conditions
        if condition is not None:
            conds = _set_condition(conds, condition, datetime.now(UTC).replace(microsecond=0))
        patch = pod_status_patch(pod.status.conditions, conds, pod.status.nominated_node_name, nominated_node_name)
        if patch is None:
            return
        key = f"{namespace}/{name}"
        path = BY_KIND[POD].object_path(name, namespace, "status")

        async def send() -> None:
            await self.rest.call("PATCH", path, body=patch, content_type=STRATEGIC_MERGE_PATCH, kind=POD, key=key)

        async def write() -> None:
            try:
                await self._chained(key, lambda: self._with_retry(send))
            except KeyError:
                pass  # the pod is gone: nothing to report on
            except (ApiError, Conflict) as err:
                log.error("Error updating pod", extra={"pod": key, "err": str(err)})
            finally:
                self._track(-1)

        self._track(1)
        self.io.spawn(write(), "pod status")

    def delete_pod(self, namespace: str, name: str, grace_seconds: float | None = None) -> None:
        """DELETE pods/NAME, after any status patch of the same pod still in flight."""
        key = f"{namespace}/{name}"
        path = BY_KIND[POD].object_path(name, namespace)
        body = {"gracePeriodSeconds": int(grace_seconds)} if grace_seconds is not None else None

        async def send() -> None:
            await self.rest.call("DELETE", path, body=body, kind=POD, key=key)

        self.io.call(self._chained(key, send))

    # ------------------------------------------------------------ events

    def record_event(self, type_: str, reason: str, action: str, note: str, regarding: str, related: str = "") -> None:
        pod = self.mirror.find(POD, regarding)
        reg = object_reference(POD, pod) if pod is not None else _ref_from_key(regarding)
        rel_pod = self.mirror.find(POD, related) if related else None
        rel = object_reference(POD, rel_pod) if rel_pod is not None else (_ref_from_key(related) if related else None)
        source = rel_pod if rel_pod is not None else pod
        controller = (source.spec.scheduler_name if source is not None else "") or "default-scheduler"
        ev = make_event(reg, rel, type_, reason, action, note, controller)
        log.debug(
            "Event occurred",
            extra={"object": regarding, "kind": "Pod", "type": type_, "reason": reason, "action": action, "note": note},
        )
        self.io.call_soon(self.events.record, ev)

    # ------------------------------------------------------------ other objects (plugins)

    def get(self, kind: str, key: str) -> Any:
        res = resource_for(kind)
        ns, _, name = key.rpartition("/")
        raw = self.io.call(self.rest.call("GET", res.object_path(name, ns), kind=kind, key=key))
        obj = decode(kind, raw)
        self._remember(kind, key, obj)
        return obj

    def _remember(self, kind: str, key: str, obj: Any) -> None:
        """Objects read or written lately: the base of the next update's patch (bounded)."""
        if len(self._fetched) >= FETCHED_MAX:
            self._fetched.clear()
        self._fetched[(kind, key)] = obj

    def update(self, kind: str, obj: Any) -> Any:
        """Write the changes between the object as read (same resourceVersion) and `obj`."""
        key = object_key(obj)
        rv = obj.metadata.resource_version
        base = self._fetched.get((kind, key))
        if base is None or base.metadata.resource_version != rv:
            base = self.mirror.find(kind, key)
        if base is None or base.metadata.resource_version != rv:
            base = self.get(kind, key)
            if base.metadata.resource_version != rv:
                raise Conflict(
                    f'Operation cannot be fulfilled on {resource_for(kind).plural} "{obj.metadata.name}": '
                    "the object has been modified; please apply your changes to the latest version and try again"
                )
        diff = merge_diff(msgspec.to_builtins(base), msgspec.to_builtins(obj))
        res = resource_for(kind)
        ns, _, name = key.rpartition("/")
        status = diff.pop("status", None) if "status" in res.subresources else None
        out = base
        precondition = {"resourceVersion": rv}
        if diff:
            diff["metadata"] = {**(diff.get("metadata") or {}), **precondition}
            out = self._patch(res.object_path(name, ns), diff, kind, key)
            precondition = {}
        if status is not None:
            body = {"status": status, **({"metadata": precondition} if precondition else {})}
            out = self._patch(res.object_path(name, ns, "status"), body, kind, key)
        self._remember(kind, key, out)
        return out

    def _patch(self, path: str, body: dict[str, Any], kind: str, key: str) -> Any:
        raw = self.io.call(self.rest.call("PATCH", path, body=body, content_type=MERGE_PATCH, kind=kind, key=key))
        return decode(kind, raw)


def _ref_from_key(key: str) -> dict[str, str]:
    ns, _, name = key.rpartition("/")
    ref = {"kind": POD, "apiVersion": "v1", "name": name}
    if ns:
        ref["namespace"] = ns
    return ref
