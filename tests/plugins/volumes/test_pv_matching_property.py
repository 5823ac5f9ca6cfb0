"""The two-stage PV matching (candidates once, a pick per node) equals upstream's single loop."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from vol_helpers import pv, pvc

from kubesched.plugins.volumebinding.pv_util import (
    VOLUME_AVAILABLE,
    access_modes_satisfied,
    check_node_affinity,
    claim_class,
    find_matching_volume,
    is_volume_bound_to_claim,
    storage_quantity,
    volume_class,
    volume_mode_mismatch,
)


def upstream_find_matching_volume(claim: Any, volumes: list[Any], labels: dict[str, str], excluded: dict) -> Any:
    """FindMatchingVolume as written upstream (scheduler path, delayBinding true), without a selector."""
    requested = storage_quantity(claim.spec.resources.requests)
    smallest, smallest_qty = None, Fraction(0)
    for v in volumes:
        if v.metadata.name in excluded:
            continue
        if v.spec.claim_ref is not None and not is_volume_bound_to_claim(v, claim):
            continue
        qty = storage_quantity(v.spec.capacity)
        if qty < requested or volume_mode_mismatch(claim, v):
            continue
        if (claim.spec.volume_attributes_class_name or "") != (v.spec.volume_attributes_class_name or ""):
            continue
        ok = check_node_affinity(v, labels)
        if is_volume_bound_to_claim(v, claim):
            return v if ok else None
        if v.status.phase != VOLUME_AVAILABLE or volume_class(v) != claim_class(claim) or not ok:
            continue
        if not access_modes_satisfied(claim, v):
            continue
        if smallest is None or smallest_qty > qty:
            smallest, smallest_qty = v, qty
    return smallest


pv_strategy = st.builds(
    lambda i, size, host, cls, phase, mine, mode: pv(
        f"pv-{i}",
        f"{size}Gi",
        sc=cls,
        hostname=host,
        phase=phase,
        claim=(("default", "c") if mine == 1 else ("default", "x") if mine == 2 else None),
        modes=(mode,),
    )[1],
    st.integers(0, 10**6),
    st.integers(1, 8),
    st.sampled_from([None, "n1", "n2"]),
    st.sampled_from(["local", "other"]),
    st.sampled_from(["Available", "Bound", "Released"]),
    st.integers(0, 6),
    st.sampled_from(["ReadWriteOnce", "ReadWriteMany"]),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(pv_strategy, max_size=8, unique_by=lambda v: v.metadata.name),
    st.integers(1, 8),
    st.sampled_from(["n1", "n2", "n3"]),
    st.lists(st.integers(0, 7), max_size=3),
)
def test_two_stage_matching_equals_upstream_loop(volumes: list[Any], size: int, node: str, excl: list[int]) -> None:
    _, claim = pvc("c", f"{size}Gi", sc="local")
    labels = {"kubernetes.io/hostname": node}
    excluded = {volumes[i].metadata.name: volumes[i] for i in excl if i < len(volumes)}
    assert find_matching_volume(claim, volumes, labels, excluded) is upstream_find_matching_volume(
        claim, volumes, labels, excluded
    )
