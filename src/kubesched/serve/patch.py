"""Applying patches as the API server does: JSON merge patch, strategic merge patch, JSON patch
(RFC 6902, applied by the jsonpatch library, with the API server's bound on what copies may copy).

Strategic merge covers what kubectl and the scheduler send: maps merge, null
deletes, lists with a known merge key merge item by item ("$patch": "delete"
removes one), `$setElementOrder` orders them, `$deleteFromPrimitiveList`
removes scalars, `$retainKeys` prunes; other lists are replaced.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Hashable
from typing import Any

import jsonpatch
import jsonpointer
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


def _check_pointer(path: Any) -> None:
    """A JSON pointer is "" (the whole document) or a string that starts with "/"."""
    text = str(path)
    if text and not text.startswith("/"):
        raise PatchError(f"invalid JSON pointer {text!r}")


_GO_INT = re.compile(r"[+-]?[0-9]+")


def _go_indexes(doc: Any, pointer: Any) -> Any:
    """The pointer with its array indexes read as kube-apiserver's evanphx/json-patch (v4) reads them,
    written as RFC 6901 wants them: strconv.Atoi's forms ("01", "+1") and negative indexes, which count
    from the end of the array ("-1" is its last item)."""
    if not isinstance(pointer, str) or not pointer.startswith("/"):
        return pointer
    parts = pointer[1:].split("/")
    node = doc
    for i, part in enumerate(parts):
        if isinstance(node, list):
            if not _GO_INT.fullmatch(part):
                break
            index = int(part)
            if -len(node) <= index < 0:
                index += len(node)
            if index >= 0:
                parts[i] = str(index)
            node = node[index] if 0 <= index < len(node) else None
        elif isinstance(node, dict):
            node = node.get(part.replace("~1", "/").replace("~0", "~"))
        else:
            break
    return "/" + "/".join(parts)


def _resolved(doc: Any, pointer: Any) -> Any:
    """What `pointer` names in `doc`, or None when it names nothing."""
    try:
        return jsonpointer.resolve_pointer(doc, pointer)
    except (jsonpointer.JsonPointerException, TypeError, KeyError, IndexError):
        return None


def _copy_size(doc: Any, source: Any) -> int:
    """The size (as JSON) of what a copy operation would copy; 0 when `from` names no value (the copy
    then fails on its own)."""
    try:
        return len(orjson.dumps(jsonpointer.resolve_pointer(doc, source)))
    except (jsonpointer.JsonPointerException, TypeError, KeyError, IndexError):  # orjson's error is a TypeError
        return 0


# jsonpointer's words for a pointer that names nothing, and the Python error texts our own walk gave.
_POINTER_FAILURES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"member '(.*)' not found", re.S), lambda m: repr(m[1])),
    (re.compile(r"index '.*' is out of bounds", re.S), lambda m: "list index out of range"),
    (
        re.compile(r"'(.*)' is not a valid sequence index", re.S),
        lambda m: f"invalid literal for int() with base 10: {m[1]!r}",
    ),
    (re.compile(r"invalid array index '(.*)'", re.S), lambda m: f"invalid literal for int() with base 10: {m[1]!r}"),
)
_NOT_A_CONTAINER = re.compile(r"Cannot apply token '(.*)' to non-container type", re.S)
_NOTHING_TO_REMOVE = re.compile(r"can't remove a non-existent object '(.*)'", re.S)


def _patch_error(doc: Any, kind: Any, path: Any, err: Exception) -> PatchError:
    """jsonpatch's failure in the words we gave before it applied patches: "test failed at <path>",
    "replace: no value at <path>", "cannot descend into <part>", "unknown JSON patch operation <op>", or
    "<op> <path>: <what went wrong>" (a missing member or index worded as Python words its KeyError,
    IndexError or int() failure); jsonpatch's own words where ours had none."""
    text = str(err)
    if m := _NOT_A_CONTAINER.match(text):
        return PatchError(f"cannot descend into {m[1]!r}")
    for pattern, words in _POINTER_FAILURES:
        if m := pattern.match(text):
            return PatchError(f"{kind} {path}: {words(m)}")
    if m := _NOTHING_TO_REMOVE.match(text):
        parent = _resolved(doc, path.rpartition("/")[0] if isinstance(path, str) else "")
        return PatchError(f"{kind} {path}: {'pop index out of range' if isinstance(parent, list) else repr(m[1])}")
    if isinstance(err, jsonpatch.JsonPatchTestFailed):
        return PatchError(f"test failed at {path}")
    if isinstance(err, jsonpatch.InvalidJsonPatch) and text.startswith("Unknown operation"):
        return PatchError(f"unknown JSON patch operation {kind!r}")
    if kind == "replace" and text.startswith("can't replace a non-existent object"):
        return PatchError(f"replace: no value at {path}")
    return PatchError(f"{kind} {path}: {text}")


def _apply(doc: Any, op: dict[str, Any], kind: Any, path: Any) -> Any:
    """One operation applied by jsonpatch, its failure worded for the operation the patch holds."""
    try:
        return jsonpatch.JsonPatch([op]).apply(doc, in_place=True)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as err:
        raise _patch_error(doc, kind, path, err) from None
    except (KeyError, IndexError, ValueError, TypeError) as err:
        raise PatchError(f"{kind} {path}: {err}") from None


def json_patch(doc: Any, ops: list[dict[str, Any]], max_copy_bytes: int | None = None) -> Any:
    """RFC 6902 (add, remove, replace, move, copy, test), applied by the jsonpatch library one operation at
    a time. `max_copy_bytes` bounds what copy operations may copy in all (as JSON), as the API server
    bounds it: each copy can double the object otherwise."""
    doc = copy.deepcopy(doc)
    copied = 0
    for op in ops:
        kind, path = op.get("op"), op.get("path", "")
        _check_pointer(path)
        if kind in ("move", "copy"):
            _check_pointer(op.get("from", ""))
        applied = dict(op)  # jsonpatch copies the values it adds: later operations leave the patch as it was
        if "from" in applied:
            applied["from"] = _go_indexes(doc, applied["from"])
        if kind == "move" and "path" in applied and "from" in applied:
            # As evanphx/json-patch moves: the value taken out, then added at `path` as read without it.
            try:
                value = jsonpointer.resolve_pointer(doc, applied["from"])
            except jsonpointer.JsonPointerException as err:
                raise _patch_error(doc, kind, path, err) from None
            doc = _apply(doc, {"op": "remove", "path": applied["from"]}, kind, path)
            doc = _apply(doc, {"op": "add", "path": _go_indexes(doc, path), "value": value}, kind, path)
            continue
        if "path" in applied:
            applied["path"] = _go_indexes(doc, path)
        if kind == "copy" and max_copy_bytes is not None:
            copied += _copy_size(doc, applied.get("from", ""))
            if copied > max_copy_bytes:
                raise PatchError(f"Unable to copy, the accumulated size exceeds the limit of {max_copy_bytes}")
        doc = _apply(doc, applied, kind, path)
    return doc
