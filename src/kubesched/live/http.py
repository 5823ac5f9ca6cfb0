"""HTTP/1.1 to the API server over asyncio, responses parsed by httptools (llhttp).

Why not aiohttp's client: a scheduler sends two small requests per pod (the
binding and its Scheduled event), and aiohttp's per-request machinery (URL
objects, header multidicts, payload registry, timers, tracing) cost more CPU than
the scheduling cycle's filters. Here a request is one bytes write on a pooled
keep-alive connection and its answer a handful of parser callbacks; watches
are the same connections read as a stream of chunks.

Transport failures raise OSErrors: the socket's own (ConnectionRefusedError,
ConnectionResetError, ...) when connecting fails, HttpError (closed early, no
answer in time, a malformed answer) after; the caller maps them to its own errors.
"""

from __future__ import annotations

import asyncio
import ipaddress
import zlib
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from ssl import SSLContext
from urllib.parse import urlencode, urlsplit

import httptools

# Idle connections kept per server (client-go's MaxIdleConnsPerHost); more are closed when released.
MAX_IDLE = 25

# Pause reading a watch whose consumer has this many chunks waiting; resume below RESUME_AT.
PAUSE_AT = 64
RESUME_AT = 16


def is_loopback(host: str) -> bool:
    """A host on this machine: compressing what crosses loopback costs both ends CPU and saves nothing."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class HttpError(OSError):
    """The request got no complete answer."""


@dataclass
class Response:
    status: int
    body: bytes


class _Connection(asyncio.Protocol):
    """One keep-alive connection; one request in flight at a time."""

    def __init__(self, pool: HttpPool) -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.error: BaseException | None = None
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.body: list[bytes] = []
        self.keep_alive = True
        self.gzip = False
        self.framed = False  # Content-Length or chunked: the end is not the connection's end
        self.started = False  # headers in
        self.complete = False  # the whole answer in
        self.headers_done: asyncio.Future[int] | None = None
        self.done: asyncio.Future[None] | None = None
        self.chunks: asyncio.Queue[bytes | None] | None = None  # a streamed answer's decoded chunks
        self.inflate: zlib._Decompress | None = None
        self.paused = False

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as err:
            self._fail(HttpError(f"malformed answer: {err}"))
            self.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool._forget(self)
        if exc is None and self.started and not self.complete and not self.framed:
            self.on_message_complete()  # an answer delimited by the connection's end
            return
        self._fail(HttpError(f"connection closed: {exc}" if exc else "server closed the connection"))

    # -- httptools callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        low = name.lower()
        if low == b"content-encoding":
            self.gzip = value.strip().lower() == b"gzip"
        elif low in (b"content-length", b"transfer-encoding"):
            self.framed = True

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.keep_alive = self.parser.should_keep_alive()
        self.started = True
        if self.gzip:
            self.inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        if self.headers_done is not None and not self.headers_done.done():
            self.headers_done.set_result(self.status)

    def on_body(self, data: bytes) -> None:
        if self.inflate is not None:
            data = self.inflate.decompress(data)
        if self.chunks is None:
            self.body.append(data)
            return
        self.chunks.put_nowait(data)
        if not self.paused and self.chunks.qsize() >= PAUSE_AT and self.transport is not None:
            self.transport.pause_reading()
            self.paused = True

    def on_message_complete(self) -> None:
        self.complete = True
        if self.inflate is not None:
            rest = self.inflate.flush()
            if rest:
                self.on_body_decoded(rest)
        if self.chunks is not None:
            self.chunks.put_nowait(None)
        if self.done is not None and not self.done.done():
            self.done.set_result(None)

    def on_body_decoded(self, data: bytes) -> None:
        if self.chunks is None:
            self.body.append(data)
        else:
            self.chunks.put_nowait(data)

    # -- use

    def _fail(self, err: BaseException) -> None:
        self.error = err
        for fut in (self.headers_done, self.done):
            if fut is not None and not fut.done():
                fut.set_exception(err)
        if self.chunks is not None:
            self.chunks.put_nowait(None)

    def send(self, data: bytes, streamed: bool) -> None:
        loop = asyncio.get_running_loop()
        self._reset()
        self.parser = httptools.HttpResponseParser(self)
        # A plain request waits for the whole answer, a stream for its headers, then reads `chunks`.
        if streamed:
            self.headers_done = loop.create_future()
            self.chunks = asyncio.Queue()
        else:
            self.done = loop.create_future()
        assert self.transport is not None
        self.transport.write(data)

    def consumed(self) -> None:
        """The consumer took a chunk: resume a paused stream once it has caught up."""
        if self.paused and self.chunks is not None and self.chunks.qsize() <= RESUME_AT and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()

    def reusable(self) -> bool:
        return not self.closed and self.keep_alive and self.complete and self.error is None

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


class HttpPool:
    """Keep-alive connections to one server (scheme://host:port); as many as requests in flight."""

    def __init__(
        self,
        server: str,
        ssl_context: SSLContext | None,
        server_hostname: str | None,
        user_agent: str,
        compress: bool | None = None,
    ) -> None:
        parts = urlsplit(server)
        self.secure = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.secure else 80)
        self.prefix = parts.path.rstrip("/")
        self.ssl_context = ssl_context if self.secure else None
        self.server_hostname = server_hostname
        # client-go asks for gzip (the API server compresses answers over 128 KiB); by default not over loopback.
        if compress is None:
            compress = not is_loopback(self.host)
        accept = "Accept-Encoding: gzip\r\n" if compress else ""
        self._fixed = f"Host: {parts.netloc}\r\nUser-Agent: {user_agent}\r\n{accept}".encode("latin-1")
        self._idle: list[_Connection] = []
        self._all: set[_Connection] = set()

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        if self.ssl_context is not None:
            _, conn = await loop.create_connection(
                lambda: _Connection(self),
                self.host,
                self.port,
                ssl=self.ssl_context,
                server_hostname=self.server_hostname or self.host,
            )
        else:
            _, conn = await loop.create_connection(lambda: _Connection(self), self.host, self.port)
        self._all.add(conn)
        return conn

    async def _acquire(self) -> tuple[_Connection, bool]:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn, True
            self._all.discard(conn)
        return await self._connect(), False

    def _release(self, conn: _Connection) -> None:
        if conn.reusable() and len(self._idle) < MAX_IDLE:
            self._idle.append(conn)
        else:
            conn.abort()
            self._all.discard(conn)

    def _drop(self, conn: _Connection | None) -> None:
        if conn is not None:
            conn.abort()
            self._all.discard(conn)

    def _forget(self, conn: _Connection) -> None:
        """A connection closed (by either side): out of the pool, idle or not."""
        self._all.discard(conn)
        if conn in self._idle:
            self._idle.remove(conn)

    def _encode(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        headers: Sequence[tuple[str, str]],
        body: bytes | None,
    ) -> bytes:
        target = self.prefix + path
        if params:
            target += ("&" if "?" in target else "?") + urlencode(params)
        head = [f"{method} {target} HTTP/1.1\r\n".encode("latin-1"), self._fixed]
        head.extend(f"{k}: {v}\r\n".encode("latin-1") for k, v in headers)
        if body is not None or method in ("POST", "PUT", "PATCH"):
            head.append(b"Content-Length: %d\r\n" % len(body or b""))
        head.append(b"\r\n")
        if body:
            head.append(body)
        return b"".join(head)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Sequence[tuple[str, str]] = (),
        body: bytes | None = None,
        timeout: float,
    ) -> Response:
        data = self._encode(method, path, params, headers, body)
        for attempt in (0, 1):
            conn: _Connection | None = None
            reused = False
            try:
                async with asyncio.timeout(timeout):  # connecting included: a black-holed server times out too
                    conn, reused = await self._acquire()
                    conn.send(data, streamed=False)
                    assert conn.done is not None
                    await conn.done
            except HttpError:
                self._drop(conn)
                # A kept-alive connection the server closed as we wrote: resend a read once (as Go's transport does).
                if reused and attempt == 0 and method == "GET" and conn is not None and not conn.started:
                    continue
                raise
            except BaseException as err:  # timeout or cancellation: the connection's state is unknown
                self._drop(conn)
                if isinstance(err, TimeoutError):
                    raise HttpError(f"no answer within {timeout:g}s") from None
                raise
            status, body_out = conn.status, b"".join(conn.body)
            self._release(conn)
            return Response(status, body_out)
        raise AssertionError("unreachable")

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Sequence[tuple[str, str]] = (),
        connect_timeout: float,
        read_timeout: float,
    ) -> AsyncIterator[tuple[int, AsyncIterator[bytes]]]:
        """(status, the answer's chunks as they come); no chunk within read_timeout raises HttpError."""
        data = self._encode(method, path, params, headers, None)
        conn: _Connection | None = None
        try:
            try:
                async with asyncio.timeout(connect_timeout):
                    conn, _ = await self._acquire()
                    conn.send(data, streamed=True)
                    assert conn.headers_done is not None
                    status = await conn.headers_done
            except TimeoutError:
                raise HttpError(f"no answer within {connect_timeout:g}s") from None
            yield status, self._chunks(conn, read_timeout)
        except BaseException:
            self._drop(conn)
            raise
        self._release(conn)

    async def _chunks(self, conn: _Connection, read_timeout: float) -> AsyncIterator[bytes]:
        queue = conn.chunks
        assert queue is not None
        while True:
            try:
                async with asyncio.timeout(read_timeout):
                    chunk = await queue.get()
            except TimeoutError:
                raise HttpError(f"nothing read for {read_timeout:g}s") from None
            if chunk is None:
                if conn.error is not None:
                    raise conn.error
                return
            conn.consumed()
            yield chunk

    async def close(self) -> None:
        for conn in list(self._all):
            conn.abort()
        self._all.clear()
        self._idle.clear()
