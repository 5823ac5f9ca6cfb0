"""The store's buffered watch events: delivered in order, some withheld to arrive after later ones."""

from __future__ import annotations

from typing import Any

from kubesched.cluster.client import POD, EmbeddedClient
from kubesched.cluster.store import ClusterStore
from kubesched.testing import make_pod


def test_withheld_events_arrive_after_those_written_meanwhile_in_their_own_order() -> None:
    store = ClusterStore()
    seen: list[tuple[str, str]] = []
    store.subscribe(POD, lambda etype, old, new: seen.append((etype, (new or old).metadata.name)))
    client = EmbeddedClient(store)
    client.create(POD, make_pod("a", "1"))
    buffered = len(store.pending)
    client.create(POD, make_pod("b", "1"))
    client.create(POD, make_pod("c", "1"))
    held: list[Any] = store.withhold(buffered)
    client.create(POD, make_pod("d", "1"))
    store.deliver()
    assert [name for _, name in seen] == ["a", "d"]
    store.redeliver(held)
    store.deliver()
    assert [name for _, name in seen] == ["a", "d", "b", "c"]
