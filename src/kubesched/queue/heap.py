"""A keyed binary heap with removal by key (backend/heap), built on heapq with lazy deletion."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class KeyedHeap(Generic[T]):
    """Items identified by `ident(item)`, ordered by `key(item)`; stale heap entries are skipped."""

    __slots__ = ("_counter", "_heap", "_ident", "_items", "_key")

    def __init__(self, key: Callable[[T], Any], ident: Callable[[T], str]) -> None:
        self._heap: list[list[Any]] = []
        self._items: dict[str, list[Any]] = {}
        self._key = key
        self._ident = ident
        self._counter = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, ident: str) -> bool:
        return ident in self._items

    def get(self, ident: str) -> T | None:
        e = self._items.get(ident)
        return None if e is None else e[2]

    def add_or_update(self, item: T) -> None:
        ident = self._ident(item)
        old = self._items.get(ident)
        if old is not None:
            old[3] = False
        self._counter += 1
        entry = [self._key(item), self._counter, item, True]
        self._items[ident] = entry
        heapq.heappush(self._heap, entry)

    def delete(self, ident: str) -> T | None:
        e = self._items.pop(ident, None)
        if e is None:
            return None
        e[3] = False
        item: T = e[2]
        return item

    def _clean(self) -> None:
        h = self._heap
        while h and not h[0][3]:
            heapq.heappop(h)

    def peek(self) -> T | None:
        self._clean()
        return self._heap[0][2] if self._heap else None

    def pop(self) -> T | None:
        self._clean()
        if not self._heap:
            return None
        e = heapq.heappop(self._heap)
        item: T = e[2]
        del self._items[self._ident(item)]
        return item

    def __iter__(self) -> Iterator[T]:
        return (e[2] for e in list(self._items.values()))
