"""The API the scheduler calls (bind, status patches, deletes), over the embedded store.

The live client (cluster/live) offers the same methods over HTTP, so the
scheduler and plugins never know which cluster they talk to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec

from kubesched.api.core import Container, Namespace, Node, Pod, PodCondition, ResourceRequirements
from kubesched.api.decode import NAMESPACED
from kubesched.api.meta import ObjectMeta
from kubesched.api.quantity import QuantityError, parse_resource_quantity
from kubesched.api.scheduling import PriorityClass
from kubesched.api.storage import StorageClass
from kubesched.cluster import admission
from kubesched.cluster.store import ClusterStore, Conflict, NotFound

POD = "Pod"


@dataclass(slots=True)
class Event:
    """An events.k8s.io/v1 Event as the scheduler records it."""

    type: str
    reason: str
    action: str
    note: str
    regarding: str
    related: str = ""
    time: datetime | None = None
    count: int = 1


@dataclass
class EventRecorder:
    """Keeps events; a repeat of the same (regarding, reason, note) only bumps its count."""

    clock: Callable[[], datetime]
    events: list[Event] = field(default_factory=list)
    _index: dict[tuple[str, str, str], Event] = field(default_factory=dict)

    def record(self, type_: str, reason: str, action: str, note: str, regarding: str, related: str = "") -> None:
        key = (regarding, reason, note)
        ev = self._index.get(key)
        if ev is not None:
            ev.count += 1
            ev.time = self.clock()
            return
        ev = Event(type_, reason, action, note, regarding, related, self.clock())
        self._index[key] = ev
        self.events.append(ev)


class EmbeddedClient:
    """API calls against a ClusterStore, with the API server's defaulting and admission."""

    def __init__(self, store: ClusterStore, graceful_deletion: bool = False) -> None:
        self.store = store
        self.graceful_deletion = graceful_deletion
        self.events = EventRecorder(store.clock.datetime)
        # Per-kind hooks that adjust an object before it is stored (controllers of the embedded cluster).
        self.on_create: dict[str, Callable[[Any], Any]] = {}
        # Pods whose graceful deletion is pending: key -> time at which they go away.
        self.terminating: dict[str, float] = {}

    # ------------------------------------------------------------ generic

    def create(self, kind: str, obj: Any) -> Any:
        if kind == POD:
            return self._create_pod(obj)
        if kind in NAMESPACED and not obj.metadata.namespace:
            obj = msgspec.structs.replace(obj, metadata=msgspec.structs.replace(obj.metadata, namespace="default"))
        if kind == "Node":
            obj = admission.default_node(obj)
        elif kind == "Namespace":
            obj = admission.default_namespace(obj)
        elif kind == "StorageClass":
            obj = admission.default_storage_class(obj)
        hook = self.on_create.get(kind)
        if hook is not None:
            obj = hook(obj)
        return self.store.create(kind, obj)

    def _create_pod(self, pod: Pod) -> Pod:
        """create() of a pod: the default namespace, defaulting and the Priority admission (admission.default_pod
        then admission.admit_priority), generation 1 (the pod strategy's PrepareForCreate, whatever the client
        sent) and the store's stamp, in one replace of each level (metadata, spec, status, pod); made in turn,
        the changes were 13 replaces, a third of the create."""
        spec, status = admission.defaulted_spec_status(pod, self.priority_classes())
        namespace = pod.metadata.namespace or "default"
        hook = self.on_create.get(POD)
        if hook is None:
            return self.store.create_with(POD, pod, namespace, 1, spec, status)
        meta = msgspec.structs.replace(pod.metadata, namespace=namespace, generation=1)
        return self.store.create(POD, hook(msgspec.structs.replace(pod, metadata=meta, spec=spec, status=status)))

    def update(self, kind: str, obj: Any) -> Any:
        return self.store.update(kind, obj)

    def delete(self, kind: str, key: str) -> Any:
        return self.store.delete(kind, key)

    def get(self, kind: str, key: str) -> Any:
        return self.store.get(kind, key)

    def priority_classes(self) -> dict[str, PriorityClass]:
        if not self.store.count("PriorityClass"):  # asked on every pod's create: no dict built for none
            return {}
        return {pc.metadata.name: pc for pc in self.store.iter("PriorityClass")}

    def ensure_namespace(self, name: str) -> None:
        if self.store.find("Namespace", name) is None:
            self.create("Namespace", Namespace(metadata=ObjectMeta(name=name)))

    # ------------------------------------------------------------ pods

    def get_pod(self, namespace: str, name: str) -> Pod | None:
        return self.store.find(POD, f"{namespace}/{name}")

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        """POST pods/NAME/binding: sets spec.nodeName and PodScheduled=True."""
        key = f"{namespace}/{name}"
        pod: Pod = self.store.get(POD, key)
        if uid and pod.metadata.uid != uid:
            raise Conflict(
                f'Operation cannot be fulfilled on pods/binding "{name}": the UID in the precondition does not match'
            )
        if pod.spec.node_name:
            raise Conflict(
                f'Operation cannot be fulfilled on pods/binding "{name}": '
                f'pod {name} is already assigned to node "{pod.spec.node_name}"'
            )
        if self.store.find("Node", node) is None:
            raise NotFound("Node", node)
        cond = PodCondition(type="PodScheduled", status="True", last_transition_time=self.store.clock.datetime())
        status = msgspec.structs.replace(
            pod.status,
            conditions=update_pod_condition(pod.status.conditions, cond),
            phase=pod.status.phase or "Pending",
        )
        self.store.update_with(POD, pod, msgspec.structs.replace(pod.spec, node_name=node), status)

    def update_pod_status(
        self,
        namespace: str,
        name: str,
        condition: PodCondition | None = None,
        nominated_node_name: str | None = None,
    ) -> Pod | None:
        """PATCH pods/NAME/status: a condition and/or status.nominatedNodeName ("" clears it)."""
        pod: Pod | None = self.store.find(POD, f"{namespace}/{name}")
        if pod is None:
            return None
        status = pod.status
        changes: dict[str, Any] = {}
        if condition is not None:
            conds = update_pod_condition(status.conditions, condition, self.store.clock.datetime())
            if conds is not status.conditions:
                changes["conditions"] = conds
        if nominated_node_name is not None and nominated_node_name != status.nominated_node_name:
            changes["nominated_node_name"] = nominated_node_name
        if not changes:
            return pod
        pod = quantities_through_json(pod)
        return self.store.update(POD, msgspec.structs.replace(pod, status=msgspec.structs.replace(status, **changes)))

    def patch_pod_status(self, namespace: str, name: str, condition: PodCondition) -> Pod | None:
        """util.PatchPodStatus: a condition written at once (preemption's DisruptionTarget, before the delete).

        Live mode sends it past its API dispatcher; here it is update_pod_status, and a pod that is gone
        is the API server's 404 (NotFound), as upstream's patch meets it.
        """
        if self.store.find(POD, f"{namespace}/{name}") is None:
            raise NotFound(POD, f"{namespace}/{name}")
        return self.update_pod_status(namespace, name, condition=condition)

    def delete_pod(self, namespace: str, name: str, grace_seconds: float | None = None) -> None:
        """DELETE a pod: at once, or (graceful deletion on) marked terminating until its grace period ends."""
        key = f"{namespace}/{name}"
        pod: Pod = self.store.get(POD, key)
        if not self.graceful_deletion or not pod.spec.node_name:
            self.store.delete(POD, key)
            return
        grace = grace_seconds
        if grace is None:
            grace = pod.spec.termination_grace_period_seconds
            if grace is None:
                grace = 30
        if grace <= 0:
            self.store.delete(POD, key)
            return
        if pod.metadata.deletion_timestamp is None:
            now = self.store.clock.now()
            # A graceful deletion is a change the API server counts in the generation.
            meta = msgspec.structs.replace(
                pod.metadata,
                deletion_timestamp=self.store.clock.datetime(),
                deletion_grace_period_seconds=int(grace),
                generation=pod.metadata.generation + 1,
            )
            self.store.update(POD, msgspec.structs.replace(pod, metadata=meta))
            self.terminating[key] = now + grace

    def finish_terminations(self, now: float) -> None:
        """Remove the pods whose grace period has passed."""
        for key, t in sorted(self.terminating.items(), key=lambda kv: (kv[1], kv[0])):
            if t <= now:
                del self.terminating[key]
                if self.store.find(POD, key) is not None:
                    self.store.delete(POD, key)

    def next_termination(self) -> float | None:
        return min(self.terminating.values(), default=None)

    # ------------------------------------------------------------ events

    def record_event(self, type_: str, reason: str, action: str, note: str, regarding: str, related: str = "") -> None:
        self.events.record(type_, reason, action, note, regarding, related)

    # ------------------------------------------------------------ convenience for loaders

    def add_node(self, node: Node) -> Node:
        return self.create("Node", node)

    def add_storage_class(self, sc: StorageClass) -> StorageClass:
        return self.create("StorageClass", sc)


def quantities_through_json(pod: Pod) -> Pod:
    """The pod as the reference's fake API client leaves it after a status patch.

    It applies a patch by writing the stored pod as JSON and reading it back, so
    every quantity comes back in its canonical form (Quantity.String()), and a
    form Go reads differently takes effect from then on: a request of 10**22
    bytes (an inf.Dec that Value() wraps to 1864712049423024128) is written
    "10" and read back as 10. A real API server stores the canonical form from
    the start. Only lists whose entries change form are replaced.
    """
    spec = pod.spec
    changes: dict[str, Any] = {}
    for attr in ("containers", "init_containers"):
        ctrs: list[Container] = getattr(spec, attr)
        new = [_container_through_json(c) for c in ctrs]
        if any(a is not b for a, b in zip(new, ctrs, strict=True)):
            changes[attr] = new
    overhead = _list_through_json(spec.overhead)
    if overhead is not spec.overhead:
        changes["overhead"] = overhead
    if spec.resources is not None:
        resources = _requirements_through_json(spec.resources)
        if resources is not spec.resources:
            changes["resources"] = resources
    if not changes:
        return pod
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(spec, **changes))


def _container_through_json(c: Container) -> Container:
    resources = _requirements_through_json(c.resources)
    return c if resources is c.resources else msgspec.structs.replace(c, resources=resources)


def _requirements_through_json(r: ResourceRequirements) -> ResourceRequirements:
    requests, limits = _list_through_json(r.requests), _list_through_json(r.limits)
    if requests is r.requests and limits is r.limits:
        return r
    return msgspec.structs.replace(r, requests=requests, limits=limits)


def _list_through_json(rl: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] | None = None
    for name, raw in rl.items():
        text = _text_through_json(raw)
        if text is not None:
            if out is None:
                out = dict(rl)
            out[name] = text
    return rl if out is None else out


# A quantity's text -> the text the JSON round trip leaves in its place, None when it takes no other form.
# Every status patch runs every request and limit through it: a cluster's pods share few texts.
_THROUGH_JSON: dict[str, str | None] = {}
_THROUGH_JSON_SIZE = 4096


def _text_through_json(raw: Any) -> str | None:
    if type(raw) is str:
        try:
            return _THROUGH_JSON[raw]
        except KeyError:
            pass
    try:
        before = parse_resource_quantity(raw)
    except QuantityError:
        text = None
    else:
        text = before.string()
        if text == raw:
            text = None
        else:
            after = parse_resource_quantity(text)
            if (before.dec, before.amount, before.exp) == (after.dec, after.amount, after.exp):
                text = None
    if type(raw) is str:
        if len(_THROUGH_JSON) >= _THROUGH_JSON_SIZE:
            _THROUGH_JSON.clear()
        _THROUGH_JSON[raw] = text
    return text


def update_pod_condition(
    conditions: list[PodCondition], cond: PodCondition, now: datetime | None = None
) -> list[PodCondition]:
    """UpdatePodCondition: replace the condition of the same type; keep the transition time if status is unchanged."""
    out = []
    found = False
    for c in conditions:
        if c.type == cond.type:
            found = True
            if c.status == cond.status and c.reason == cond.reason and c.message == cond.message:
                return conditions
            ltt = c.last_transition_time if c.status == cond.status else (cond.last_transition_time or now)
            out.append(msgspec.structs.replace(cond, last_transition_time=ltt))
        else:
            out.append(c)
    if not found:
        out.append(
            cond if cond.last_transition_time is not None else msgspec.structs.replace(cond, last_transition_time=now)
        )
    return out
