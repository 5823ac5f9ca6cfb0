"""The workload controllers of `kubesched serve` (kube-controller-manager's deployment, replicaset,
replication, statefulset, daemonset, job and cronjob controllers, and the garbage collector's part).

They make what simulations make (kubesched.workloads), but as a cluster does, when objects change:
a workload created or scaled gets the pods (or the ReplicaSet, or the Job) it lacks, a deleted pod is
replaced, a pod scheduled lets an OrderedReady StatefulSet create the next one, a new node gets its
DaemonSet pods; a workload scaled down loses its surplus pods (pending ones first, then the newest), and
a deleted workload takes what it owns with it. A CronJob makes one Job, its first; Jobs' pods never finish
(no kubelet). Objects are written through the store like the API's own, so watchers see them come.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from kubesched.api.decode import decode
from kubesched.cluster.client import EmbeddedClient
from kubesched.cluster.store import ADDED, DELETED, Conflict, NotFound, object_key
from kubesched.serve.storage import ServedStore
from kubesched.workloads.daemonset import pinned_node
from kubesched.workloads.expand import WORKLOAD_KINDS, children
from kubesched.workloads.model import Child, Cluster
from kubesched.workloads.naming import ALPHABET

log = logging.getLogger("kubesched.serve")

_SCALABLE = ("ReplicaSet", "ReplicationController", "StatefulSet")


class WorkloadController:
    """Keeps every workload's children as its controller would."""

    def __init__(self, store: ServedStore, client: EmbeddedClient, rng: random.Random | None = None) -> None:
        self.store = store
        self.client = client
        self.rng = rng or random.Random()
        for kind in WORKLOAD_KINDS:
            store.subscribe(kind, self._workload_handler(kind))
        store.subscribe("Pod", self._pod_event)
        store.subscribe("Node", self._node_event)

    # ------------------------------------------------------------ events

    def _workload_handler(self, kind: str) -> Callable[[str, Any, Any], None]:
        def handle(etype: str, old: Any, new: Any) -> None:
            if etype == DELETED:
                self._collect(old)
            else:
                self.sync(kind, object_key(new))

        return handle

    def _pod_event(self, etype: str, old: Any, new: Any) -> None:
        pod = new if new is not None else old
        ref = next((r for r in pod.metadata.owner_references if r.controller), None)
        if ref is None or ref.kind not in WORKLOAD_KINDS:
            return
        owner = f"{pod.metadata.namespace}/{ref.name}"
        if etype == DELETED:
            self.sync(ref.kind, owner)  # a replacement
        elif ref.kind == "StatefulSet" and new.spec.node_name and not (old and old.spec.node_name):
            self.sync(ref.kind, owner)  # OrderedReady: the next one

    def _node_event(self, etype: str, _old: Any, new: Any) -> None:
        if etype == ADDED:
            for ds in self.store.list("DaemonSet"):
                self.sync("DaemonSet", object_key(ds))

    # ------------------------------------------------------------ sync

    def sync(self, kind: str, key: str) -> None:
        obj = self.store.find(kind, key)
        if obj is None or obj.metadata.deletion_timestamp is not None:
            return
        cluster = Cluster(
            rng=self.rng,
            pods=self.store.list("Pod"),
            nodes=self.store.list("Node"),
            claims={(c.metadata.namespace, c.metadata.name) for c in self.store.iter("PersistentVolumeClaim")},
            start=time.time(),  # a CronJob's Job is named after the wall clock's minute
        )
        if kind == "CronJob" and any(_owned_by(j, obj) for j in self.store.iter("Job")):
            self._write_status(kind, key, obj)
            return  # its first Job is made; later runs are out of scope
        claims: list[Child] = []  # a StatefulSet pod's claims come just before it, and only with it
        for child in children(kind, obj, cluster):
            if child.kind == "PersistentVolumeClaim":
                claims.append(child)
                continue
            if child.after is not None and not self._running(child.after):
                break  # OrderedReady: the rest wait for this one
            for c in [*claims, child]:
                self._make(c)
            claims = []
        if kind in _SCALABLE:
            self._scale_down(kind, obj)
        self._write_status(kind, key, obj)
        # A Deployment reports its ReplicaSets' pods.
        for ref in obj.metadata.owner_references:
            if ref.controller and ref.kind == "Deployment":
                owner = self.store.find("Deployment", f"{obj.metadata.namespace}/{ref.name}")
                if owner is not None:
                    self._write_status("Deployment", object_key(owner), owner)

    # ------------------------------------------------------------ status

    def _write_status(self, kind: str, key: str, obj: Any) -> None:
        """The status its controller reports (what `kubectl get` prints): pods counted; none is ready, as
        no kubelet runs them. Written only when it changes (the write comes back as an event)."""
        status = self._status(kind, obj)
        raw = self.store.get_raw(kind, key)
        if raw is None or raw.get("status") == status:
            return
        new = {**raw, "status": status}
        self.store.incoming[(kind, key)] = new
        group = "batch/v1" if kind in ("Job", "CronJob") else ("v1" if kind == "ReplicationController" else "apps/v1")
        self.client.update(kind, decode(kind, {"apiVersion": group, "kind": kind, **new}))

    def _status(self, kind: str, obj: Any) -> dict[str, Any]:
        pods = [p for p in self.store.iter("Pod") if _owned_by(p, obj) and p.metadata.deletion_timestamp is None]
        n = len(pods)
        generation = obj.metadata.generation or 1
        if kind in ("ReplicaSet", "ReplicationController"):
            return {"replicas": n, "fullyLabeledReplicas": n, "observedGeneration": generation}
        if kind == "Deployment":
            sets = [rs for rs in self.store.iter("ReplicaSet") if _owned_by(rs, obj)]
            n = sum(1 for p in self.store.iter("Pod") for rs in sets if _owned_by(p, rs))
            out: dict[str, Any] = {"observedGeneration": generation, "replicas": n, "updatedReplicas": n}
            if n:
                out["unavailableReplicas"] = n
            return out
        if kind == "StatefulSet":
            return {"replicas": n, "currentReplicas": n, "updatedReplicas": n, "observedGeneration": generation}
        if kind == "DaemonSet":
            desired = len({pinned_node(p) for p in pods})
            return {
                "desiredNumberScheduled": desired,
                "currentNumberScheduled": n,
                "numberMisscheduled": 0,
                "numberReady": 0,
                "updatedNumberScheduled": n,
                "numberUnavailable": n,
                "observedGeneration": generation,
            }
        if kind == "Job":
            return {"active": n} if n else {}
        return {}

    def _running(self, key: str) -> bool:
        pod = self.store.find("Pod", key)
        return pod is not None and bool(pod.spec.node_name)

    def _make(self, child: Child) -> None:
        raw = child.raw
        meta = raw["metadata"]
        ns = meta.get("namespace") or "default"
        meta["namespace"] = ns
        kind = child.kind
        if kind == "ReplicaSet" and self._update_replicas(f"{ns}/{meta['name']}", raw):
            return
        if not meta.get("name"):
            meta["name"] = self._name(kind, ns, meta.pop("generateName"))
        key = f"{ns}/{meta['name']}"
        if self.store.find(kind, key) is not None:
            return
        body = {k: v for k, v in raw.items() if k not in ("kind", "apiVersion")}
        self.store.incoming[(kind, key)] = body
        try:
            self.client.create(kind, decode(kind, raw))
        except Exception as err:  # noqa: BLE001 - a controller logs a failed create (FailedCreate) and goes on
            self.store.incoming.pop((kind, key), None)
            log.warning("Could not create %s %s: %s", kind, key, err)

    def _update_replicas(self, key: str, raw: dict[str, Any]) -> bool:
        """A Deployment scaled: its ReplicaSet exists, so only its replicas change. False if it does not exist."""
        rs = self.store.find("ReplicaSet", key)
        if rs is None:
            return False
        want = raw["spec"]["replicas"]
        if rs.spec.replicas != want:
            cur = dict(self.store.get_raw("ReplicaSet", key) or {})
            cur["spec"] = {**(cur.get("spec") or {}), "replicas": want}
            self.store.incoming[("ReplicaSet", key)] = cur
            self.client.update(
                "ReplicaSet", decode("ReplicaSet", {"apiVersion": "apps/v1", "kind": "ReplicaSet", **cur})
            )
        return True

    def _name(self, kind: str, ns: str, prefix: str) -> str:
        while True:
            name = prefix[:58] + "".join(self.rng.choice(ALPHABET) for _ in range(5))
            if self.store.find(kind, f"{ns}/{name}") is None:
                return name

    def _scale_down(self, kind: str, obj: Any) -> None:
        """Pods beyond `replicas`: a StatefulSet's highest ordinals; else pending ones first, then the newest."""
        replicas = 1 if obj.spec.replicas is None else obj.spec.replicas
        owned = [p for p in self.store.iter("Pod") if _owned_by(p, obj) and p.metadata.deletion_timestamp is None]
        surplus = len(owned) - replicas
        if surplus <= 0:
            return
        if kind == "StatefulSet":
            owned.sort(key=lambda p: -int(p.metadata.name.rsplit("-", 1)[-1]))
        else:
            owned.sort(key=lambda p: (bool(p.spec.node_name), -_created(p)))
        for p in owned[:surplus]:
            self._delete_pod(p)

    def _delete_pod(self, pod: Any) -> None:
        with contextlib.suppress(NotFound, KeyError, Conflict):
            self.client.delete_pod(pod.metadata.namespace, pod.metadata.name)

    def _collect(self, owner: Any) -> None:
        """The garbage collector: what the deleted workload owned goes too (and, through its events, theirs)."""
        for kind in ("Pod", "ReplicaSet", "Job", "PersistentVolumeClaim"):
            for obj in list(self.store.iter(kind)):
                if not any(r.uid == owner.metadata.uid for r in obj.metadata.owner_references):
                    continue
                if kind == "Pod":
                    self._delete_pod(obj)
                else:
                    with contextlib.suppress(NotFound, KeyError):
                        self.client.delete(kind, object_key(obj))


def _owned_by(obj: Any, owner: Any) -> bool:
    return any(r.controller and r.uid == owner.metadata.uid for r in obj.metadata.owner_references)


def _created(pod: Any) -> float:
    """A pod's creationTimestamp in seconds (0 for none: the server sets it on every pod it stores)."""
    ts = pod.metadata.creation_timestamp
    return ts.timestamp() if ts is not None else 0.0
