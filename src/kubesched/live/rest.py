"""A thin REST client over our HTTP/1.1 pool (http.py) + orjson (no generated models on the hot path).

Requests go through the token bucket; answers are raw bytes or parsed JSON;
errors become NotFound / Conflict / ApiError (errors.py). Watches are read as a
stream of newline-delimited JSON events. Counts requests per (code, method) for
the rest_client_requests_total metric.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TypeVar

import orjson

from kubesched import __version__
from kubesched.live.errors import CONNECTION_REFUSED, ApiError, error_for
from kubesched.live.http import HttpPool
from kubesched.live.kubeconfig import Connection
from kubesched.live.ratelimit import TokenBucket

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
USER_AGENT = f"kubesched/{__version__}"
REQUEST_TIMEOUT = 30.0

T = TypeVar("T")


def _transport_reason(err: BaseException) -> str:
    """ConnectionRefused when nothing listens (net.IsConnectionRefused), ConnectionError otherwise."""
    if isinstance(err, ConnectionRefusedError) or getattr(err, "errno", None) == errno.ECONNREFUSED:
        return CONNECTION_REFUSED
    return "ConnectionError"


class RestClient:
    """HTTP to one API server; lives on the I/O loop."""

    def __init__(
        self,
        conn: Connection,
        qps: float = 50.0,
        burst: int = 100,
        user_agent: str = USER_AGENT,
        timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        self.conn = conn
        self.timeout = timeout
        self.limiter = TokenBucket(qps, burst)
        self.user_agent = user_agent
        self.pool: HttpPool | None = None
        self.requests: dict[tuple[str, str], int] = {}
        self._auth: str | None = None

    async def open(self) -> None:
        self.pool = HttpPool(self.conn.server, self.conn.ssl_context, self.conn.server_hostname, self.user_agent)

    async def close(self) -> None:
        if self.pool is not None:
            await self.pool.close()
            self.pool = None

    async def _headers(self, content_type: str | None) -> list[tuple[str, str]]:
        h = [("Accept", JSON)]
        if content_type:
            h.append(("Content-Type", content_type))
        peek = getattr(self.conn.auth_header, "peek", None)
        auth, fresh = peek() if peek is not None else (None, False)
        if not fresh:
            # The loader may run an exec plugin or read a token file: not on the loop.
            auth = await asyncio.to_thread(self.conn.auth_header)
        if auth:
            h.append(("Authorization", auth))
        return h

    def _count(self, code: int, method: str) -> None:
        k = (str(code) if code else "<error>", method)
        self.requests[k] = self.requests.get(k, 0) + 1

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> tuple[int, bytes]:
        """One request; (HTTP code, body). Transport failures raise ApiError with code 0."""
        assert self.pool is not None, "RestClient.open() first"
        await self.limiter.acquire()
        data = body if body is None or isinstance(body, bytes) else orjson.dumps(body)
        headers = await self._headers(content_type or (JSON if data is not None else None))
        try:
            resp = await self.pool.request(
                method, path, params=params, headers=headers, body=data, timeout=timeout or self.timeout
            )
        except OSError as err:
            self._count(0, method)
            raise ApiError(0, _transport_reason(err), f"{method} {path}: {err or type(err).__name__}") from None
        self._count(resp.status, method)
        return resp.status, resp.body

    async def call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
        kind: str = "",
        key: str = "",
        timeout: float | None = None,
    ) -> Any:
        """A request whose answer must be 2xx; returns the parsed JSON (None for an empty body)."""
        code, payload = await self.request(
            method, path, params=params, body=body, content_type=content_type, timeout=timeout
        )
        if code >= 300:
            raise error_for(code, payload, kind, key)
        return orjson.loads(payload) if payload else None

    async def watch(
        self, path: str, params: Mapping[str, str], timeout: float, parse: Callable[[bytes], T] = orjson.loads
    ) -> AsyncIterator[T]:
        """The events of a watch request, each line read by `parse`, until the server ends the stream.

        An error answer to the request itself is yielded as an ERROR event holding its Status.
        """
        assert self.pool is not None
        await self.limiter.acquire()
        headers = await self._headers(None)
        try:
            async with self.pool.stream(
                "GET",
                path,
                params={**params, "watch": "true"},
                headers=headers,
                connect_timeout=REQUEST_TIMEOUT,
                read_timeout=timeout + 30,
            ) as (status, chunks):
                self._count(status, "WATCH")
                if status >= 300:
                    body = b"".join([c async for c in chunks])
                    answer = (
                        orjson.loads(body) if body.startswith(b"{") else {"message": body.decode("utf-8", "replace")}
                    )
                    answer.setdefault("code", status)
                    yield parse(orjson.dumps({"type": "ERROR", "object": answer}))
                    return
                buf = b""
                async for chunk in chunks:
                    buf += chunk
                    while True:
                        nl = buf.find(b"\n")
                        if nl < 0:
                            break
                        line, buf = buf[:nl], buf[nl + 1 :]
                        if line.strip():
                            yield parse(line)
                if buf.strip():
                    yield parse(buf)
        except OSError as err:
            self._count(0, "WATCH")
            raise ApiError(0, "ConnectionError", f"watch {path}: {err or type(err).__name__}") from None
