from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from extender_helpers import FakeServer, ReferenceServer, free_port


@pytest.fixture
def reference(tmp_path: Path) -> Iterator[Callable[..., ReferenceServer]]:
    """Start the golden cases' extender server: reference(*args, nodes=[manifests])."""
    started: list[ReferenceServer] = []

    def start(*args: str, nodes: list[dict[str, Any]] | None = None) -> ReferenceServer:
        srv = ReferenceServer(args, nodes, tmp_path)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()


@pytest.fixture
def fake() -> Iterator[Callable[..., FakeServer]]:
    """Start a scriptable extender: fake({"filter": Canned(200, b"...")})."""
    started: list[FakeServer] = []

    def start(replies: dict[str, Any] | None = None, tls: Any = None) -> FakeServer:
        srv = FakeServer(replies, tls)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()


@pytest.fixture
def down_url() -> str:
    """A URL where nothing listens."""
    return f"http://127.0.0.1:{free_port()}"
