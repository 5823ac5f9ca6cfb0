"""ClusterClient: the API calls the scheduler and its plugins make (`handle.client`, clientset upstream).

Two clients implement it: cluster.client.EmbeddedClient writes into the
in-process store of `simulate`, `serve` and tests; live.client.LiveClient
speaks the Kubernetes REST API for `kubesched run`. A plugin that writes
through `handle.client` calls only these methods, and so works in both modes.
They match structurally; neither client imports this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kubesched.api.core import Pod, PodCondition


class ClusterClient(Protocol):
    """The writes (and the few reads) that go to the API server rather than to the informers' caches."""

    def get_pod(self, namespace: str, name: str) -> Pod | None:
        """The pod as the scheduler's informer last saw it (upstream reads its pod lister), None when gone."""
        ...

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        """POST pods/NAME/binding; raises cluster.store.Conflict or NotFound as the API server answers."""
        ...

    def update_pod_status(
        self,
        namespace: str,
        name: str,
        condition: PodCondition | None = None,
        nominated_node_name: str | None = None,
    ) -> object:
        """A status patch: a condition and/or status.nominatedNodeName ("" clears it); callers ignore the result."""
        ...

    def patch_pod_status(self, namespace: str, name: str, condition: PodCondition) -> object:
        """util.PatchPodStatus, written at once (preemption's DisruptionTarget); NotFound when the pod is gone."""
        ...

    def delete_pod(self, namespace: str, name: str, grace_seconds: float | None = None) -> None:
        """util.DeletePod; a KeyError (NotFound) when the pod is already gone."""
        ...

    def record_event(self, type_: str, reason: str, action: str, note: str, regarding: str, related: str = "") -> None:
        """An events.k8s.io Event about the pod `regarding` ("ns/name"), `related` naming another (the preemptor)."""
        ...

    def get(self, kind: str, key: str) -> Any:
        """Read one object of any kind from the API (a plugin's fresh copy before it updates it)."""
        ...

    def update(self, kind: str, obj: Any) -> Any:
        """Write an object back, conditional on its resourceVersion (Conflict when it changed meanwhile)."""
        ...
