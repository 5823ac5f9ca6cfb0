"""The health and metrics port of `kubesched run`: what a kubelet probe and a Prometheus scrape get."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from kubesched.live.health import CONTENT_TYPE, HealthServer, ListenError


class State:
    lease_error: str | None = None
    synced = False


@pytest.fixture
def served() -> Iterator[tuple[State, str]]:
    state = State()
    server = HealthServer(lambda: state.lease_error, lambda: state.synced, lambda: "scheduler_pending_pods 3\n")
    port = server.start("127.0.0.1", 0)
    try:
        yield state, f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read().decode()


def test_readyz_waits_for_the_sync_and_healthz_does_not(served: tuple[State, str]) -> None:
    state, url = served
    assert get(url + "/healthz")[::2] == (200, "ok")
    assert get(url + "/livez")[::2] == (200, "ok")
    assert get(url + "/readyz")[::2] == (
        500,
        "[-]sched-handler-sync failed: waiting for the informers' caches to sync\ncheck failed\n",
    )
    state.synced = True
    assert get(url + "/readyz?verbose")[::2] == (200, "ok")


def test_a_lapsed_lease_fails_every_check(served: tuple[State, str]) -> None:
    state, url = served
    state.synced = True
    state.lease_error = "the lease has not been renewed for 30s"
    for path in ("/healthz", "/livez", "/readyz"):
        assert get(url + path)[::2] == (
            500,
            "[-]leaderElection failed: the lease has not been renewed for 30s\ncheck failed\n",
        )


def test_metrics_in_the_prometheus_text_format_and_404_elsewhere(served: tuple[State, str]) -> None:
    _, url = served
    assert get(url + "/metrics") == (200, CONTENT_TYPE, "scheduler_pending_pods 3\n")
    assert get(url + "/debug")[0] == 404


def test_an_address_in_use_or_unknown_is_a_listen_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        server = HealthServer(lambda: None, lambda: True, lambda: "")
        with pytest.raises(ListenError, match=rf"^cannot listen on 127\.0\.0\.1:{port}: Address already in use$"):
            server.start("127.0.0.1", port)
    with pytest.raises(ListenError, match=r"^cannot listen on no-such-host\.invalid:0: "):
        server.start("no-such-host.invalid", 0)


def test_ipv6_loopback() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this host")
    server = HealthServer(lambda: None, lambda: True, lambda: "")
    try:
        port = server.start("::1", 0)
    except ListenError as err:
        pytest.skip(f"no IPv6 loopback here: {err}")
    try:
        assert get(f"http://[::1]:{port}/healthz")[::2] == (200, "ok")
    finally:
        server.stop()
