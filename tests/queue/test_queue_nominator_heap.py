"""The nominator (backend/queue/nominator.go) and the keyed heap (backend/heap)."""

from __future__ import annotations

import msgspec
import pytest

from kubesched.framework.types import PodInfo
from kubesched.queue.heap import KeyedHeap
from kubesched.queue.nominator import CLEAR_NOMINATED_NODE, MODE_NOOP, MODE_OVERRIDE, NominatingInfo, Nominator
from kubesched.testing import make_pod


def _pi(name: str, nominated: str = "", node: str = "") -> PodInfo:
    pod = make_pod(name, node=node)
    if nominated:
        pod = msgspec.structs.replace(pod, status=msgspec.structs.replace(pod.status, nominated_node_name=nominated))
    return PodInfo(pod)


def _names(n: Nominator, node: str) -> list[str]:
    return [p.name for p in n.nominated_pods_for_node(node)]


# ---------------------------------------------------------------- nominator


def test_noop_mode_uses_the_pods_status() -> None:
    n = Nominator()
    n.add(_pi("a", nominated="n1"), None)
    n.add(_pi("b"), NominatingInfo("", MODE_NOOP))  # no status: not nominated
    assert _names(n, "n1") == ["a"]
    assert n.nominated_node("uid-default-b") == ""
    assert n.has_nominations()


def test_override_mode_wins_over_the_status() -> None:
    n = Nominator()
    n.add(_pi("a", nominated="n1"), NominatingInfo("n2", MODE_OVERRIDE))
    assert _names(n, "n1") == []
    assert _names(n, "n2") == ["a"]
    assert n.nominated_node("uid-default-a") == "n2"


def test_adding_again_moves_the_pod_and_never_duplicates_it() -> None:
    n = Nominator()
    a = _pi("a")
    n.add(a, NominatingInfo("n1", MODE_OVERRIDE))
    n.add(_pi("b"), NominatingInfo("n1", MODE_OVERRIDE))
    n.add(a, NominatingInfo("n1", MODE_OVERRIDE))
    assert _names(n, "n1") == ["b", "a"]
    n.add(a, NominatingInfo("n2", MODE_OVERRIDE))
    assert _names(n, "n1") == ["b"]
    assert _names(n, "n2") == ["a"]


def test_clear_nomination_and_delete() -> None:
    n = Nominator()
    a = _pi("a")
    n.add(a, NominatingInfo("n1", MODE_OVERRIDE))
    n.add(a, CLEAR_NOMINATED_NODE)
    assert _names(n, "n1") == []
    assert not n.has_nominations()
    n.add(a, NominatingInfo("n1", MODE_OVERRIDE))
    n.delete(a)
    assert _names(n, "n1") == []
    assert n.nominated_node(a.uid) == ""
    n.delete(a)  # deleting twice is harmless


def test_update_keeps_an_in_memory_nomination_when_the_update_carries_none() -> None:
    n = Nominator()
    old = _pi("a")
    n.add(old, NominatingInfo("n1", MODE_OVERRIDE))
    new = PodInfo(make_pod("a", labels={"v": "2"}))
    n.update(old, new)
    assert n.nominated_pods_for_node("n1") == [new]


def test_update_follows_the_status_when_it_changes() -> None:
    n = Nominator()
    old = _pi("a", nominated="n1")
    n.add(old, None)
    new = _pi("a", nominated="n2")
    n.update(old, new)
    assert _names(n, "n1") == []
    assert _names(n, "n2") == ["a"]
    removed = _pi("a")
    n.update(new, removed)  # the status lost its nomination: so does the nominator
    assert _names(n, "n2") == []


def test_bound_or_removed_pods_are_not_nominated() -> None:
    n = Nominator(is_pod_unbound=lambda pi: not pi.node_name)
    n.add(_pi("bound", node="n1"), NominatingInfo("n1", MODE_OVERRIDE))
    n.add(_pi("free"), NominatingInfo("n1", MODE_OVERRIDE))
    assert _names(n, "n1") == ["free"]


# ---------------------------------------------------------------- heap


def _heap() -> KeyedHeap[tuple[str, int]]:
    return KeyedHeap(lambda item: item[1], lambda item: item[0])


def test_heap_pops_in_key_order() -> None:
    h = _heap()
    for item in [("c", 3), ("a", 1), ("d", 4), ("b", 2)]:
        h.add_or_update(item)
    assert len(h) == 4
    assert h.peek() == ("a", 1)
    assert [h.pop() for _ in range(4)] == [("a", 1), ("b", 2), ("c", 3), ("d", 4)]
    assert h.pop() is None
    assert h.peek() is None
    assert len(h) == 0


def test_heap_update_replaces_the_item_and_its_position() -> None:
    h = _heap()
    h.add_or_update(("a", 1))
    h.add_or_update(("b", 2))
    h.add_or_update(("a", 5))
    assert len(h) == 2
    assert h.get("a") == ("a", 5)
    assert [h.pop(), h.pop()] == [("b", 2), ("a", 5)]


def test_heap_delete_and_membership() -> None:
    h = _heap()
    for item in [("a", 1), ("b", 2), ("c", 3)]:
        h.add_or_update(item)
    assert h.delete("a") == ("a", 1)
    assert h.delete("a") is None
    assert "a" not in h and "b" in h
    assert h.get("a") is None
    assert sorted(h) == [("b", 2), ("c", 3)]
    assert h.pop() == ("b", 2)


@pytest.mark.parametrize("n", [1, 7, 50])
def test_heap_equal_keys_pop_in_insertion_order(n: int) -> None:
    h = _heap()
    for i in range(n):
        h.add_or_update((f"p{i}", 0))
    assert [h.pop()[0] for _ in range(n)] == [f"p{i}" for i in range(n)]


def test_a_flat_heap_orders_exactly_as_a_nested_one() -> None:
    """Fixed-length tuple keys laid out flat in the entries (the activeQ with PrioritySort): the same pops,
    peeks and contents as with the key nested, over random adds, updates, deletes and pops with many ties."""
    import random

    rng = random.Random(7)
    key = lambda item: (item[1], item[2])  # noqa: E731
    nested: KeyedHeap[tuple[str, int, float]] = KeyedHeap(key, lambda item: item[0])
    flat: KeyedHeap[tuple[str, int, float]] = KeyedHeap(key, lambda item: item[0], flat=True)
    for _ in range(3000):
        op = rng.random()
        if op < 0.55:
            item = (f"p{rng.randrange(60)}", -rng.choice([0, 10, 100]), float(rng.randrange(4)))
            nested.add_or_update(item)
            flat.add_or_update(item)
        elif op < 0.75:
            name = f"p{rng.randrange(60)}"
            assert nested.delete(name) == flat.delete(name)
        else:
            assert nested.pop() == flat.pop()
        assert nested.peek() == flat.peek() and len(nested) == len(flat)
    assert sorted(nested) == sorted(flat)
    assert [nested.pop() for _ in range(len(nested))] == [flat.pop() for _ in range(len(flat))]


@pytest.mark.parametrize("seed", range(4))
def test_heap_pops_the_smallest_current_entry_whatever_the_push_order(seed: int) -> None:
    """Against a plain model (the live items, the smallest key first, ties by arrival): stretches of pushes in
    increasing, decreasing and random key order, updates, deletes, peeks and pops, flat keys and nested."""
    import random

    rng = random.Random(seed)
    for flat in (False, True):
        h: KeyedHeap[tuple[str, int, float]] = KeyedHeap(lambda item: (item[1], item[2]), lambda i: i[0], flat=flat)
        model: dict[str, tuple[tuple[int, float], int, tuple[str, int, float]]] = {}
        arrivals = 0
        t = 0.0
        for _ in range(200):
            mode = rng.choice(["up", "down", "random", "ties"])
            for _ in range(rng.randrange(1, 40)):
                op = rng.random()
                if op < 0.6:
                    t += {"up": 1.0, "down": -1.0, "random": rng.uniform(-50, 50), "ties": 0.0}[mode]
                    item = (f"p{rng.randrange(80)}", -rng.choice([0, 0, 0, 10]), t)
                    arrivals += 1
                    h.add_or_update(item)
                    model[item[0]] = ((item[1], item[2]), arrivals, item)
                elif op < 0.7:
                    name = f"p{rng.randrange(80)}"
                    got = model.pop(name, None)
                    assert h.delete(name) == (got[2] if got else None)
                else:
                    want = min(model.values(), key=lambda v: (v[0], v[1]))[2] if model else None
                    assert h.peek() == want
                    assert h.pop() == want
                    if want is not None:
                        del model[want[0]]
                assert len(h) == len(model)
