"""The `claims` part of a simulation's output (conformance README, "Fields in NAME.expected.json")."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesched.api.resource import ResourceClaim


def claim_report(claim: ResourceClaim) -> dict[str, Any] | None:
    """One allocated claim: node (from the allocation's matchFields metadata.name), devices, requests, reservedFor."""
    alloc = claim.status.allocation
    if alloc is None:
        return None
    node = None
    if alloc.node_selector is not None:
        for term in alloc.node_selector.node_selector_terms:
            for req in term.match_fields:
                if req.key == "metadata.name" and req.operator == "In" and req.values:
                    node = req.values[0]
    ns = claim.metadata.namespace
    return {
        "node": node,
        "devices": [f"{r.driver}/{r.pool}/{r.device}" for r in alloc.devices.results],
        "requests": [r.request for r in alloc.devices.results],
        "reservedFor": [f"{ns}/{r.name}" for r in claim.status.reserved_for],
    }


def claims_report(claims: Iterable[ResourceClaim]) -> dict[str, dict[str, Any]]:
    """Every allocated claim, keyed namespace/name in sorted order; empty when none is allocated."""
    out: dict[str, dict[str, Any]] = {}
    for c in sorted(claims, key=lambda c: (c.metadata.namespace, c.metadata.name)):
        r = claim_report(c)
        if r is not None:
            out[f"{c.metadata.namespace}/{c.metadata.name}"] = r
    return out
