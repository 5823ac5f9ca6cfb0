"""What a controller is given (the cluster as declared) and what it makes (raw manifests, in creation order)."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesched.api.core import Node, Pod
from kubesched.cluster.clock import EPOCH


@dataclass
class Child:
    """An object a controller creates, as it would POST it: `after` names (namespace/name) the pod that must
    be running before this one is created (a StatefulSet's OrderedReady)."""

    kind: str
    raw: dict[str, Any]
    after: str | None = None


@dataclass
class Cluster:
    """The declared objects controllers read: existing pods and claims, the nodes; the seeded generator."""

    rng: random.Random
    pods: list[Pod] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    claims: set[tuple[str, str]] = field(default_factory=set)  # (namespace, name)
    # Unix time the simulation starts at (a CronJob's first Job is named after its minute).
    start: float = EPOCH.timestamp()

    # Pods by (namespace, controller kind, controller name), and pods without a controller by namespace:
    # built once, so that a snapshot with thousands of ReplicaSets is not read once per ReplicaSet.
    _by_owner: dict[tuple[str, str, str], list[Pod]] | None = field(default=None, repr=False)
    _orphans: dict[str, list[Pod]] | None = field(default=None, repr=False)

    def _index(self) -> None:
        self._by_owner, self._orphans = {}, {}
        for p in self.pods:
            ns = p.metadata.namespace or "default"
            ref = next((r for r in p.metadata.owner_references if r.controller), None)
            if ref is None:
                self._orphans.setdefault(ns, []).append(p)
            else:
                self._by_owner.setdefault((ns, ref.kind, ref.name), []).append(p)

    def owned_pods(self, kind: str, meta: Any) -> list[Pod]:
        """Pods whose controller reference names this object (by kind and name: a snapshot drops the owner's
        uid, never the reference's)."""
        if self._by_owner is None:
            self._index()
        assert self._by_owner is not None
        return self._by_owner.get((meta.namespace or "default", kind, meta.name), [])

    def orphans(self, namespace: str) -> list[Pod]:
        """The namespace's pods that no controller owns (a ReplicaSet may adopt them)."""
        if self._orphans is None:
            self._index()
        assert self._orphans is not None
        return self._orphans.get(namespace or "default", [])


def controller_ref(api_version: str, kind: str, meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta.name,
        "uid": meta.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def wire(obj: Any) -> Any:
    """An API struct as JSON-ready builtins (camelCase, defaults left out)."""
    return msgspec.to_builtins(obj)


def pod_from_template(
    template: Any, namespace: str, owner: dict[str, Any], *, name: str = "", generate_name: str = ""
) -> dict[str, Any]:
    """A pod as a controller creates it from its template: the template's labels and annotations, its spec."""
    tmeta = template.metadata
    meta: dict[str, Any] = {"namespace": namespace, "ownerReferences": [owner]}
    if name:
        meta["name"] = name
    else:
        meta["generateName"] = generate_name
    if tmeta.labels:
        meta["labels"] = dict(tmeta.labels)
    if tmeta.annotations:
        meta["annotations"] = dict(tmeta.annotations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": wire(template.spec)}


def labels_of(raw: dict[str, Any]) -> dict[str, str]:
    return raw["metadata"].setdefault("labels", {})


def with_node_names(nodes: Iterable[Node]) -> list[Node]:
    """Nodes in the order a lister returns them (by name)."""
    return sorted(nodes, key=lambda n: n.metadata.name)
