"""Pod <-> ResourceClaim helpers (k8s.io/dynamic-resource-allocation/resourceclaim).

Which claim a pod's `spec.resourceClaims` entry names, whether a claim was made
for the pod, and whether the pod may use (reserve) it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesched.api.resource import RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE

if TYPE_CHECKING:
    from kubesched.api.core import Pod, PodResourceClaim
    from kubesched.api.resource import ResourceClaim

ERR_CLAIM_NOT_FOUND = "ResourceClaim not created yet"
ERR_API_UNSUPPORTED = "API unsupported, neither ResourceClaimName nor ResourceClaimTemplateName are set"


class ClaimLookupError(Exception):
    """A pod claim that cannot be resolved now; the text is upstream's error string."""


def claim_name(pod: Pod, pod_claim: PodResourceClaim) -> tuple[str | None, bool]:
    """resourceclaim.Name: (claim name or None when none was generated, whether the owner must be checked)."""
    if pod_claim.resource_claim_name is not None:
        return pod_claim.resource_claim_name, False
    if pod_claim.resource_claim_template_name is not None:
        for status in pod.status.resource_claim_statuses:
            if status.name == pod_claim.name:
                return status.resource_claim_name, True
        raise ClaimLookupError(f'pod "{pod.metadata.namespace}/{pod.metadata.name}": {ERR_CLAIM_NOT_FOUND}')
    raise ClaimLookupError(
        f'pod "{pod.metadata.namespace}/{pod.metadata.name}", spec.resourceClaim "{pod_claim.name}": '
        f"{ERR_API_UNSUPPORTED}"
    )


def is_for_pod(pod: Pod, claim: ResourceClaim) -> str:
    """resourceclaim.IsForPod: "" when the pod controls the claim, else upstream's error text."""
    meta = claim.metadata
    if meta.namespace == pod.metadata.namespace:
        for ref in meta.owner_references:
            if ref.controller and ref.uid == pod.metadata.uid:
                return ""
    return (
        f"ResourceClaim {meta.namespace}/{meta.name} was not created for pod "
        f"{pod.metadata.namespace}/{pod.metadata.name} (pod is not owner)"
    )


def is_reserved_for_pod(pod: Pod, claim: ResourceClaim) -> bool:
    uid = pod.metadata.uid
    return any(ref.uid == uid for ref in claim.status.reserved_for)


def can_be_reserved(claim: ResourceClaim) -> bool:
    return len(claim.status.reserved_for) < RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE


def claim_key(claim: ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"
