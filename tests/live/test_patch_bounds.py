"""Patches stay linear in their size: a strategic merge of many list items, or of many set members, costs
what the items cost, not their product; JSON patch copies are bounded in all."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.serve.patch import PatchError, json_patch, strategic_merge_patch


def _merge_list_by_scanning(current: list[Any], patch: list[Any], key: str) -> list[Any]:
    """The item-by-item merge as it was written first (a scan of the list per patch item): the reference."""
    out = [copy.deepcopy(x) for x in current]
    for item in patch:
        if not isinstance(item, dict):
            out.append(copy.deepcopy(item))
            continue
        k = item.get(key)
        idx = next((i for i, x in enumerate(out) if isinstance(x, dict) and x.get(key) == k), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
            continue
        if idx is None:
            out.append({kk: copy.deepcopy(vv) for kk, vv in item.items() if kk != "$patch"})
        else:
            out[idx] = strategic_merge_patch(out[idx], item)
    return out


names = st.sampled_from(["a", "b", "c", 1, None])
items = st.one_of(
    st.fixed_dictionaries(
        {"name": names}, optional={"image": st.sampled_from(["x", "y"]), "$patch": st.just("delete")}
    ),
    st.fixed_dictionaries({"image": st.just("z")}),  # no key: matches items without one
    st.sampled_from(["plain", 7]),
)


@given(st.lists(items, max_size=8), st.lists(items, max_size=8))
def test_indexed_merge_agrees_with_scanning(current: list[Any], patch: list[Any]) -> None:
    current = [{k: v for k, v in x.items() if k != "$patch"} if isinstance(x, dict) else x for x in current]
    got = strategic_merge_patch({"containers": current}, {"containers": patch})
    assert got["containers"] == _merge_list_by_scanning(current, patch, "name")


def test_many_items_are_merged_in_linear_time() -> None:
    n = 20_000
    pod = {"spec": {"containers": [{"name": f"c{i}"} for i in range(n)]}, "metadata": {"finalizers": []}}
    pod["metadata"]["finalizers"] = [f"f{i}" for i in range(n)]
    patch = {
        "spec": {"containers": [{"name": f"n{i}", "image": "x"} for i in range(n)]},
        "metadata": {"finalizers": [f"g{i}" for i in range(n)], "$deleteFromPrimitiveList/finalizers": ["f1"] * n},
    }
    start = time.perf_counter()
    out = strategic_merge_patch(pod, patch)
    assert time.perf_counter() - start < 5  # was minutes: every patch item scanned the whole list
    assert len(out["spec"]["containers"]) == 2 * n
    assert len(out["metadata"]["finalizers"]) == 2 * n - 1


def test_json_patch_copies_are_bounded() -> None:
    doc = {"a": {"x": "y" * 1000}}
    ops = [{"op": "copy", "from": "/a", "path": f"/a/c{i}"} for i in range(40)]
    with pytest.raises(PatchError, match="Unable to copy, the accumulated size exceeds the limit of 100000"):
        json_patch(doc, ops, max_copy_bytes=100_000)
    assert len(json_patch(doc, ops[:3], max_copy_bytes=100_000)["a"]) == 4
