"""`kubesched serve`: arguments and entry point."""

from __future__ import annotations

import argparse

from kubesched.cliargs import add_validate_argument, add_verbosity_argument, int_at_least, port, seconds


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", help="scenario or manifests YAML: the cluster's initial objects")

    add_validate_argument(p)
    p.add_argument("--address", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=port, default=6443, help="port to listen on (0: any free port)")
    p.add_argument("--no-scheduler", action="store_true", help="serve the API only (for `kubesched run`)")
    p.add_argument("--config", help="KubeSchedulerConfiguration for the built-in scheduler")
    p.add_argument("--write-kubeconfig", metavar="PATH", help="write a kubeconfig for this server to PATH")
    p.add_argument("--token", help="require this bearer token from clients")
    p.add_argument("--tls-cert-file", help="serve HTTPS with this certificate (PEM; also the kubeconfig's CA)")
    p.add_argument("--tls-private-key-file", help="the certificate's private key (PEM)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--event-ttl",
        type=seconds(positive=True),
        default=3600.0,
        help="seconds an event is kept after its last write (kube-apiserver's --event-ttl; default 3600)",
    )
    p.add_argument("--logging-format", choices=("text", "json"), default="text")
    add_verbosity_argument(
        p, "klog verbosity of the built-in scheduler, as kube-scheduler's: 2 logs each bind and unschedulable pod"
    )
    # For tests: fault injection and watch control under /kubesched/, a short change log, fast bookmarks.
    p.add_argument("--test-endpoints", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--history", type=int_at_least(0), default=10_000, help=argparse.SUPPRESS)
    p.add_argument("--bookmark-interval", type=seconds(positive=True), default=5.0, help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    from kubesched.live.logs import setup_logging
    from kubesched.serve.server import serve

    setup_logging(args.logging_format, args.verbosity)
    return serve(args)
