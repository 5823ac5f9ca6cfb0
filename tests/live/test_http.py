"""kubesched.live.http (HttpPool) against small raw asyncio servers on loopback that write exact HTTP bytes."""

from __future__ import annotations

import asyncio
import errno
import gzip
import itertools
import socket
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from kubesched.live.errors import ApiError
from kubesched.live.http import HttpError, HttpPool, is_loopback
from kubesched.live.kubeconfig import Connection
from kubesched.live.rest import RestClient

# No test may take longer than this, whatever the pool does (a hang fails the test instead of the run).
TEST_LIMIT = 3.0


def run(coro: Coroutine[Any, Any, None]) -> None:
    async def limited() -> None:
        async with asyncio.timeout(TEST_LIMIT):
            await coro

    asyncio.run(limited())


# -- a raw HTTP/1.1 server


@dataclass
class Request:
    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes
    conn: int  # which accepted connection (0, 1, ...) it came on

    def header(self, name: str) -> str | None:
        values = [v for k, v in self.headers if k.lower() == name.lower()]
        assert len(values) <= 1, (name, self.headers)
        return values[0] if values else None


Handler = Callable[["RawServer", asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


class RawServer:
    """Calls `handler(server, reader, writer, index)` for each accepted connection (index 0, 1, ...)."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[Request] = []
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writers: list[asyncio.StreamWriter] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        index = self.connections
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.append(writer)
        try:
            await self.handler(self, reader, writer, index)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away: what some tests do on purpose
        except asyncio.CancelledError:
            pass  # __aexit__ ends the handlers still running (asyncio logs a handler task that ends cancelled)
        finally:
            writer.close()
            self._tasks.discard(task)

    async def read(self, reader: asyncio.StreamReader, conn: int) -> Request | None:
        """The next request on this connection (recorded in `requests`), None at its end."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        lines = head[:-4].decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ")
        assert version == "HTTP/1.1", lines[0]
        headers = [(k, v.strip()) for k, v in (line.split(":", 1) for line in lines[1:])]
        req = Request(method, target, headers, b"", conn)
        length = int(req.header("Content-Length") or 0)
        req.body = await reader.readexactly(length) if length else b""
        self.requests.append(req)
        return req

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for w in self._writers:
            w.transport.abort()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()


def response(body: bytes, status: str = "200 OK", headers: Sequence[str] = ()) -> bytes:
    head = "".join(f"{h}\r\n" for h in (f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", *headers))
    return head.encode() + b"\r\n" + body


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"


def answer_each(make: Callable[[Request], bytes]) -> Handler:
    """A keep-alive server: answers every request on a connection with make(request)."""

    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        while (req := await srv.read(reader, index)) is not None:
            writer.write(make(req))
            await writer.drain()

    return handler


def echo_target(req: Request) -> bytes:
    return response(f"{req.method} {req.target}".encode())


@asynccontextmanager
async def pool_on(srv: RawServer, prefix: str = "") -> AsyncIterator[HttpPool]:
    pool = HttpPool(srv.url + prefix, None, None, "kubesched-test/1")
    try:
        yield pool
    finally:
        await pool.close()


def free_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- 1. what is sent, and a Content-Length framed answer


def test_request_sends_method_target_headers_and_body_and_reads_a_content_length_answer() -> None:
    payload = orjson.dumps({"apiVersion": "v1", "kind": "Binding", "target": {"kind": "Node", "name": "n1"}})

    async def main() -> None:
        # The answer is framed by Content-Length and the server keeps the connection open: the client must not
        # wait for the connection's end (it would time out).
        created = answer_each(lambda r: response(b'{"status":"Success"}', "201 Created"))
        async with RawServer(created) as srv, pool_on(srv) as pool:
            resp = await pool.request(
                "POST",
                "/api/v1/namespaces/default/pods/p1/binding",
                params={"fieldSelector": "spec.nodeName=", "dryRun": "All"},
                headers=[("Content-Type", "application/json"), ("Authorization", "Bearer tok")],
                body=payload,
                timeout=1.0,
            )
        assert (resp.status, resp.body) == (201, b'{"status":"Success"}')
        [req] = srv.requests
        assert req.method == "POST"
        assert req.target == "/api/v1/namespaces/default/pods/p1/binding?fieldSelector=spec.nodeName%3D&dryRun=All"
        assert req.header("Host") == f"127.0.0.1:{srv.port}"
        assert req.header("Content-Length") == str(len(payload))
        assert req.header("Content-Type") == "application/json"
        assert req.header("Authorization") == "Bearer tok"
        assert req.header("User-Agent") == "kubesched-test/1"
        assert req.body == payload

    run(main())


def test_get_sends_no_body_and_a_server_path_prefixes_every_target() -> None:
    async def main() -> None:
        async with RawServer(answer_each(echo_target)) as srv, pool_on(srv, "/k8s/clusters/c1/") as pool:
            resp = await pool.request("GET", "/api/v1/pods?limit=1", params={"continue": "a b"}, timeout=1.0)
            empty_post = await pool.request("POST", "/x", timeout=1.0)
        assert resp.body == b"GET /k8s/clusters/c1/api/v1/pods?limit=1&continue=a+b"
        get, post = srv.requests
        assert get.header("Content-Length") is None and get.body == b""
        assert post.header("Content-Length") == "0"  # a POST always says how long its (empty) body is
        assert empty_post.status == 200

    run(main())


# -- 2. chunked and gzip answers

DOC = orjson.dumps({"items": [{"metadata": {"name": f"pod-{i}", "namespace": "default"}} for i in range(200)]})


def test_request_dechunks_a_chunked_answer() -> None:
    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        while await srv.read(reader, index) is not None:
            writer.write(CHUNKED_HEAD + chunk(DOC[:100]))
            await writer.drain()
            await asyncio.sleep(0.01)
            writer.write(chunk(DOC[100:101]) + chunk(DOC[101:]) + LAST_CHUNK)
            await writer.drain()

    async def main() -> None:
        async with RawServer(handler) as srv, pool_on(srv) as pool:
            first = await pool.request("GET", "/api/v1/pods", timeout=1.0)
            second = await pool.request("GET", "/api/v1/pods", timeout=1.0)
        assert (first.status, first.body) == (200, DOC)
        assert second.body == DOC  # the chunked answer ended at its last chunk: the connection was reused
        assert srv.connections == 1

    run(main())


def test_request_decompresses_a_gzip_answer_and_asks_for_gzip() -> None:
    compressed = gzip.compress(DOC)
    assert len(compressed) < len(DOC)

    async def main() -> None:
        answer = response(compressed, headers=["Content-Encoding: gzip"])
        async with RawServer(answer_each(lambda r: answer)) as srv:
            pool = HttpPool(srv.url, None, None, "test", compress=True)
            try:
                resp = await pool.request("GET", "/api/v1/pods", timeout=1.0)
            finally:
                await pool.close()
        assert resp.body == DOC
        assert srv.requests[0].header("Accept-Encoding") == "gzip"

    run(main())


def test_a_server_on_loopback_is_not_asked_for_gzip() -> None:
    async def main() -> None:
        async with RawServer(answer_each(lambda r: response(DOC))) as srv, pool_on(srv) as pool:
            resp = await pool.request("GET", "/api/v1/pods", timeout=1.0)
        assert resp.body == DOC
        assert srv.requests[0].header("Accept-Encoding") is None

    run(main())


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.4.5", True),
        ("::1", True),
        ("localhost", True),
        ("10.0.0.1", False),
        ("api.example.com", False),
        ("::ffff:10.0.0.1", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_stream_dechunks_and_decompresses_a_gzip_chunked_answer() -> None:
    compressed = gzip.compress(DOC)

    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        await srv.read(reader, index)
        writer.write(CHUNKED_HEAD.replace(b"\r\n\r\n", b"\r\nContent-Encoding: gzip\r\n\r\n"))
        for i in range(0, len(compressed), 50):
            writer.write(chunk(compressed[i : i + 50]))
            await writer.drain()
        writer.write(LAST_CHUNK)
        await reader.read()  # keep the connection open until the client is done

    async def main() -> None:
        async with RawServer(handler) as srv, pool_on(srv) as pool:
            stream = pool.stream("GET", "/api/v1/pods", connect_timeout=1.0, read_timeout=1.0)
            async with stream as (status, chunks):
                got = [c async for c in chunks]
        assert status == 200
        assert b"".join(got) == DOC

    run(main())


# -- 3. an answer delimited by the connection's end


def test_an_answer_ended_by_closing_the_connection_is_returned_whole() -> None:
    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        await srv.read(reader, index)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + DOC[:300])
        await writer.drain()
        await asyncio.sleep(0.02)
        writer.write(DOC[300:])
        await writer.drain()
        writer.close()

    async def main() -> None:
        async with RawServer(handler) as srv, pool_on(srv) as pool:
            first = await pool.request("GET", "/api/v1/pods", timeout=1.0)
            second = await pool.request("GET", "/api/v1/pods", timeout=1.0)
        assert (first.status, first.body) == (200, DOC)
        assert second.body == DOC
        assert srv.connections == 2

    run(main())


def test_a_reset_in_the_middle_of_an_answer_ended_by_the_connection_is_an_error() -> None:
    """A connection reset cuts such an answer short: it must not be returned as if it were whole."""

    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        await srv.read(reader, index)
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + DOC[:300])
        await writer.drain()
        await asyncio.sleep(0.05)  # the client has read the partial body
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # an RST, not a FIN

    async def main() -> None:
        async with RawServer(handler) as srv, pool_on(srv) as pool:
            with pytest.raises(HttpError):
                resp = await pool.request("GET", "/api/v1/pods", timeout=1.0)
                pytest.fail(f"a reset answer was returned as complete: {resp.status}, {len(resp.body)} bytes")

    run(main())


# -- 4. keep-alive


def test_sequential_requests_reuse_one_connection() -> None:
    async def main() -> None:
        async with RawServer(answer_each(echo_target)) as srv, pool_on(srv) as pool:
            a = await pool.request("GET", "/a", timeout=1.0)
            b = await pool.request("PUT", "/b", body=b"{}", timeout=1.0)
            c = await pool.request("GET", "/c", timeout=1.0)
        assert [a.body, b.body, c.body] == [b"GET /a", b"PUT /b", b"GET /c"]
        assert srv.connections == 1
        assert [r.conn for r in srv.requests] == [0, 0, 0]

    run(main())


def test_an_answer_with_connection_close_is_not_reused() -> None:
    # The server says `Connection: close` but leaves the socket open and would answer more: the client must go by
    # the header and open a new connection.
    def make(req: Request) -> bytes:
        return response(req.target.encode(), headers=["Connection: close"] if req.target == "/closing" else [])

    async def main() -> None:
        async with RawServer(answer_each(make)) as srv, pool_on(srv) as pool:
            a = await pool.request("GET", "/closing", timeout=1.0)
            b = await pool.request("GET", "/next", timeout=1.0)
            c = await pool.request("GET", "/again", timeout=1.0)
        assert [a.body, b.body, c.body] == [b"/closing", b"/next", b"/again"]
        assert [r.conn for r in srv.requests] == [0, 1, 1]

    run(main())


def test_a_stream_read_to_its_end_gives_its_connection_back() -> None:
    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        while (req := await srv.read(reader, index)) is not None:
            writer.write(CHUNKED_HEAD + chunk(req.target.encode()) + LAST_CHUNK)
            await writer.drain()

    async def main() -> None:
        async with RawServer(handler) as srv, pool_on(srv) as pool:
            async with pool.stream("GET", "/watch", connect_timeout=1.0, read_timeout=1.0) as (_, chunks):
                assert [c async for c in chunks] == [b"/watch"]
            resp = await pool.request("GET", "/after", timeout=1.0)
        assert resp.body == b"/after"
        assert srv.connections == 1

    run(main())


# -- 5. a server that closes a kept-alive connection


def close_after_first(make: Callable[[Request], bytes]) -> Handler:
    """Connection 0 answers one request, reads the next and closes without answering (an idle timeout racing the
    client's write); later connections answer everything."""

    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        if index == 0:
            req = await srv.read(reader, index)
            assert req is not None
            writer.write(make(req))
            await writer.drain()
            await srv.read(reader, index)
            return  # closes the connection: no answer bytes
        await answer_each(make)(srv, reader, writer, index)

    return handler


def test_a_get_on_a_connection_the_server_closed_is_resent_on_a_new_one() -> None:
    async def main() -> None:
        async with RawServer(close_after_first(echo_target)) as srv, pool_on(srv) as pool:
            await pool.request("GET", "/first", timeout=1.0)
            resp = await pool.request("GET", "/second", timeout=1.0)
        assert (resp.status, resp.body) == (200, b"GET /second")
        assert [(r.target, r.conn) for r in srv.requests] == [("/first", 0), ("/second", 0), ("/second", 1)]

    run(main())


def test_a_post_on_a_connection_the_server_closed_is_not_resent() -> None:
    """A write may have been applied: only a GET that got no answer bytes is resent. The POST fails, once."""

    async def main() -> None:
        async with RawServer(close_after_first(echo_target)) as srv, pool_on(srv) as pool:
            await pool.request("GET", "/first", timeout=1.0)
            with pytest.raises(HttpError):
                await pool.request("POST", "/bind", body=b"{}", timeout=1.0)
            after = await pool.request("GET", "/after", timeout=1.0)
        assert after.body == b"GET /after"
        assert [(r.target, r.conn) for r in srv.requests] == [("/first", 0), ("/bind", 0), ("/after", 1)]

    run(main())


def test_a_connection_closed_while_idle_is_not_used_again() -> None:
    """The server closes the idle connection and the client has seen it: GET and POST both go on a new one."""

    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        req = await srv.read(reader, index)
        assert req is not None
        writer.write(echo_target(req))
        await writer.drain()
        # an idle timeout: then the connection is closed

    async def main() -> None:
        async with RawServer(handler) as srv, pool_on(srv) as pool:
            for method in ("GET", "POST", "GET"):
                resp = await pool.request(method, "/x", timeout=1.0)
                assert resp.body == f"{method} /x".encode()
                await asyncio.sleep(0.05)  # the server's close reaches the client
        assert [r.conn for r in srv.requests] == [0, 1, 2]

    run(main())


# -- 6. connection refused


def test_connection_refused_is_an_oserror_with_econnrefused() -> None:
    port = free_port()

    async def main() -> None:
        pool = HttpPool(f"http://127.0.0.1:{port}", None, None, "t")
        with pytest.raises(OSError) as err:
            await pool.request("GET", "/", timeout=1.0)
        assert err.value.errno == errno.ECONNREFUSED
        with pytest.raises(OSError) as err:
            async with pool.stream("GET", "/", connect_timeout=1.0, read_timeout=1.0):
                pass
        assert err.value.errno == errno.ECONNREFUSED
        await pool.close()

    run(main())


def test_rest_client_reports_a_refused_connection_as_connection_refused() -> None:
    port = free_port()

    async def main() -> None:
        rest = RestClient(Connection(server=f"http://127.0.0.1:{port}"))
        await rest.open()
        try:
            with pytest.raises(ApiError) as err:
                await rest.request("GET", "/api/v1/nodes", timeout=1.0)
        finally:
            await rest.close()
        assert (err.value.code, err.value.reason) == (0, "ConnectionRefused")
        assert err.value.retriable
        assert rest.requests == {("<error>", "GET"): 1}

    run(main())


# -- 7. timeouts


def test_a_server_that_never_answers_times_out_and_its_connection_is_dropped() -> None:
    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        if index == 0:
            req = await srv.read(reader, index)
            assert req is not None
            await asyncio.sleep(0.4)  # too late: the client gave up; it must not take this for the next answer
            writer.write(response(b"stale"))
            await writer.drain()
            await reader.read()
            return
        await answer_each(lambda r: response(b"fresh"))(srv, reader, writer, index)

    async def main() -> None:
        async with RawServer(handler) as srv, pool_on(srv) as pool:
            t0 = time.monotonic()
            with pytest.raises(HttpError):
                await pool.request("GET", "/slow", timeout=0.2)
            elapsed = time.monotonic() - t0
            assert 0.19 <= elapsed < 0.35, elapsed
            await asyncio.sleep(0.3)  # the stale answer is sent now
            resp = await pool.request("GET", "/next", timeout=1.0)
        assert resp.body == b"fresh"
        assert [r.conn for r in srv.requests] == [0, 1]

    run(main())


def test_a_stream_without_headers_times_out_after_connect_timeout() -> None:
    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        await srv.read(reader, index)
        await reader.read()

    async def main() -> None:
        async with RawServer(handler) as srv, pool_on(srv) as pool:
            t0 = time.monotonic()
            with pytest.raises(HttpError):
                async with pool.stream("GET", "/watch", connect_timeout=0.2, read_timeout=5.0):
                    pytest.fail("no headers were sent")
            assert 0.19 <= time.monotonic() - t0 < 0.35

    run(main())


def test_the_timeout_covers_connecting() -> None:
    """A server whose accept queue is full never completes the TCP handshake (an API server behind a black hole):
    the request's timeout (and a stream's connect_timeout) must still end the wait."""

    async def main() -> None:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = []
        for _ in range(5):  # fill the accept queue: later SYNs are dropped, so connecting hangs
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            fillers.append(s)
        await asyncio.sleep(0.05)
        pool = HttpPool(f"http://127.0.0.1:{port}", None, None, "t")
        try:
            for what in ("request", "stream"):
                t0 = time.monotonic()
                try:
                    async with asyncio.timeout(0.6):
                        with pytest.raises(HttpError):
                            if what == "request":
                                await pool.request("GET", "/", timeout=0.2)
                            else:
                                async with pool.stream("GET", "/", connect_timeout=0.2, read_timeout=5.0):
                                    pass
                except TimeoutError:
                    pytest.fail(f"{what} with a 0.2s timeout still waiting to connect after 0.6s")
                assert time.monotonic() - t0 < 0.35
        finally:
            await pool.close()
            for s in [*fillers, listener]:
                s.close()

    run(main())


# -- 8. stream


def test_stream_yields_each_chunk_as_it_arrives() -> None:
    first_seen = asyncio.Event()

    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        await srv.read(reader, index)
        writer.write(CHUNKED_HEAD + chunk(b'{"type":"ADDED"}\n'))
        await writer.drain()
        await first_seen.wait()  # the second event only once the client has the first
        writer.write(chunk(b'{"type":"MODIFIED"}\n'))
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(LAST_CHUNK)
        await writer.drain()
        await reader.read()

    async def main() -> None:
        got: list[bytes] = []
        async with (
            RawServer(handler) as srv,
            pool_on(srv) as pool,
            pool.stream("GET", "/api/v1/pods", params={"watch": "true"}, connect_timeout=1.0, read_timeout=1.0) as (
                status,
                chunks,
            ),
        ):
            assert status == 200
            async for c in chunks:
                got.append(c)
                first_seen.set()
        assert got == [b'{"type":"ADDED"}\n', b'{"type":"MODIFIED"}\n']
        assert srv.requests[0].target == "/api/v1/pods?watch=true"

    run(main())


def test_a_stream_cut_in_the_middle_raises() -> None:
    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        await srv.read(reader, index)
        writer.write(CHUNKED_HEAD + chunk(b'{"type":"ADDED"}\n') + b'40\r\n{"type":')  # a chunk cut short
        await writer.drain()
        await asyncio.sleep(0.02)

    async def main() -> None:
        got: list[bytes] = []
        t0 = time.monotonic()
        async with RawServer(handler) as srv, pool_on(srv) as pool:
            with pytest.raises(HttpError):
                async with pool.stream("GET", "/w", connect_timeout=1.0, read_timeout=1.0) as (_, chunks):
                    async for c in chunks:
                        got.append(c)
        assert time.monotonic() - t0 < 0.5  # at the connection's end, not after read_timeout
        assert b"".join(got).startswith(b'{"type":"ADDED"}\n')

    run(main())


def test_a_silent_stream_raises_after_read_timeout() -> None:
    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        await srv.read(reader, index)
        writer.write(CHUNKED_HEAD + chunk(b"{}\n"))
        await writer.drain()
        await reader.read()

    async def main() -> None:
        got: list[bytes] = []
        t0 = time.monotonic()
        async with RawServer(handler) as srv, pool_on(srv) as pool:
            with pytest.raises(HttpError):
                async with pool.stream("GET", "/w", connect_timeout=1.0, read_timeout=0.2) as (_, chunks):
                    async for c in chunks:
                        got.append(c)
                        t0 = time.monotonic()
            assert 0.19 <= time.monotonic() - t0 < 0.35
        assert got == [b"{}\n"]

    run(main())


def test_a_consumer_that_stops_early_leaves_the_pool_usable() -> None:
    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        req = await srv.read(reader, index)
        assert req is not None
        if req.target == "/watch":  # an endless watch
            writer.write(CHUNKED_HEAD)
            while True:
                writer.write(chunk(b'{"type":"BOOKMARK"}\n'))
                await writer.drain()
                await asyncio.sleep(0.01)
        writer.write(echo_target(req))
        await writer.drain()
        await answer_each(echo_target)(srv, reader, writer, index)

    async def main() -> None:
        async with RawServer(handler) as srv, pool_on(srv) as pool:
            async with pool.stream("GET", "/watch", connect_timeout=1.0, read_timeout=1.0) as (_, chunks):
                async for c in chunks:
                    assert c == b'{"type":"BOOKMARK"}\n'
                    break
            # A POST is not resent: it must go on a fresh connection at once.
            a = await pool.request("POST", "/a", body=b"{}", timeout=1.0)
            b = await pool.request("GET", "/b", timeout=1.0)
        assert (a.body, b.body) == (b"POST /a", b"GET /b")
        # The unfinished watch's connection is not reused (its leftover chunks would be taken for an answer).
        assert [(r.target, r.conn) for r in srv.requests] == [("/watch", 0), ("/a", 1), ("/b", 1)]

    run(main())


# -- 9. concurrency


def test_concurrent_requests_each_get_their_own_answer() -> None:
    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        while (req := await srv.read(reader, index)) is not None:
            n = int(req.target.rsplit("/", 1)[1])
            await asyncio.sleep(0.002 * (20 - n))  # later requests answered first
            writer.write(response(f"item-{n}".encode() * (n + 1)))
            await writer.drain()

    async def main() -> None:
        async with RawServer(handler) as srv, pool_on(srv) as pool:
            for _ in range(2):  # the second round on the first round's idle connections
                answers = await asyncio.gather(*(pool.request("GET", f"/item/{n}", timeout=1.0) for n in range(20)))
                assert [a.body for a in answers] == [f"item-{n}".encode() * (n + 1) for n in range(20)]
        assert srv.connections == 20
        assert len(srv.requests) == 40

    run(main())


# -- 10. RestClient.watch over the pool


EVENTS = [
    {"type": "ADDED", "object": {"kind": "Pod", "metadata": {"name": "a", "resourceVersion": "6"}}},
    {"type": "MODIFIED", "object": {"kind": "Pod", "metadata": {"name": "a", "resourceVersion": "7"}}},
    {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "8"}}},
    {"type": "DELETED", "object": {"kind": "Pod", "metadata": {"name": "a", "resourceVersion": "9"}}},
]


def test_rest_watch_parses_each_event_once_across_chunk_boundaries() -> None:
    lines = b"".join(orjson.dumps(e) + b"\n" for e in EVENTS)
    nl = lines.index(b"\n")
    # Pieces: one ending exactly at a newline, single bytes, pieces holding several newlines, a piece starting
    # with a newline.
    cuts = [0, nl + 1, nl + 2, nl + 3, nl + 40, len(lines) - 60, len(lines) - 1, len(lines)]
    pieces = [lines[a:b] for a, b in itertools.pairwise(cuts)]
    assert b"".join(pieces) == lines and all(pieces)

    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        await srv.read(reader, index)
        writer.write(CHUNKED_HEAD)
        for p in pieces:
            writer.write(chunk(p))
            await writer.drain()
            await asyncio.sleep(0.005)
        writer.write(LAST_CHUNK)
        await writer.drain()
        await reader.read()

    async def main() -> None:
        async with RawServer(handler) as srv:
            rest = RestClient(Connection(server=srv.url))
            await rest.open()
            try:
                got = [e async for e in rest.watch("/api/v1/pods", {"resourceVersion": "5"}, timeout=1.0)]
            finally:
                await rest.close()
        assert got == EVENTS
        assert srv.requests[0].target == "/api/v1/pods?resourceVersion=5&watch=true"
        assert rest.requests == {("200", "WATCH"): 1}

    run(main())


def test_rest_watch_turns_an_error_answer_into_an_error_event() -> None:
    status = {"kind": "Status", "status": "Failure", "reason": "Expired", "message": "too old resource version"}

    async def main() -> None:
        async with RawServer(answer_each(lambda r: response(orjson.dumps(status), "410 Gone"))) as srv:
            rest = RestClient(Connection(server=srv.url))
            await rest.open()
            try:
                got = [e async for e in rest.watch("/api/v1/pods", {"resourceVersion": "1"}, timeout=1.0)]
            finally:
                await rest.close()
        assert got == [{"type": "ERROR", "object": {**status, "code": 410}}]

    run(main())
