"""/healthz, /livez, /readyz and /metrics over plain HTTP (127.0.0.1 by default).

healthz and livez fail when we lead but have not renewed the lease long past
its duration (the leader-election watchdog); readyz also waits for the
informers' initial sync.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def health_app(
    healthy: Callable[[], str | None], synced: Callable[[], bool], metrics: Callable[[], str]
) -> web.Application:
    def check(ready: bool) -> web.Response:
        problems = []
        err = healthy()
        if err:
            problems.append(f"[-]leaderElection failed: {err}")
        if ready and not synced():
            problems.append("[-]sched-handler-sync failed: waiting for the informers' caches to sync")
        if problems:
            return web.Response(status=500, text="\n".join([*problems, "check failed"]) + "\n")
        return web.Response(text="ok")

    async def healthz(_req: web.Request) -> web.Response:
        return check(False)

    async def readyz(_req: web.Request) -> web.Response:
        return check(True)

    async def metrics_handler(_req: web.Request) -> web.Response:
        return web.Response(body=metrics().encode(), headers={"Content-Type": CONTENT_TYPE})

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/livez", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics_handler)
    return app


class ListenError(RuntimeError):
    """The health and metrics port cannot be opened (in use, or an address this host does not have)."""


async def start_health_server(app: web.Application, host: str, port: int) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as err:
        await runner.cleanup()
        raise ListenError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    sockets = site._server.sockets if site._server is not None else []  # type: ignore[union-attr]
    actual = sockets[0].getsockname()[1] if sockets else port
    return runner, actual
