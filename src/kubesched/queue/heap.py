"""A keyed binary heap with removal by key (backend/heap), built on heapq with lazy deletion."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class KeyedHeap(Generic[T]):
    """Items identified by `ident(item)`, ordered by `key(item)`; stale heap entries are skipped.

    An entry is (key, counter, item), or with `flat` (keys that are tuples of one length, e.g. PrioritySort's)
    (*key, counter, item): one tuple comparison instead of two nested ones, on every step of every push and
    pop. The counter orders equal keys by arrival and is unique, so items are never compared. An entry is
    current while the item's ident maps to that very entry; a replaced or deleted one stays in the heap until
    it surfaces, and is dropped then.
    """

    __slots__ = ("_counter", "_flat", "_heap", "_ident", "_items", "_key")

    def __init__(self, key: Callable[[T], Any], ident: Callable[[T], str], flat: bool = False) -> None:
        self._heap: list[tuple[Any, ...]] = []
        self._items: dict[str, tuple[Any, ...]] = {}
        self._key = key
        self._ident = ident
        self._flat = flat
        self._counter = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, ident: str) -> bool:
        return ident in self._items

    def get(self, ident: str) -> T | None:
        e = self._items.get(ident)
        return None if e is None else e[-1]

    def add_or_update(self, item: T) -> None:
        self._counter += 1
        key = self._key(item)
        entry = (*key, self._counter, item) if self._flat else (key, self._counter, item)
        self._items[self._ident(item)] = entry
        heapq.heappush(self._heap, entry)

    def delete(self, ident: str) -> T | None:
        e = self._items.pop(ident, None)
        return None if e is None else e[-1]

    def _clean(self) -> None:
        h, items, ident = self._heap, self._items, self._ident
        while h and items.get(ident(h[0][-1])) is not h[0]:
            heapq.heappop(h)

    def peek(self) -> T | None:
        self._clean()
        return self._heap[0][-1] if self._heap else None

    def pop(self) -> T | None:
        h, items, ident = self._heap, self._items, self._ident
        while h:
            e = heapq.heappop(h)
            item: T = e[-1]
            k = ident(item)
            if items.get(k) is e:
                del items[k]
                return item
        return None

    def __iter__(self) -> Iterator[T]:
        return (e[-1] for e in list(self._items.values()))
