"""/healthz, /livez, /readyz and /metrics over plain HTTP (127.0.0.1 by default).

healthz and livez fail when we lead but have not renewed the lease long past
its duration (the leader-election watchdog); readyz also waits for the
informers' initial sync.

Served by the standard library's threading HTTP server on threads of its own
(prometheus_client serves /metrics the same way): a probe never waits behind
the I/O loop, and start-up does not import a web framework for four GETs.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class ListenError(RuntimeError):
    """The health and metrics port cannot be opened (in use, or an address this host does not have)."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    address_family = socket.AF_INET


class _Server6(_Server):
    address_family = socket.AF_INET6


class HealthServer:
    """The checks, answered from whatever the callables say at the time of the request."""

    def __init__(
        self, healthy: Callable[[], str | None], synced: Callable[[], bool], metrics: Callable[[], str]
    ) -> None:
        self.healthy = healthy
        self.synced = synced
        self.metrics = metrics
        self._server: ThreadingHTTPServer | None = None

    def answer(self, path: str) -> tuple[int, str, bytes]:
        """(status, content type, body) for a GET of `path`."""
        path = path.split("?", 1)[0]
        if path == "/metrics":
            return 200, CONTENT_TYPE, self.metrics().encode()
        if path not in ("/healthz", "/livez", "/readyz"):
            return 404, "text/plain; charset=utf-8", b"404: Not Found"
        problems = []
        err = self.healthy()
        if err:
            problems.append(f"[-]leaderElection failed: {err}")
        if path == "/readyz" and not self.synced():
            problems.append("[-]sched-handler-sync failed: waiting for the informers' caches to sync")
        if problems:
            return 500, "text/plain; charset=utf-8", ("\n".join([*problems, "check failed"]) + "\n").encode()
        return 200, "text/plain; charset=utf-8", b"ok"

    def start(self, host: str, port: int) -> int:
        """Listen on host:port (0: any free port) and serve; the port listened on."""
        checks = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                code, ctype, body = checks.answer(self.path)
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # no access log, as kube-scheduler

        try:
            family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
            server_class = _Server6 if family == socket.AF_INET6 else _Server
            self._server = server_class((host, port), Handler)
        except OSError as err:
            raise ListenError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
        threading.Thread(target=self._server.serve_forever, name="kubesched-health", daemon=True).start()
        return int(self._server.server_address[1])

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
