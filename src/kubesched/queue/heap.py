"""A keyed binary heap with removal by key (backend/heap), built on heapq with lazy deletion.

Entries pushed in increasing order (a batch of pods created one after another, alike in priority) queue up in
a plain run beside the heap instead: popping the head of a sorted run costs one comparison, where a heap of
150,000 entries sifts through seventeen levels of scattered tuples. Every pop takes the smaller of the two
heads, so the order is the heap's.
"""

from __future__ import annotations

import heapq
from collections import deque
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

    __slots__ = ("_counter", "_flat", "_heap", "_ident", "_items", "_key", "_run")

    def __init__(self, key: Callable[[T], Any], ident: Callable[[T], str], flat: bool = False) -> None:
        self._heap: list[tuple[Any, ...]] = []
        # Entries in increasing order, each pushed after the run's last (see the module's docstring).
        self._run: deque[tuple[Any, ...]] = deque()
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
        run = self._run
        if not run or run[-1] < entry:
            run.append(entry)
        else:
            heapq.heappush(self._heap, entry)

    def delete(self, ident: str) -> T | None:
        e = self._items.pop(ident, None)
        return None if e is None else e[-1]

    def _head(self) -> tuple[Any, ...] | None:
        """The smallest entry, current or not (left where it is)."""
        h, run = self._heap, self._run
        if not run:
            return h[0] if h else None
        if not h or run[0] < h[0]:
            return run[0]
        return h[0]

    def _take(self) -> tuple[Any, ...] | None:
        """The smallest entry, current or not, taken out."""
        h, run = self._heap, self._run
        if not run:
            return heapq.heappop(h) if h else None
        if not h or run[0] < h[0]:
            return run.popleft()
        return heapq.heappop(h)

    def _clean(self) -> None:
        items, ident = self._items, self._ident
        while (e := self._head()) is not None and items.get(ident(e[-1])) is not e:
            self._take()

    def peek(self) -> T | None:
        self._clean()
        e = self._head()
        return None if e is None else e[-1]

    def pop(self) -> T | None:
        items, ident = self._items, self._ident
        while (e := self._take()) is not None:
            item: T = e[-1]
            k = ident(item)
            if items.get(k) is e:
                del items[k]
                return item
        return None

    def __iter__(self) -> Iterator[T]:
        return (e[-1] for e in list(self._items.values()))
