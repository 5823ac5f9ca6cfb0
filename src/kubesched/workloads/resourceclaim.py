"""What the resourceclaim controller does for a pod (pkg/controller/resourceclaim), for simulations.

A pod entry with `resourceClaimTemplateName` gets its own ResourceClaim, made
from the template, owned by the pod (controller reference, annotation
`resource.kubernetes.io/pod-claim-name`) and recorded in the pod's
`status.resourceClaimStatuses`. Upstream names it with generateName
`<pod>-<podClaimName>-` and a random suffix; the conformance harness uses the
fixed suffix `xxxxx`, and so does this module by default. generateName cuts
long names short, so two pods may come to the same name: the API server then
refuses the second claim and the controller retries with another random
suffix; here the suffix of a taken name becomes `xxxx1`, `xxxx2`, ...
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from kubesched.api.core import Pod, PodResourceClaimStatus
from kubesched.api.meta import ObjectMeta, OwnerReference
from kubesched.api.resource import POD_CLAIM_NAME_ANNOTATION, ResourceClaim, ResourceClaimTemplate

MAX_BASE_LEN = 57  # 63 minus a hyphen and five random characters


def generate_name(pod_name: str, pod_claim_name: str) -> str:
    """The controller's generateName: both parts shortened in proportion when too long."""
    base = f"{pod_name}-{pod_claim_name}-"
    if len(base) > MAX_BASE_LEN:
        n = len(base)
        pod_part = pod_name[: len(pod_name) * MAX_BASE_LEN // n]
        claim_part = pod_claim_name[: len(pod_claim_name) * MAX_BASE_LEN // n]
        base = f"{pod_part}-{claim_part}"
    return base


def unique_name(base: str, suffix: str, taken: Callable[[str], bool]) -> str:
    """`base + suffix`, or, when that name is taken, the first free of `base + "xxxx1"`, `"xxxx2"`, ..."""
    name = base + suffix
    i = 0
    while taken(name):
        i += 1
        name = base + str(i).rjust(len(suffix), "x")
    return name


def claims_for_pod(
    pod: Pod,
    get_template: Callable[[str, str], ResourceClaimTemplate | None],
    suffix: str = "xxxxx",
    exists: Callable[[str, str], bool] | None = None,
) -> tuple[Pod, list[ResourceClaim]]:
    """The pod with `status.resourceClaimStatuses` filled in, and the claims to create before it.

    The pod needs a UID for the owner reference: give it one before calling (the store keeps a preset UID).
    Entries whose template does not exist are left out, so the pod waits at PreEnqueue as upstream.
    `exists(namespace, name)` tells which claim names are taken already (see the module docstring).
    """
    ns = pod.metadata.namespace or "default"
    statuses = list(pod.status.resource_claim_statuses)
    known = {s.name for s in statuses}
    claims: list[ResourceClaim] = []

    def taken(name: str) -> bool:
        return any(c.metadata.name == name for c in claims) or (exists is not None and exists(ns, name))

    for pc in pod.spec.resource_claims:
        if pc.resource_claim_template_name is None or pc.name in known:
            continue
        template = get_template(ns, pc.resource_claim_template_name)
        if template is None:
            continue
        tmeta = template.spec.metadata
        name = unique_name(generate_name(pod.metadata.name, pc.name), suffix, taken)
        owner = OwnerReference(
            api_version="v1", kind="Pod", name=pod.metadata.name, uid=pod.metadata.uid, controller=True
        )
        meta = ObjectMeta(
            name=name,
            namespace=ns,
            labels=dict(tmeta.labels),
            annotations={**tmeta.annotations, POD_CLAIM_NAME_ANNOTATION: pc.name},
            owner_references=[owner],
            finalizers=list(tmeta.finalizers),
        )
        claims.append(ResourceClaim(metadata=meta, spec=template.spec.spec))
        statuses.append(PodResourceClaimStatus(name=pc.name, resource_claim_name=name))
    if len(statuses) != len(pod.status.resource_claim_statuses):
        pod = msgspec.structs.replace(pod, status=msgspec.structs.replace(pod.status, resource_claim_statuses=statuses))
    return pod, claims
