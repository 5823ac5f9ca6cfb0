"""How to reach the API server: URL, TLS and credentials.

Loading is left to the `kubernetes` package's config loader, which knows every
kubeconfig form (client certificates, tokens, token files, exec plugins with
expiring credentials) and the in-cluster service account. We only keep what it
produced: the server URL, an SSL context and a function giving the current
Authorization header (exec and service-account tokens are refreshed by it).
"""

from __future__ import annotations

import os
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubesched.errors import InputError

# How long an Authorization header is reused before asking the loader again
# (its refresh hook re-runs an exec plugin or re-reads a token file when due).
AUTH_CACHE_SECONDS = 30.0

# Where the kubelet mounts a pod's service account (token, ca.crt), as client-go's InClusterConfig reads it.
# KUBESCHED_SERVICE_ACCOUNT_DIR moves it, for tests that play a pod against a real API server; a pod never sets it.
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SERVICE_ACCOUNT_DIR_ENV = "KUBESCHED_SERVICE_ACCOUNT_DIR"


@dataclass
class Connection:
    server: str
    ssl_context: ssl.SSLContext | None = None
    server_hostname: str | None = None
    auth_header: Callable[[], str | None] = field(default=lambda: None)

    @property
    def host(self) -> str:
        return self.server.split("://", 1)[-1].rstrip("/")


class _CachedAuth:
    """The loader's Authorization header, re-read at most every AUTH_CACHE_SECONDS."""

    def __init__(self, cfg: Any) -> None:
        self._cfg = cfg
        self._lock = threading.Lock()
        self._value: str | None = None
        self._at = -1e18

    def peek(self) -> tuple[str | None, bool]:
        """The cached header and whether it is still fresh (no blocking, no refresh)."""
        return self._value, time.monotonic() - self._at <= AUTH_CACHE_SECONDS

    def __call__(self) -> str | None:
        with self._lock:
            now = time.monotonic()
            if now - self._at > AUTH_CACHE_SECONDS:
                # The loader files a token under "BearerToken" (newer releases) or "authorization" (older).
                self._value = self._cfg.get_api_key_with_prefix("BearerToken", alias="authorization")
                self._at = now
            return self._value


def _ssl_context(cfg: Any) -> ssl.SSLContext | None:
    if not cfg.host.startswith("https"):
        return None
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert) if cfg.ssl_ca_cert else ssl.create_default_context()
    if not cfg.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    return ctx


def _check_readable(path: str) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as err:
        raise InputError(path, f"cannot read: {err.strerror or err}") from None


def load_connection(kubeconfig: str | None = None, context: str | None = None) -> Connection:
    """From a kubeconfig file, or (none given) the in-cluster service account."""
    try:
        from kubernetes import client as k8s_client
        from kubernetes import config as k8s_config
    except ImportError:
        raise InputError("kubeconfig", "kubesched run needs the 'live' extra: pip install 'kubesched[live]'") from None
    import yaml

    cfg = k8s_client.Configuration()
    try:
        if kubeconfig:
            _check_readable(kubeconfig)
            k8s_config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            sa = os.environ.get(SERVICE_ACCOUNT_DIR_ENV) or SERVICE_ACCOUNT_DIR
            k8s_config.incluster_config.InClusterConfigLoader(
                token_filename=os.path.join(sa, "token"), cert_filename=os.path.join(sa, "ca.crt")
            ).load_and_set(cfg)
        else:
            raise InputError(
                "kubeconfig", "no --kubeconfig given and not running in a cluster (KUBERNETES_SERVICE_HOST is unset)"
            )
    except k8s_config.ConfigException as err:
        raise InputError(kubeconfig or "in-cluster config", str(err)) from None
    except yaml.YAMLError as err:
        raise InputError(str(kubeconfig), f"malformed YAML: {' '.join(str(err).split())}") from None
    except UnicodeDecodeError as err:
        raise InputError(str(kubeconfig), f"not UTF-8 text: {err.reason} at byte {err.start}") from None
    except (TypeError, AttributeError, KeyError, ValueError) as err:
        # The loader indexes the document as it expects it to be: anything else fails deep inside it.
        raise InputError(str(kubeconfig), f"not a kubeconfig ({type(err).__name__}: {err})") from None
    try:
        ssl_context = _ssl_context(cfg)
    except (OSError, ssl.SSLError) as err:
        raise InputError(kubeconfig or "in-cluster config", f"unusable TLS files: {err.strerror or err}") from None
    return Connection(
        server=cfg.host.rstrip("/"),
        ssl_context=ssl_context,
        server_hostname=getattr(cfg, "tls_server_name", None) or None,
        auth_header=_CachedAuth(cfg),
    )


def write_kubeconfig(
    path: str, server: str, token: str | None = None, name: str = "kubesched", ca_file: str | None = None
) -> None:
    """A kubeconfig pointing at `server` (used by `kubesched serve --write-kubeconfig`)."""
    import yaml

    user: dict[str, Any] = {"token": token} if token else {}
    cluster: dict[str, Any] = {"server": server}
    if ca_file:
        cluster["certificate-authority"] = os.path.abspath(ca_file)
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": "default"}}],
        "current-context": name,
        "preferences": {},
    }
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    os.replace(tmp, path)
