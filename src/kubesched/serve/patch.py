"""Applying patches as the API server does: JSON merge patch, strategic merge patch, JSON patch.

Strategic merge covers what kubectl and the scheduler send: maps merge, null
deletes, lists with a known merge key merge item by item ("$patch": "delete"
removes one), `$setElementOrder` orders them, `$deleteFromPrimitiveList`
removes scalars, `$retainKeys` prunes; other lists are replaced.
"""

from __future__ import annotations

import copy
from collections.abc import Hashable
from typing import Any

import orjson

# patchMergeKey of the list fields we serve (k8s.io/api types' struct tags).
MERGE_KEYS: dict[str, str] = {
    "conditions": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "env": "name",
    "ports": "containerPort",
    "ownerReferences": "uid",
    "imagePullSecrets": "name",
    "taints": "key",
    "addresses": "type",
    "resourceClaims": "name",
    "schedulingGates": "name",
    "readinessGates": "conditionType",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
    "topologySpreadConstraints": "topologyKey",
}
# Lists of scalars whose strategy is merge (sets).
MERGE_SCALAR_LISTS = {"finalizers"}


class PatchError(ValueError):
    """The patch cannot be applied (HTTP 422 / 400)."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    orders: dict[str, list[Any]] = {}
    retain = patch.get("$retainKeys")
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys"):
            continue
        if k.startswith("$setElementOrder/"):
            orders[k.split("/", 1)[1]] = v
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k.split("/", 1)[1]
            gone = _Members(v if isinstance(v, list) else [v])
            out[field] = [x for x in out.get(field) or [] if x not in gone]
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            merged = strategic_merge_patch(out.get(k), v)
            if merged is None:
                out.pop(k, None)
            else:
                out[k] = merged
        elif isinstance(v, list) and k in MERGE_KEYS and isinstance(out.get(k), list):
            out[k] = _merge_list(out[k], v, MERGE_KEYS[k])
        elif isinstance(v, list) and k in MERGE_SCALAR_LISTS and isinstance(out.get(k), list):
            present = _Members(out[k])
            out[k] = out[k] + [x for x in v if x not in present]
        else:
            out[k] = copy.deepcopy(v)
    for field, order in orders.items():
        key = MERGE_KEYS.get(field)
        if key and isinstance(out.get(field), list) and isinstance(order, list):
            rank = {_key_of(o, key): i for i, o in enumerate(order)}
            out[field] = sorted(out[field], key=lambda item: rank.get(_key_of(item, key), len(rank)))
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _key_of(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else item


class _Members:
    """`x in members` for a list: hashed where the items allow it, so that a long patch list against a
    long list is not quadratic; unhashable items are compared one by one, as `in` would."""

    def __init__(self, items: list[Any]) -> None:
        self.hashed = {x for x in items if isinstance(x, Hashable)}
        self.other = [x for x in items if not isinstance(x, Hashable)]

    def __contains__(self, x: Any) -> bool:
        return x in self.hashed if isinstance(x, Hashable) else x in self.other


_GONE = object()


def _merge_list(current: list[Any], patch: list[Any], key: str) -> list[Any]:
    """Merge `patch` into `current` item by item on `key`: each patch item merges into the first item with
    its key (or is appended, or deletes it). Items are found through an index of the keys, not a scan of
    the list, so that a patch of many items stays linear."""
    out: list[Any] = [copy.deepcopy(x) for x in current]
    slots: dict[Any, list[int]] = {}  # key value -> indexes in `out` of the live items with it, in order
    unhashed: list[int] = []  # indexes of dict items whose key value is unhashable

    def note(i: int) -> None:
        x = out[i]
        if isinstance(x, dict):
            k = x.get(key)
            if isinstance(k, Hashable):
                slots.setdefault(k, []).append(i)
            else:
                unhashed.append(i)

    def first(k: Any) -> int | None:
        if isinstance(k, Hashable):
            found = slots.get(k)
            return found[0] if found else None
        return next((i for i in unhashed if out[i] is not _GONE and out[i].get(key) == k), None)

    for i in range(len(out)):
        note(i)
    for item in patch:
        if not isinstance(item, dict):
            out.append(copy.deepcopy(item))
            continue
        k = item.get(key)
        idx = first(k)
        if item.get("$patch") == "delete":
            if idx is not None:
                out[idx] = _GONE
                if isinstance(k, Hashable):
                    slots[k].pop(0)
            continue
        if idx is None:
            out.append({kk: copy.deepcopy(vv) for kk, vv in item.items() if kk != "$patch"})
            note(len(out) - 1)
        else:
            out[idx] = strategic_merge_patch(out[idx], item)
    return [x for x in out if x is not _GONE]


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    for p in parts:
        if isinstance(doc, list):
            doc = doc[int(p)]
        elif isinstance(doc, dict):
            doc = doc[p]
        else:
            raise PatchError(f"cannot descend into {p!r}")
    return doc


def json_patch(doc: Any, ops: list[dict[str, Any]], max_copy_bytes: int | None = None) -> Any:
    """RFC 6902: add, remove, replace, move, copy, test. `max_copy_bytes` bounds what copy operations may
    copy in all (as JSON), as the API server bounds it: each copy can double the object otherwise."""
    doc = copy.deepcopy(doc)
    copied = 0
    for op in ops:
        kind = op.get("op")
        parts = _pointer(str(op.get("path", "")))
        try:
            if kind == "test":
                if _walk(doc, parts) != op.get("value"):
                    raise PatchError(f"test failed at {op.get('path')}")
                continue
            value = copy.deepcopy(op.get("value"))
            if kind in ("move", "copy"):
                src = _pointer(str(op.get("from", "")))
                value = _walk(doc, src)
                if kind == "copy" and max_copy_bytes is not None:
                    copied += len(orjson.dumps(value))
                    if copied > max_copy_bytes:
                        raise PatchError(f"Unable to copy, the accumulated size exceeds the limit of {max_copy_bytes}")
                value = copy.deepcopy(value)
                if kind == "move":
                    parent = _walk(doc, src[:-1])
                    parent.pop(int(src[-1]) if isinstance(parent, list) else src[-1])
                kind = "add"
            if not parts:
                doc = value
                continue
            parent = _walk(doc, parts[:-1])
            last = parts[-1]
            if kind == "add":
                if isinstance(parent, list):
                    parent.insert(len(parent) if last == "-" else int(last), value)
                else:
                    parent[last] = value
            elif kind == "remove":
                parent.pop(int(last) if isinstance(parent, list) else last)
            elif kind == "replace":
                if isinstance(parent, list):
                    parent[int(last)] = value
                else:
                    if last not in parent:
                        raise PatchError(f"replace: no value at {op.get('path')}")
                    parent[last] = value
            else:
                raise PatchError(f"unknown JSON patch operation {kind!r}")
        except (KeyError, IndexError, ValueError, TypeError) as err:
            if isinstance(err, PatchError):
                raise
            raise PatchError(f"{kind} {op.get('path')}: {err}") from None
    return doc
