"""Running `kubesched serve`: load the scenario, start the API (and the built-in scheduler)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import signal
import ssl
import sys
from typing import Any

from aiohttp import web

from kubesched.cluster.admission import AdmissionError
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.errors import InputError
from kubesched.serve.api import ApiServer
from kubesched.serve.cluster import ServedCluster

log = logging.getLogger("kubesched.serve")

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_KIND_ORDER = {"Namespace": 0, "PriorityClass": 0, "StorageClass": 1, "DeviceClass": 1, "Node": 2}


def load_cluster(cluster: ServedCluster, scenario: Any) -> None:
    """Create the scenario's objects as the API would have: namespaces first, pods last."""
    from kubesched.api.core import Namespace
    from kubesched.api.meta import ObjectMeta
    from kubesched.cluster.store import object_key

    declared = {m.obj.metadata.name for m in scenario.manifests if m.kind == "Namespace"}
    needed = set(SYSTEM_NAMESPACES) | {
        m.obj.metadata.namespace or "default" for m in scenario.manifests if m.kind in ("Pod",)
    }
    needed |= {m.obj.metadata.namespace for m in scenario.manifests if m.obj.metadata.namespace}
    ordered = sorted(scenario.manifests, key=lambda m: (_KIND_ORDER.get(m.kind, 3), m.kind == "Pod", m.index))
    for m in ordered:
        if m.kind == "Namespace":
            _create(cluster, m.kind, m.obj, m.raw, object_key(m.obj), scenario.source)
    for ns in sorted(needed - declared):
        if cluster.store.find("Namespace", ns) is None:
            cluster.client.create("Namespace", Namespace(metadata=ObjectMeta(name=ns)))
    for m in ordered:
        # What controllers made when the scenario was read, the served cluster's own controllers make.
        if m.kind != "Namespace" and not m.generated:
            key = object_key(m.obj)
            if m.kind in ("Pod",) and not m.obj.metadata.namespace:
                key = f"default/{m.obj.metadata.name}"
            _create(cluster, m.kind, m.obj, m.raw, key, scenario.source)


def _create(cluster: ServedCluster, kind: str, obj: Any, raw: Any, key: str, source: str) -> None:
    body = {k: v for k, v in dict(raw).items() if k not in ("kind", "apiVersion")}
    cluster.store.incoming[(kind, key)] = body
    try:
        cluster.client.create(kind, obj)
    except AdmissionError as err:
        raise InputError(source, str(err), f"{kind} {key}") from None
    except Exception as err:  # noqa: BLE001 - one clear line, never a traceback
        raise InputError(source, str(err), f"{kind} {key}") from None


def _config(args: argparse.Namespace, scenario: Any) -> KubeSchedulerConfiguration:
    from kubesched.config import ConfigError, load_config_file
    from kubesched.simulate.runner import resolve_config

    if args.config:
        try:
            return load_config_file(args.config)
        except ConfigError as err:
            raise InputError(err.source, err.message) from None
    return resolve_config(scenario, None)


def _readable(path: str, flag: str) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as err:
        raise InputError(path, f"cannot read: {err.strerror or err}", flag) from None


def tls_context(cert_file: str | None, key_file: str | None) -> ssl.SSLContext | None:
    """The HTTPS context of --tls-cert-file/--tls-private-key-file, refused with the flag's name if unusable."""
    if key_file and not cert_file:
        raise InputError("--tls-private-key-file", "needs --tls-cert-file")
    if not cert_file:
        return None
    _readable(cert_file, "--tls-cert-file")
    if key_file:
        _readable(key_file, "--tls-private-key-file")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        ctx.load_cert_chain(cert_file, key_file)
    except ssl.SSLError as err:
        detail = re.sub(r"\s*\(_ssl\.c:\d+\)$", "", str(err.args[1] if len(err.args) > 1 else err))
        raise InputError(cert_file, f"not a PEM certificate and key ({detail})", "--tls-cert-file") from None
    return ctx


async def _main(
    args: argparse.Namespace,
    cluster: ServedCluster,
    config: KubeSchedulerConfiguration | None,
    tls: ssl.SSLContext | None,
) -> None:
    builtin = None
    if config is not None:
        from kubesched.serve.builtin import BuiltinScheduler

        builtin = BuiltinScheduler(cluster, config, seed=args.seed)
    api = ApiServer(
        cluster,
        token=args.token,
        test_endpoints=args.test_endpoints,
        bookmark_interval=args.bookmark_interval,
        on_write=builtin.kick if builtin is not None else lambda: None,
    )
    runner = web.AppRunner(api.app(), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, args.address, args.port, ssl_context=tls)
    await site.start()
    addresses = runner.addresses  # the bound sockets' addresses: the port the kernel picked for --port 0
    port = addresses[0][1] if addresses else args.port
    host = f"[{args.address}]" if ":" in args.address else args.address  # an IPv6 address is bracketed in a URL
    url = f"{'https' if tls else 'http'}://{host}:{port}"
    if args.write_kubeconfig:
        from kubesched.live.kubeconfig import write_kubeconfig

        try:
            write_kubeconfig(args.write_kubeconfig, url, args.token, ca_file=args.tls_cert_file)
        except OSError as err:
            await runner.cleanup()
            raise InputError(args.write_kubeconfig, f"cannot write: {err.strerror or err}") from None
    print(f"serving {url}", flush=True)
    log.info(
        "Serving the Kubernetes API",
        extra={"url": url, "scheduler": builtin is not None, "objects": sum(map(len, cluster.store.raw.values()))},
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    task = asyncio.create_task(builtin.run()) if builtin is not None else None
    await stop.wait()
    if task is not None:
        task.cancel()
    for w in list(cluster.store.watchers):
        w.queue.put_nowait(None)
    await runner.cleanup()


def serve(args: argparse.Namespace) -> int:
    from kubesched.cliargs import check_output
    from kubesched.scenario import load_scenario

    # Flags first: a bad certificate or output path is reported before the scenario loads, not after it.
    tls = tls_context(args.tls_cert_file, args.tls_private_key_file)
    if args.write_kubeconfig:
        check_output(args.write_kubeconfig)
    scenario = load_scenario(args.scenario, validation=args.validate, seed=args.seed)
    for line in scenario.notes:
        print(line, file=sys.stderr)
    config = None if args.no_scheduler else _config(args, scenario)
    cluster = ServedCluster(history=args.history, event_ttl=args.event_ttl)
    load_cluster(cluster, scenario)
    cluster.store.deliver()
    try:
        asyncio.run(_main(args, cluster, config, tls))
    except OSError as err:
        print(f"error: cannot listen on {args.address}:{args.port}: {err.strerror or err}", file=sys.stderr)
        return 1
    return 0
