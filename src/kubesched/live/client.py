"""LiveClient: the EmbeddedClient's methods over the Kubernetes REST API.

- bind: POST pods/NAME/binding through the API dispatcher (api_dispatcher.py),
  waited for on the bind pool's thread; 409 and 404 raise Conflict / NotFound,
  which the scheduler's binding-failure path handles.
- update_pod_status: a status patch (PodScheduled, nominatedNodeName) handed to
  the API dispatcher, which writes it in the background: one call per pod at a
  time, a newer patch merged into a waiting one, a patch made pointless by the
  watch or by the pod's binding dropped, retried on 500/503/refused connections.
- patch_pod_status, delete_pod: written at once (preemption's DisruptionTarget
  condition, then the victim's deletion), as upstream's util.PatchPodStatus and
  util.DeletePod, past the dispatcher.
- get_pod reads the mirror (upstream reads its pod lister, not the API).
- record_event goes to the aggregating event broadcaster.
- get/update for plugins' objects (PVs, PVCs, ResourceClaims): update sends a
  JSON merge patch of what changed, with the object's resourceVersion as the
  precondition, so fields our structs do not model are never overwritten.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from datetime import UTC, datetime
from typing import Any

import msgspec

from kubesched.api.core import Pod, PodCondition
from kubesched.api.decode import decode
from kubesched.cluster.store import DELETED, MODIFIED, Conflict, NotFound, object_key
from kubesched.live.api_calls import PodBindingCall, PodStatusPatchCall, pod_status_patch, with_retry
from kubesched.live.api_dispatcher import ApiDispatcher, CallOverwritten, CallSkipped
from kubesched.live.events import EventBroadcaster, make_event, object_reference
from kubesched.live.iothread import IoLoop
from kubesched.live.mirror import MirrorStore
from kubesched.live.resources import BY_KIND, resource_for
from kubesched.live.rest import MERGE_PATCH, STRATEGIC_MERGE_PATCH, RestClient

__all__ = ["LiveClient", "merge_diff", "pod_status_patch"]

log = logging.getLogger("kubesched.live.client")

POD = "Pod"
FETCHED_MAX = 1024
# How long a bind pool thread waits for its binding call (queued behind other calls while the server is down).
BIND_WAIT = 600.0


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

    def __init__(
        self, rest: RestClient, io: IoLoop, mirror: MirrorStore, events: EventBroadcaster, parallelism: int = 16
    ) -> None:
        self.rest = rest
        self.io = io
        self.mirror = mirror
        self.events = events
        self.dispatcher = ApiDispatcher(rest, io, parallelism)
        self._fetched: dict[tuple[str, str], Any] = {}

    @property
    def pending_writes(self) -> int:
        """API calls queued or in flight (shutdown waits for them)."""
        return self.dispatcher.pending

    # ------------------------------------------------------------ the watch keeps the dispatcher's calls current

    def observe_pod(self, etype: str, pod: Pod) -> None:
        """A pod the watch delivered (scheduler thread): sync its waiting call, drop it if obsolete."""
        if etype == DELETED:
            self.dispatcher.drop_obsolete(pod, deleted=True)
            return
        self.dispatcher.sync_pod(pod)
        if pod.spec.node_name:
            self.dispatcher.drop_obsolete(pod, deleted=False)

    def observe_pods(self, pods: list[Pod]) -> None:
        """A fresh list of pods: each one synced, the calls of pods no longer there dropped."""
        for pod in pods:
            self.observe_pod(MODIFIED, pod)
        self.dispatcher.retain(p.metadata.uid or object_key(p) for p in pods)

    # ------------------------------------------------------------ pods

    def get_pod(self, namespace: str, name: str) -> Pod | None:
        return self.mirror.find(POD, f"{namespace}/{name}")

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        """POST pods/NAME/binding through the dispatcher, waited for (from the bind pool, never the loop)."""
        done: Future[BaseException | None] = Future()
        self.bind_nowait(namespace, name, uid, node, done.set_result)
        err = done.result(BIND_WAIT)
        if err is not None:
            raise err

    def bind_nowait(
        self, namespace: str, name: str, uid: str, node: str, on_finish: Callable[[BaseException | None], None]
    ) -> None:
        """The same binding, not waited for: on_finish(error or None) runs on whichever thread settles it."""

        def finished(err: BaseException | None) -> None:
            # WaitOnFinish: a skipped or overwritten call is not the binding's failure.
            on_finish(None if isinstance(err, (CallSkipped, CallOverwritten)) else err)

        self.dispatcher.add(PodBindingCall(namespace, name, uid, node), finished)

    def update_pod_status(
        self,
        namespace: str,
        name: str,
        condition: PodCondition | None = None,
        nominated_node_name: str | None = None,
    ) -> None:
        """A status patch of the pod as the mirror has it, sent by the dispatcher in the background."""
        pod: Pod | None = self.mirror.find(POD, f"{namespace}/{name}")
        if pod is None:
            return
        self.dispatcher.add(PodStatusPatchCall(pod, condition, nominated_node_name))

    def patch_pod_status(self, namespace: str, name: str, condition: PodCondition) -> None:
        """util.PatchPodStatus: PATCH pods/NAME/status now (retried), if the condition changes anything."""
        key = f"{namespace}/{name}"
        pod: Pod | None = self.mirror.find(POD, key)
        if pod is None:
            raise NotFound(POD, key)
        patch = PodStatusPatchCall(pod, condition, None).body(datetime.now(UTC).replace(microsecond=0))
        if patch is None:
            return
        path = BY_KIND[POD].object_path(name, namespace, "status")

        async def send() -> None:
            await self.rest.call("PATCH", path, body=patch, content_type=STRATEGIC_MERGE_PATCH, kind=POD, key=key)

        self.io.call(with_retry(send))

    def delete_pod(self, namespace: str, name: str, grace_seconds: float | None = None) -> None:
        """DELETE pods/NAME (util.DeletePod)."""
        key = f"{namespace}/{name}"
        path = BY_KIND[POD].object_path(name, namespace)
        body = {"gracePeriodSeconds": int(grace_seconds)} if grace_seconds is not None else None
        self.io.call(self.rest.call("DELETE", path, body=body, kind=POD, key=key))

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
        self.io.call_batched(self.events.record, ev)

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
