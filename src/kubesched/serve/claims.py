"""The resourceclaim controller of `kubesched serve` (kube-controller-manager's, pkg/controller/resourceclaim).

In a cluster a pod whose `spec.resourceClaims` names a `resourceClaimTemplateName`
only becomes schedulable once this controller has created its ResourceClaim
from the template and recorded it in `status.resourceClaimStatuses`
(DynamicResources' PreEnqueue waits for both). serve has no
kube-controller-manager, so the served cluster runs this part of it: when a
pod is created or changed, and when a template it waits for appears, each
template entry gets a claim made as simulations make it (`claims_for_pod`)
with upstream's generateName `<pod>-<claim name>-` and a random suffix, an
owner reference to the pod (controller, blockOwnerDeletion) and the
`resource.kubernetes.io/pod-claim-name` annotation. The claim is created
first, then the pod's status is written, as upstream's syncPod does.

Both writes go through the served store like the API's own: the claim's JSON
starts from the template's (fields our structs do not model survive), the
pod's status write replaces only `status.resourceClaimStatuses` in the pod's
JSON, and watchers see an ADDED claim and a MODIFIED pod.

When a pod is deleted, the controller's other half (syncClaim) runs for the
claims it held: its `status.reservedFor` entry is removed and a claim left
without consumers is deallocated (allocation cleared, then the
`resource.kubernetes.io/delete-protection` finalizer removed), named claims
included. serve has no garbage collector, so the owner reference alone would
never remove a claim: the claims the pod controlled are then deleted, as the
garbage collector deletes them in a cluster.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import random
from typing import Any

import msgspec

from kubesched.api.core import Pod, PodResourceClaimStatus
from kubesched.api.resource import FINALIZER, POD_CLAIM_NAME_ANNOTATION, ResourceClaim
from kubesched.cluster.client import EmbeddedClient
from kubesched.cluster.store import ADDED, DELETED, Conflict, NotFound, object_key
from kubesched.serve.storage import ServedStore
from kubesched.workloads.resourceclaim import claims_for_pod, generate_name

# The API server's generateName alphabet (k8s.io/apimachinery/pkg/util/rand): no vowels, no look-alikes.
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
TERMINAL_PHASES = ("Succeeded", "Failed")

log = logging.getLogger("kubesched.serve")


class ResourceClaimController:
    """Creates pods' claims from their templates; frees and removes them when the pod is deleted."""

    def __init__(self, store: ServedStore, client: EmbeddedClient, rng: random.Random | None = None) -> None:
        self.store = store
        self.client = client
        self.rng = rng or random.Random()
        store.subscribe("Pod", self._pod_event)
        store.subscribe("ResourceClaimTemplate", self._template_event)

    # ------------------------------------------------------------ events

    def _pod_event(self, etype: str, old: Any, new: Any) -> None:
        if not (new or old).spec.resource_claims:  # nothing to make, and it holds no claim (upstream's enqueuePod)
            return
        if etype == DELETED:
            self._pod_gone(old)
        else:
            self.sync_pod(object_key(new))

    def _template_event(self, etype: str, _old: Any, new: Any) -> None:
        """A template that appears later: the pods waiting for it get their claims now (upstream retries them)."""
        if etype != ADDED:
            return
        ns, name = new.metadata.namespace, new.metadata.name
        for pod in self.store.list("Pod"):
            if pod.metadata.namespace == ns and any(
                pc.resource_claim_template_name == name for pc in pod.spec.resource_claims
            ):
                self.sync_pod(object_key(pod))

    # ------------------------------------------------------------ syncPod

    def sync_pod(self, key: str) -> None:
        """Create the missing claims of the pod's template entries, then record them in its status."""
        pod: Pod | None = self.store.find("Pod", key)
        if pod is None or not _needs_claims(pod):
            return
        before = pod
        pod, claims = claims_for_pod(
            self._adopt_orphans(pod),
            lambda ns, name: self.store.find("ResourceClaimTemplate", f"{ns}/{name}"),
            suffix="".join(self.rng.choices(SUFFIX_ALPHABET, k=5)),
            exists=lambda ns, name: self.store.find("ResourceClaim", f"{ns}/{name}") is not None,
        )
        failed = {c.metadata.name for c in claims if not self._create_claim(pod, c)}
        statuses = [s for s in pod.status.resource_claim_statuses if s.resource_claim_name not in failed]
        if len(statuses) == len(before.status.resource_claim_statuses):
            return
        # The pods/status write: the pod's JSON with only status.resourceClaimStatuses replaced.
        raw = copy.deepcopy(self.store.get_raw("Pod", key) or {})
        raw.setdefault("status", {})["resourceClaimStatuses"] = msgspec.to_builtins(statuses)
        self.store.incoming[("Pod", key)] = raw
        status = msgspec.structs.replace(before.status, resource_claim_statuses=statuses)
        self.client.update("Pod", msgspec.structs.replace(before, status=status))

    def _adopt_orphans(self, pod: Pod) -> Pod:
        """Claims this pod owns but its status lost (a client replaced it): recorded again, not made twice.

        Upstream's findPodResourceClaim does the same before it creates a claim.
        """
        known = {s.name for s in pod.status.resource_claim_statuses}
        wanted = {pc.name for pc in pod.spec.resource_claims if pc.resource_claim_template_name} - known
        if not wanted:
            return pod
        found: list[PodResourceClaimStatus] = []
        for claim in self.store.iter("ResourceClaim"):
            entry = claim.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION)
            if entry in wanted and claim.metadata.namespace == pod.metadata.namespace and _owned_by(claim, pod):
                found.append(PodResourceClaimStatus(name=entry, resource_claim_name=claim.metadata.name))
                wanted.discard(entry)
        if not found:
            return pod
        statuses = [*pod.status.resource_claim_statuses, *found]
        status = msgspec.structs.replace(pod.status, resource_claim_statuses=statuses)
        return msgspec.structs.replace(pod, status=status)

    def _create_claim(self, pod: Pod, claim: ResourceClaim) -> bool:
        """POST the claim as upstream builds it (generateName, blockOwnerDeletion, the template's spec JSON)."""
        key = object_key(claim)
        entry = claim.metadata.annotations[POD_CLAIM_NAME_ANNOTATION]
        template = next(pc.resource_claim_template_name for pc in pod.spec.resource_claims if pc.name == entry)
        traw = self.store.get_raw("ResourceClaimTemplate", f"{claim.metadata.namespace}/{template}") or {}
        refs = [msgspec.structs.replace(r, block_owner_deletion=True) for r in claim.metadata.owner_references]
        meta = msgspec.structs.replace(
            claim.metadata, generate_name=generate_name(pod.metadata.name, entry), owner_references=refs
        )
        claim = msgspec.structs.replace(claim, metadata=meta)
        body = msgspec.to_builtins(claim)
        body.pop("status", None)
        if isinstance((traw.get("spec") or {}).get("spec"), dict):
            body["spec"] = copy.deepcopy(traw["spec"]["spec"])
        self.store.incoming[("ResourceClaim", key)] = body
        try:
            self.client.create("ResourceClaim", claim)
        except Conflict as err:  # claims_for_pod checked the name, so never; upstream would retry
            self.store.incoming.pop(("ResourceClaim", key), None)
            log.warning("Cannot create a ResourceClaim", extra={"claim": key, "err": str(err)})
            return False
        return True

    # ------------------------------------------------------------ a pod goes: syncClaim, and the garbage collector

    def _pod_gone(self, pod: Pod) -> None:
        """Free what the pod held, as upstream's syncClaim does, then delete the claims it owned as the GC does.

        Reservations of the pod are dropped; a claim nobody holds any more is deallocated (status.allocation
        cleared, then the delete-protection finalizer removed). That status write is what requeues pods that
        wait for the devices (DynamicResources' hint: a claim got deallocated); a bare deletion would not.
        """
        for claim in list(self.store.iter("ResourceClaim")):
            if claim.metadata.namespace != pod.metadata.namespace:
                continue
            key = object_key(claim)
            reserved = [r for r in claim.status.reserved_for if r.uid != pod.metadata.uid]
            if len(reserved) < len(claim.status.reserved_for):
                status = msgspec.structs.replace(claim.status, reserved_for=reserved)
                if not reserved and FINALIZER in claim.metadata.finalizers:
                    status = msgspec.structs.replace(status, allocation=None)
                claim = self.client.update("ResourceClaim", msgspec.structs.replace(claim, status=status))
                if claim.status.allocation is None and FINALIZER in claim.metadata.finalizers:
                    finalizers = [f for f in claim.metadata.finalizers if f != FINALIZER]
                    meta = msgspec.structs.replace(claim.metadata, finalizers=finalizers)
                    claim = self.client.update("ResourceClaim", msgspec.structs.replace(claim, metadata=meta))
            if _owned_by(claim, pod):
                with contextlib.suppress(NotFound):
                    self.client.delete("ResourceClaim", key)


def _needs_claims(pod: Pod) -> bool:
    """Upstream skips pods being deleted or done; others need work while a template entry lacks its status."""
    if pod.metadata.deletion_timestamp is not None or pod.status.phase in TERMINAL_PHASES:
        return False
    known = {s.name for s in pod.status.resource_claim_statuses}
    return any(pc.resource_claim_template_name and pc.name not in known for pc in pod.spec.resource_claims)


def _owned_by(claim: ResourceClaim, pod: Pod) -> bool:
    return any(
        ref.controller and ref.kind == "Pod" and ref.uid == pod.metadata.uid for ref in claim.metadata.owner_references
    )
