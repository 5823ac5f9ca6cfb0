"""The API calls live mode sends through its dispatcher (pkg/scheduler/framework/api_calls).

Two kinds, as kube-scheduler 1.34 (SchedulerAsyncAPICalls, beta, on by default):

- a pod status patch: the PodScheduled=False condition and the nominated node of
  a failed attempt, or a cleared nomination (preemption). A strategic-merge
  PATCH of pods/NAME/status with what changed against the pod as last seen,
  retried on 500/503/refused connections (util.PatchPodStatus);
- a binding: POST pods/NAME/binding, not retried (a failure goes through the
  scheduler's binding-failure path).

Each call knows the object it writes (the pod's UID), how to fold an older call
of its kind into itself (merge), when it would change nothing (is_noop), how to
take in a newer copy of the pod the watch delivered (sync), and how to run
(execute). RELEVANCES rank the kinds: the dispatcher keeps the more relevant of
two calls for one pod, so a binding replaces a patch still waiting, and a patch
that comes while the pod's binding waits or runs is skipped.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from kubesched.api.core import Pod, PodCondition, PodStatus
from kubesched.cluster.client import update_pod_condition
from kubesched.klog import info, kobj
from kubesched.live.errors import ApiError, decode_status, error_for
from kubesched.live.resources import BY_KIND
from kubesched.live.rest import STRATEGIC_MERGE_PATCH, RestClient

log = logging.getLogger("kubesched.live.api_calls")
T = TypeVar("T")

POD = "Pod"
POD_STATUS_PATCH = "pod_status_patch"
POD_BINDING = "pod_binding"
RELEVANCES = {POD_STATUS_PATCH: 1, POD_BINDING: 2}
# retry.DefaultBackoff: 4 steps from 10 ms, factor 5, jitter 0.1.
RETRY_DELAYS = (0.01, 0.05, 0.25)


class ApiCall(Protocol):
    """fwk.APICall: one write the dispatcher queues, merges, skips or runs."""

    call_type: str
    uid: str
    key: str

    def merge(self, old: ApiCall) -> None: ...

    def sync(self, pod: Pod) -> None: ...

    def is_noop(self) -> bool: ...

    def begin(self) -> None: ...

    async def execute(self, rest: RestClient) -> None: ...


async def with_retry(op: Callable[[], Awaitable[T]]) -> T:
    """retry.OnError(retry.DefaultBackoff, util.Retriable, op): 4 tries in about 0.3 s."""
    for delay in RETRY_DELAYS:
        try:
            return await op()
        except ApiError as err:
            if not err.retriable:
                raise
        await asyncio.sleep(delay * (1 + 0.1 * random.random()))
    return await op()


# ---------------------------------------------------------------- the status patch's body


def _time(dt: datetime | None) -> str | None:
    """metav1.Time: RFC 3339 in whole seconds."""
    return None if dt is None else dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition_json(c: PodCondition) -> dict[str, Any]:
    d: dict[str, Any] = {"type": c.type, "status": c.status}
    if c.observed_generation:
        d["observedGeneration"] = c.observed_generation
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


def _condition_needs_update(status: PodStatus, cond: PodCondition) -> bool:
    """conditionNeedsUpdate: the condition is missing, or its status, reason or message differ."""
    for c in status.conditions:
        if c.type == cond.type:
            return (c.status, c.reason, c.message) != (cond.status, cond.reason, cond.message)
    return True


# ---------------------------------------------------------------- the calls


class PodStatusPatchCall:
    """PodStatusPatchCall: a condition and/or a nominated node name (None: leave it) for one pod."""

    call_type = POD_STATUS_PATCH

    def __init__(self, pod: Pod, condition: PodCondition | None, nominated_node_name: str | None) -> None:
        m = pod.metadata
        self.uid = m.uid or f"{m.namespace}/{m.name}"
        self.namespace, self.name = m.namespace, m.name
        self.key = f"{m.namespace}/{m.name}"
        self.status = pod.status
        self.condition = condition
        self.nominated_node_name = nominated_node_name
        # Set when the call starts: a newer copy of the pod no longer changes what it sends.
        self.executed = False

    def merge(self, old: ApiCall) -> None:
        """Keep what the older patch would have written and this one does not."""
        assert isinstance(old, PodStatusPatchCall)
        if self.nominated_node_name is None and old.nominated_node_name is not None:
            self.nominated_node_name = old.nominated_node_name
        if self.condition is None and old.condition is not None:
            self.condition = old.condition

    def sync(self, pod: Pod) -> None:
        if not self.executed:
            self.status = pod.status

    def is_noop(self) -> bool:
        nnn = self.nominated_node_name
        if nnn is not None and self.status.nominated_node_name != nnn:
            return False
        return self.condition is None or not _condition_needs_update(self.status, self.condition)

    def begin(self) -> None:
        self.executed = True

    def body(self, now: datetime) -> dict[str, Any] | None:
        """The patch from the pod's status as last seen to the same with this call applied (None: no change)."""
        st = self.status
        conds = st.conditions
        if self.condition is not None:
            conds = update_pod_condition(conds, self.condition, now)
        return pod_status_patch(st.conditions, conds, st.nominated_node_name, self.nominated_node_name)

    async def execute(self, rest: RestClient) -> None:
        c = self.condition
        if c is not None:
            info(
                log,
                3,
                "Updating pod condition",
                pod=kobj(self.key),
                conditionType=c.type,
                conditionStatus=c.status,
                conditionReason=c.reason,
            )
        patch = self.body(datetime.now(UTC).replace(microsecond=0))
        if patch is None:
            info(
                log,
                5,
                "Pod status patch call does not need to be executed because it has no effect",
                pod=kobj(self.key),
            )
            return
        path = BY_KIND[POD].object_path(self.name, self.namespace, "status")

        async def send() -> None:
            await rest.call("PATCH", path, body=patch, content_type=STRATEGIC_MERGE_PATCH, kind=POD, key=self.key)

        try:
            await with_retry(send)
        except Exception as err:
            log.error("Failed to patch pod status", extra={"err": str(err), "pod": kobj(self.key)})
            raise


class PodBindingCall:
    """PodBindingCall: POST pods/NAME/binding (with the pod's UID as precondition)."""

    call_type = POD_BINDING

    def __init__(self, namespace: str, name: str, uid: str, node: str) -> None:
        self.namespace, self.name, self.node = namespace, name, node
        self.key = f"{namespace}/{name}"
        self.pod_uid = uid
        self.uid = uid or self.key

    def merge(self, old: ApiCall) -> None:
        """A newer binding simply replaces the older one."""

    def sync(self, pod: Pod) -> None:
        """Nothing to keep up to date."""

    def is_noop(self) -> bool:
        return False

    def begin(self) -> None:
        """Nothing to freeze."""

    async def execute(self, rest: RestClient) -> None:
        info(log, 3, "Attempting to bind pod to node", pod=kobj(self.key), node=self.node)
        meta = {"name": self.name, "namespace": self.namespace, **({"uid": self.pod_uid} if self.pod_uid else {})}
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": meta, "target": {"kind": "Node", "name": self.node}}
        path = BY_KIND[POD].object_path(self.name, self.namespace, "binding")
        code, payload = await rest.request("POST", path, body=body)
        if code >= 300:
            raise error_for(code, payload, POD, self.key)
        st = decode_status(payload)
        if st.kind == "Status" and st.status == "Failure":
            raise ApiError(st.code or code, st.reason, st.message)
