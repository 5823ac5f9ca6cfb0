"""The embedded cluster: an in-process object store with watch events.

It plays the API server for simulations: objects are created, replaced and
deleted through a small API (the same calls the live client makes), each change
gets a resourceVersion, and watchers receive ADDED / MODIFIED / DELETED events.

Events are buffered and handed out by `deliver()`: the scheduler drains them
between its own steps, as an informer would deliver them between API calls,
so a plugin never sees the cache change under its feet mid-cycle.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from kubesched.api.meta import ObjectMeta
from kubesched.cluster.clock import Clock, VirtualClock

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

Handler = Callable[[str, Any, Any], None]


class _FinalStateUnknown:
    """The `new` of a DELETED event that a relist found rather than a watch saw (see FINAL_STATE_UNKNOWN)."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return False  # `new or old` still reads the deleted object

    def __repr__(self) -> str:
        return "FINAL_STATE_UNKNOWN"


# A handler's `new` is None for a DELETED event, except when the deletion was missed and a relist found the
# object gone (client-go's DeletedFinalStateUnknown): then it is FINAL_STATE_UNKNOWN, and `old`, the last state
# seen, may be stale (a pod bound meanwhile still looks unbound). Only a live cluster's mirror emits it.
FINAL_STATE_UNKNOWN: Any = _FinalStateUnknown()


class NotFound(KeyError):
    """The object does not exist (HTTP 404)."""

    def __init__(self, kind: str, key: str) -> None:
        super().__init__(f"{kind} {key!r} not found")
        self.kind = kind
        self.key = key

    def __str__(self) -> str:
        return str(self.args[0])


class Conflict(RuntimeError):
    """The object already exists, or changed meanwhile (HTTP 409)."""


def object_key(obj: Any) -> str:
    meta: ObjectMeta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def _list_order(obj: Any) -> tuple[str, str]:
    meta = obj.metadata
    return (meta.namespace or "", meta.name or "")


class ClusterStore:
    """Objects by kind and key, with resourceVersions and buffered watch events."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or VirtualClock()
        self.objects: dict[str, dict[str, Any]] = {}
        self._rv = itertools.count(1)
        self._uid = itertools.count(1)
        self._handlers: dict[str, list[Handler]] = {}
        self.pending: deque[tuple[str, str, Any, Any]] = deque()
        # create_with / update_with fold their changes into the stamp's replaces, unless a subclass overrides
        # the writes they stand for (ServedStore keeps JSON beside each object): then they build the changed
        # object and hand it to its create / update.
        cls = type(self)
        self._folds_writes = (
            cls.create is ClusterStore.create
            and cls.update is ClusterStore.update
            and cls._stamp is ClusterStore._stamp
        )

    # ------------------------------------------------------------ watch

    def subscribe(self, kind: str, handler: Handler) -> None:
        """Watch a kind; like an informer's initial list, existing objects arrive first as ADDED.

        A LIST from the API server comes in storage-key order (namespace, then
        name), not creation order; the order matters downstream (e.g. the order
        of pods in a NodeInfo, which decides how upstream's unstable sort orders
        preemption victims).
        """
        self._handlers.setdefault(kind, []).append(handler)
        existing = sorted(self.objects.get(kind, {}).values(), key=_list_order)
        for obj in existing:
            handler(ADDED, None, obj)

    def deliver(self) -> int:
        """Hand buffered events to the watchers, in order; returns how many were delivered."""
        n = 0
        pending, handlers = self.pending, self._handlers  # read once: a batch's run delivers two events a pod
        while pending:
            kind, etype, old, new = pending.popleft()
            for h in handlers.get(kind, ()):
                h(etype, old, new)
            n += 1
        return n

    def withhold(self, buffered: int) -> list[tuple[str, str, Any, Any]]:
        """Take back the events buffered after the first `buffered` (len(store.pending) before some writes): an
        informer that sees them later than the rest (see redeliver)."""
        taken = [self.pending.pop() for _ in range(len(self.pending) - buffered)]
        taken.reverse()
        return taken

    def redeliver(self, events: list[tuple[str, str, Any, Any]]) -> None:
        """Buffer withheld events again, after those buffered meanwhile."""
        self.pending.extend(events)

    def _emit(self, kind: str, etype: str, old: Any, new: Any) -> None:
        if self._handlers.get(kind):
            self.pending.append((kind, etype, old, new))

    # ------------------------------------------------------------ reads

    def get(self, kind: str, key: str) -> Any:
        try:
            return self.objects[kind][key]
        except KeyError:
            raise NotFound(kind, key) from None

    def find(self, kind: str, key: str) -> Any | None:
        bucket = self.objects.get(kind)
        return bucket.get(key) if bucket is not None else None

    def list(self, kind: str) -> list[Any]:
        return list(self.objects.get(kind, {}).values())

    def iter(self, kind: str) -> Iterator[Any]:
        return iter(self.objects.get(kind, {}).values())

    def count(self, kind: str) -> int:
        return len(self.objects.get(kind, {}))

    # ------------------------------------------------------------ writes

    def _stamp(self, obj: Any, new: bool, kept: ObjectMeta | None = None) -> Any:
        """The object with its next resourceVersion, in one replace of its metadata (per write: keyword
        arguments, not a dict of changes). A new object gets a uid and a creationTimestamp if it has none;
        an update keeps those of `kept`, the stored object's metadata."""
        meta: ObjectMeta = obj.metadata
        rv = str(next(self._rv))
        if kept is not None:
            meta = msgspec.structs.replace(
                meta, resource_version=rv, uid=kept.uid, creation_timestamp=kept.creation_timestamp
            )
        elif new:
            uid, created = self._identity(meta)
            meta = msgspec.structs.replace(meta, resource_version=rv, uid=uid, creation_timestamp=created)
        else:
            meta = msgspec.structs.replace(meta, resource_version=rv)
        return msgspec.structs.replace(obj, metadata=meta)

    def _identity(self, meta: ObjectMeta) -> tuple[str, Any]:
        """A new object's uid and creationTimestamp: its own, else the next uid and the clock's time."""
        # str.zfill: what f"{n:08d}" gives for n >= 0, without parsing a format spec per object.
        uid = meta.uid or f"{meta.name}-{str(next(self._uid)).zfill(8)}"
        created = meta.creation_timestamp
        return uid, (created if created is not None else self.clock.datetime())

    def _vacant(self, kind: str, key: str) -> dict[str, Any]:
        """The kind's bucket, where `key` is free (else Conflict, as a create of an existing object)."""
        bucket = self.objects.setdefault(kind, {})
        if key in bucket:
            raise Conflict(f'{kind} "{key}" already exists')
        return bucket

    def _stored(self, kind: str, key: str) -> tuple[dict[str, Any], Any]:
        """The kind's bucket and the object stored at `key` (else NotFound, as an update of a missing one)."""
        bucket = self.objects.setdefault(kind, {})
        old = bucket.get(key)
        if old is None:
            raise NotFound(kind, key)
        return bucket, old

    def create(self, kind: str, obj: Any) -> Any:
        key = object_key(obj)
        bucket = self._vacant(kind, key)
        obj = self._stamp(obj, new=True)
        bucket[key] = obj
        self._emit(kind, ADDED, None, obj)
        return obj

    def create_with(self, kind: str, obj: Any, namespace: str, generation: int, spec: Any, status: Any) -> Any:
        """create() of `obj` with this namespace and generation in its metadata, and this spec and status.

        The metadata is replaced once, with the stamp, and the object once: the API server's create of a
        pod sets all four, and a replace per change cost as much as the rest of the create.
        """
        meta: ObjectMeta = obj.metadata
        if not self._folds_writes:
            meta = msgspec.structs.replace(meta, namespace=namespace, generation=generation)
            return self.create(kind, msgspec.structs.replace(obj, metadata=meta, spec=spec, status=status))
        key = f"{namespace}/{meta.name}" if namespace else meta.name
        bucket = self._vacant(kind, key)
        uid, created = self._identity(meta)
        meta = msgspec.structs.replace(
            meta,
            namespace=namespace,
            generation=generation,
            resource_version=str(next(self._rv)),
            uid=uid,
            creation_timestamp=created,
        )
        obj = msgspec.structs.replace(obj, metadata=meta, spec=spec, status=status)
        bucket[key] = obj
        self._emit(kind, ADDED, None, obj)
        return obj

    def update(self, kind: str, obj: Any) -> Any:
        key = object_key(obj)
        bucket, old = self._stored(kind, key)
        obj = self._stamp(obj, new=False, kept=old.metadata)
        bucket[key] = obj
        self._emit(kind, MODIFIED, old, obj)
        return obj

    def update_with(self, kind: str, obj: Any, spec: Any, status: Any) -> Any:
        """update() of `obj` with this spec and status, set in the replace that stamps it (a bind sets both)."""
        if not self._folds_writes:
            return self.update(kind, msgspec.structs.replace(obj, spec=spec, status=status))
        key = object_key(obj)
        bucket, old = self._stored(kind, key)
        # As _stamp stamps an update.
        kept: ObjectMeta = old.metadata
        meta = msgspec.structs.replace(
            obj.metadata,
            resource_version=str(next(self._rv)),
            uid=kept.uid,
            creation_timestamp=kept.creation_timestamp,
        )
        obj = msgspec.structs.replace(obj, metadata=meta, spec=spec, status=status)
        bucket[key] = obj
        self._emit(kind, MODIFIED, old, obj)
        return obj

    def delete(self, kind: str, key: str) -> Any:
        bucket = self.objects.get(kind, {})
        old = bucket.pop(key, None)
        if old is None:
            raise NotFound(kind, key)
        self._emit(kind, DELETED, old, None)
        return old
