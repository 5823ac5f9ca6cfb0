"""One HTTP POST to an extender, failing with the texts of Go's net/http client.

Why by hand on sockets rather than urllib: when a not-ignorable extender cannot be reached,
the client's error becomes the pod's FailedScheduling message, e.g.
`Post "http://127.0.0.1:18184/filter": dial tcp 127.0.0.1:18184: connect: connection refused`.
To say it as Go does we must know which step failed (resolve, dial which address, TLS, write,
read the status line, read the body), which urllib folds into one URLError.

Timeouts follow http.Client.Timeout: one deadline for the whole exchange, the body included.
Each call uses a fresh connection (the reference keeps connections alive; only latency differs).
Not emulated: HTTP proxies from the environment, redirects, gzip.
"""

from __future__ import annotations

import http.client
import ipaddress
import os
import socket
import ssl
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass
from typing import cast
from urllib.parse import SplitResult, urlsplit

from kubesched.config.types import Extender
from kubesched.gocompat.strconv import go_quote

DEFAULT_TIMEOUT = 5.0  # DefaultExtenderTimeout
_AWAITING_HEADERS = " (Client.Timeout exceeded while awaiting headers)"
_READING_BODY = " (Client.Timeout exceeded while reading body)"
_UNKNOWN_AUTHORITY = {18, 19, 20, 21}  # self-signed, self-signed in chain, unknown issuer, leaf unverifiable


class TransportError(Exception):
    """A failed exchange; str() is the reference client's error text."""


@dataclass
class Response:
    status: int
    body: bytes


def build_tls_context(cfg: Extender) -> ssl.SSLContext | None:
    """makeTransport: the TLS settings used for https URLs; None means Go's defaults (system roots).

    enableHTTPS without a CA turns verification off (Insecure), as upstream; it does not change
    the URL's scheme.
    """
    t = cfg.tls_config
    insecure = bool(t and t.insecure)
    has_ca = bool(t and (t.ca_file or t.ca_data))
    if cfg.enable_https and not has_ca:
        insecure = True
    if insecure and has_ca:
        raise ValueError("specifying a root certificates file with the insecure flag is not allowed")
    has_cert = bool(t and (t.cert_file or t.cert_data or t.key_file or t.key_data))
    if not (insecure or has_ca or has_cert or (t and t.server_name)):
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_alpn_protocols(["http/1.1"])
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif t and has_ca:
        if t.ca_file:
            ctx.load_verify_locations(cafile=t.ca_file)
        if t.ca_data:
            ctx.load_verify_locations(cadata=t.ca_data)
    else:
        ctx.load_default_certs()
    if t and has_cert:
        _load_client_cert(ctx, t.cert_file, t.cert_data, t.key_file, t.key_data)
    return ctx


def _load_client_cert(ctx: ssl.SSLContext, cert_file: str, cert_data: str, key_file: str, key_data: str) -> None:
    """Client certificate from files or inline PEM (ssl only loads files: inline data goes through temp files)."""
    with tempfile.TemporaryDirectory() as tmp:
        if cert_data:
            cert_file = os.path.join(tmp, "cert.pem")
            with open(cert_file, "w", encoding="latin-1") as f:
                f.write(cert_data)
        if key_data:
            key_file = os.path.join(tmp, "key.pem")
            with open(key_file, "w", encoding="latin-1") as f:
                f.write(key_data)
        if not cert_file or not key_file:
            raise ValueError("client certificate and key must both be given")
        ctx.load_cert_chain(cert_file, key_file)


class Poster:
    """POSTs JSON bodies with one extender's timeout and TLS settings."""

    def __init__(self, timeout: float, tls: ssl.SSLContext | None, server_name: str = "") -> None:
        self.timeout = timeout if timeout > 0 else DEFAULT_TIMEOUT
        self.tls = tls
        self.server_name = server_name

    def post(self, url: str, body: bytes) -> Response:
        deadline = time.monotonic() + self.timeout
        parts, host, port = _parse(url)
        prefix = f"Post {go_quote(_redacted(parts))}: "
        sock = self._dial(host, port, deadline, prefix)
        where = _endpoints(sock)
        try:
            if parts.scheme == "https":
                sock = self._handshake(sock, host, deadline, prefix, where)
            return self._exchange(sock, parts, body, deadline, prefix, where)
        finally:
            with suppress(OSError):
                sock.close()

    # ------------------------------------------------------------ steps

    def _dial(self, host: str, port: int, deadline: float, prefix: str) -> socket.socket:
        addrs = _resolve(host, port, prefix)
        first: str | None = None
        for family, addr in addrs:
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.settimeout(_remaining(deadline))
                sock.connect(addr)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except (TimeoutError, OSError) as err:
                sock.close()
                if first is None:
                    first = f"dial tcp {_hostport(addr)}: {_dial_reason(err)}"
                if isinstance(err, TimeoutError) or time.monotonic() >= deadline:
                    break
        raise TransportError(prefix + (first or f"dial tcp {host}: no suitable address found"))

    def _handshake(self, sock: socket.socket, host: str, deadline: float, prefix: str, where: str) -> socket.socket:
        ctx = self.tls or ssl.create_default_context()
        name = self.server_name or host
        try:
            sock.settimeout(_remaining(deadline))
            return ctx.wrap_socket(sock, server_hostname=name)
        except TimeoutError:
            raise TransportError(prefix + "context deadline exceeded" + _AWAITING_HEADERS) from None
        except ssl.SSLCertVerificationError as err:
            if err.verify_code in _UNKNOWN_AUTHORITY:
                why = "x509: certificate signed by unknown authority"
            else:
                why = f"x509: {err.verify_message}"
            raise TransportError(prefix + "tls: failed to verify certificate: " + why) from None
        except ssl.SSLError as err:
            if err.reason == "WRONG_VERSION_NUMBER":
                raise TransportError(prefix + "http: server gave HTTP response to HTTPS client") from None
            raise TransportError(prefix + f"remote error: tls: {(err.reason or str(err)).lower()}") from None
        except OSError as err:
            raise TransportError(prefix + _io_reason("read", where, err)) from None

    def _exchange(
        self, sock: socket.socket, parts: SplitResult, body: bytes, deadline: float, prefix: str, where: str
    ) -> Response:
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port)
        conn.sock = sock
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        headers = {
            "Host": parts.netloc.rsplit("@", 1)[-1],
            "User-Agent": "kubesched",
            "Content-Type": "application/json",
            "Content-Length": str(len(body)),
        }
        try:
            sock.settimeout(_remaining(deadline))
            conn.request("POST", path, body, headers)
        except TimeoutError:
            raise TransportError(prefix + "context deadline exceeded" + _AWAITING_HEADERS) from None
        except OSError as err:
            raise TransportError(prefix + _io_reason("write", where, err)) from None
        try:
            sock.settimeout(_remaining(deadline))
            resp = conn.getresponse()
        except TimeoutError:
            raise TransportError(prefix + "context deadline exceeded" + _AWAITING_HEADERS) from None
        except http.client.RemoteDisconnected:
            raise TransportError(prefix + "EOF") from None
        except http.client.BadStatusLine as err:
            line = str(err.args[0] if err.args else "").rstrip("\r\n")
            raise TransportError(
                prefix + f"net/http: HTTP/1.x transport connection broken: malformed HTTP response {go_quote(line)}"
            ) from None
        except http.client.HTTPException as err:
            raise TransportError(prefix + f"net/http: HTTP/1.x transport connection broken: {err}") from None
        except OSError as err:
            raise TransportError(prefix + _io_reason("read", where, err)) from None
        if resp.status != 200:
            return Response(resp.status, b"")
        try:
            sock.settimeout(_remaining(deadline))
            data = resp.read()
        except http.client.IncompleteRead as err:
            data = err.partial  # decoding a truncated body says "unexpected EOF", as Go's decoder
        except TimeoutError:
            raise TransportError("context deadline exceeded" + _READING_BODY) from None
        except OSError as err:
            raise TransportError(_io_reason("read", where, err)) from None
        return Response(resp.status, data)


# ---------------------------------------------------------------- helpers


def _parse(url: str) -> tuple[SplitResult, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise TransportError(f"Post {go_quote(url)}: unsupported protocol scheme {go_quote(parts.scheme)}")
    try:
        port = parts.port
    except ValueError:
        bad = parts.netloc.rsplit("@", 1)[-1]
        bad = bad[bad.rfind("]") + 1 :] if "]" in bad else bad
        raise TransportError(
            f"parse {go_quote(url)}: invalid port {go_quote(bad[bad.find(':') :])} after host"
        ) from None
    host = parts.hostname or ""
    if not host:
        raise TransportError(f"Post {go_quote(url)}: http: no Host in request URL")
    return parts, host, port or (443 if scheme == "https" else 80)


def _redacted(parts: SplitResult) -> str:
    """url.URL.Redacted: a password in the URL shows as xxxxx."""
    if parts.password is None:
        return parts.geturl()
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[-1]
    return parts._replace(netloc=f"{user}:xxxxx@{host}").geturl()


def _resolve(host: str, port: int, prefix: str) -> list[tuple[socket.AddressFamily, tuple[str, int]]]:
    """Addresses to dial, of the first family only (Go reports the primary family's first error)."""
    try:
        ip = ipaddress.ip_address(host)
        fam = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
        return [(fam, (host, port))]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as err:
        no_host = err.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME))
        why = "no such host" if no_host else "server misbehaving"
        raise TransportError(prefix + f"dial tcp: lookup {host} on {_nameserver()}: {why}") from None
    if not infos:
        raise TransportError(prefix + f"dial tcp: lookup {host} on {_nameserver()}: no such host")
    primary = infos[0][0]
    # An AF_INET or AF_INET6 address for a host name: (host, port), and flow info and scope id for IPv6.
    return [(fam, cast("tuple[str, int]", sa[:2])) for fam, _, _, _, sa in infos if fam == primary]


def _nameserver() -> str:
    """The DNS server Go's resolver names in lookup errors: the first of resolv.conf."""
    try:
        with open("/etc/resolv.conf") as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 2 and fields[0] == "nameserver":
                    ns = fields[1]
                    return f"[{ns}]:53" if ":" in ns else f"{ns}:53"
    except OSError:
        pass
    return "127.0.0.1:53"


def _hostport(addr: tuple[str, int] | tuple[str, int, int, int]) -> str:
    host, port = addr[0], addr[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _errno_text(err: OSError) -> str:
    """Go's syscall.Errno text: the C strerror, lower-cased first letter."""
    text = os.strerror(err.errno) if err.errno else str(err)
    return text[:1].lower() + text[1:]


def _dial_reason(err: OSError) -> str:
    if isinstance(err, TimeoutError):
        return "i/o timeout" + _AWAITING_HEADERS
    return "connect: " + _errno_text(err)


def _endpoints(sock: socket.socket) -> str:
    """`local->remote`, taken while connected: net.OpError names both ends of a failed read or write."""
    try:
        return f"{_hostport(sock.getsockname())}->{_hostport(sock.getpeername())}"
    except OSError:
        return "?"


def _io_reason(op: str, where: str, err: OSError) -> str:
    """`read tcp L->R: read: connection reset by peer`, net.OpError's text for a failed read or write."""
    return f"{op} tcp {where}: {op}: {_errno_text(err)}"


def _remaining(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.001)
