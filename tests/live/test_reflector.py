"""The reflector's LISTs: which resourceVersion it asks for, and how it pages (client-go's rules)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from kubesched.live.reflector import Gone, Reflector
from kubesched.live.resources import BY_KIND


class _Server:
    """Answers LISTs from a script: (code, body) per request, and records the query of each."""

    def __init__(self, answers: list[tuple[int, dict[str, Any]]]) -> None:
        self.answers = answers
        self.queries: list[dict[str, str]] = []

    async def request(self, method: str, path: str, *, params: dict[str, str], **_: Any) -> tuple[int, bytes]:
        self.queries.append(dict(params))
        code, body = self.answers.pop(0)
        return code, orjson.dumps(body)


def _node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def _page(rv: str, *names: str, token: str = "") -> tuple[int, dict[str, Any]]:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if token:
        meta["continue"] = token
    return 200, {"kind": "NodeList", "metadata": meta, "items": [_node(n) for n in names]}


_GONE = (410, {"kind": "Status", "status": "Failure", "reason": "Expired", "code": 410, "message": "too old"})


def _reflector(server: _Server) -> Reflector:
    return Reflector(server, BY_KIND["Node"], lambda _item: None)  # type: ignore[arg-type]


def test_the_first_list_reads_the_watch_cache_and_the_next_one_starts_from_the_last_version_seen() -> None:
    server = _Server([_page("7", "a", "b"), _page("12", "a")])
    r = _reflector(server)
    items, rv = asyncio.run(r.list())
    assert ([n.metadata.name for n in items], rv) == (["a", "b"], "7")
    assert server.queries[0] == {"limit": "500", "resourceVersion": "0"}
    r.resource_version = "11"  # the watch saw this much before it ended
    asyncio.run(r.list())
    # Unpaged: with a limit, the server would list exactly version 11, which a restarted server's watch cannot
    # continue from (410 again, for ever); without one it answers at its current version, 11 or newer.
    assert server.queries[1] == {"resourceVersion": "11"}


def test_a_server_that_pages_gets_paged_relists() -> None:
    server = _Server([_page("9", "a", token="t1"), _page("9", "b"), _page("12", "a")])
    r = _reflector(server)
    asyncio.run(r.list())
    r.resource_version = "11"
    asyncio.run(r.list())
    assert server.queries[2] == {"limit": "500", "resourceVersion": "11"}


def test_a_version_too_old_to_list_from_falls_back_to_a_consistent_read() -> None:
    server = _Server([_GONE, _page("20", "a")])
    r = _reflector(server)
    r.resource_version = "3"
    items, rv = asyncio.run(r.list())
    assert rv == "20" and [n.metadata.name for n in items] == ["a"]
    assert server.queries == [{"resourceVersion": "3"}, {"limit": "500"}]
    assert r.relist_version() == ""


def test_pages_carry_the_continue_token_and_never_a_resource_version_with_it() -> None:
    server = _Server([_page("9", "a", token="t1"), _page("9", "b")])
    items, rv = asyncio.run(_reflector(server).list())
    assert [n.metadata.name for n in items] == ["a", "b"] and rv == "9"
    assert server.queries[1] == {"limit": "500", "continue": "t1"}


class _Watch:
    """Streams scripted watch lines through the real parse hook, as RestClient.watch does."""

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = lines

    async def watch(self, path: str, params: dict[str, str], timeout: float, parse: Any) -> Any:
        for line in self.lines:
            yield parse(line)


def test_watch_events_arrive_typed_and_an_undecodable_object_is_skipped_but_counted_as_seen() -> None:
    got: list[tuple[Any, ...]] = []
    bad = {**_node("b"), "status": {"capacity": {"cpu": "lots"}}, "metadata": {"name": "b", "resourceVersion": "31"}}
    lines = [
        orjson.dumps({"type": "ADDED", "object": {**_node("a"), "metadata": {"name": "a", "resourceVersion": "30"}}}),
        orjson.dumps({"type": "MODIFIED", "object": bad}),
        orjson.dumps({"type": "BOOKMARK", "object": {"kind": "Node", "metadata": {"resourceVersion": "40"}}}),
    ]
    r = Reflector(_Watch(lines), BY_KIND["Node"], got.append)  # type: ignore[arg-type]
    r.resource_version = "29"
    asyncio.run(r.watch())
    assert [(what, kind, etype, obj.metadata.name) for what, kind, etype, obj in got] == [
        ("event", "Node", "ADDED", "a")
    ]
    assert r.resource_version == "40"
    r.rest = _Watch(lines[:2])  # type: ignore[assignment]
    asyncio.run(r.watch())
    assert r.resource_version == "31"


def test_a_watch_error_is_gone_or_an_api_error() -> None:
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}}
    r = Reflector(_Watch([orjson.dumps(gone)]), BY_KIND["Node"], lambda _i: None)  # type: ignore[arg-type]
    with pytest.raises(Gone):
        asyncio.run(r.watch())
