"""A front for the real API server that can hold one request until the test lets it through.

Some of the scheduler's failure paths start with a race it cannot win: the pod
is bound by someone else, or deleted, between the scheduling decision and the
`pods/binding` POST. The proxy makes that window as wide as a test needs: it
holds the scheduler's POST, the test changes the cluster through the API server
directly, then releases the POST, and the real kube-apiserver answers it (409,
404) with its own words. kubesched and kube-scheduler reach the proxy through a
kubeconfig without credentials (plain HTTP on loopback); the proxy forwards
everything as the admin over TLS, streaming watches through as they come.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from dataclasses import dataclass, field
from typing import Any

from aiohttp import ClientSession, ClientTimeout, web

# Connection-level headers are the proxy's own business on each side.
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "upgrade", "te"}


@dataclass
class Hold:
    """The first `method` request whose path ends with `path_suffix`: held until `release()`."""

    method: str
    path_suffix: str
    arrived: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)
    body: bytes = b""

    def matches(self, method: str, path: str) -> bool:
        return not self.arrived.is_set() and method == self.method and path.endswith(self.path_suffix)

    def wait(self, timeout: float = 20.0) -> bytes:
        """Until the request is held; its body."""
        assert self.arrived.wait(timeout), f"no {self.method} ...{self.path_suffix} within {timeout}s"
        return self.body

    def release(self) -> None:
        self.released.set()


class HoldingProxy:
    """HTTP on 127.0.0.1 in front of `upstream` (HTTPS, reached with `ssl_context`), on its own thread."""

    def __init__(self, upstream: str, ssl_context: ssl.SSLContext) -> None:
        self.upstream = upstream
        self.ssl_context = ssl_context
        self.holds: list[Hold] = []
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="holding-proxy", daemon=True)
        self._runner: web.AppRunner | None = None
        self._session: ClientSession | None = None

    def hold(self, method: str, path_suffix: str) -> Hold:
        h = Hold(method, path_suffix)
        self.holds.append(h)
        return h

    def start(self) -> str:
        self._thread.start()
        self.url = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self.url

    def stop(self) -> None:
        for h in self.holds:
            h.release()
        with contextlib.suppress(Exception):  # best effort at teardown
            asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _start(self) -> str:
        self._session = ClientSession(auto_decompress=False, timeout=ClientTimeout(total=None))
        app = web.Application(client_max_size=64 << 20)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"http://127.0.0.1:{port}"

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        for h in self.holds:
            if h.matches(request.method, request.path):
                h.body = body
                h.arrived.set()
                await asyncio.get_running_loop().run_in_executor(None, h.released.wait)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP | {"authorization"}}
        assert self._session is not None
        async with self._session.request(
            request.method, self.upstream + request.path_qs, headers=headers, data=body or None, ssl=self.ssl_context
        ) as up:
            out_headers: dict[str, Any] = {k: v for k, v in up.headers.items() if k.lower() not in HOP_BY_HOP}
            resp = web.StreamResponse(status=up.status, headers=out_headers)
            await resp.prepare(request)
            async for chunk in up.content.iter_any():
                await resp.write(chunk)
            await resp.write_eof()
            return resp
