"""`kubesched run`: arguments and entry point (heavy imports happen only when it runs)."""

from __future__ import annotations

import argparse
import sys

from kubesched.cliargs import add_verbosity_argument, int_at_least, port


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kubeconfig", help="kubeconfig file (default: clientConnection.kubeconfig, else in-cluster)")
    p.add_argument("--context", help="kubeconfig context to use")
    p.add_argument("--config", help="KubeSchedulerConfiguration file (profiles, leaderElection, clientConnection)")
    p.add_argument("--bind-address", default="127.0.0.1", help="address of /metrics, /healthz, /readyz, /livez")
    p.add_argument("--port", type=port, default=10259, help="port of /metrics and the health checks (0: any)")
    p.add_argument("--identity", help="leader election identity (default: hostname_uuid)")
    p.add_argument(
        "--bind-workers",
        type=int_at_least(1),
        help="API calls at once, binds and status patches (default: the config's parallelism)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed for tie-breaking among equally scored nodes")
    p.add_argument("--logging-format", choices=("text", "json"), default="text")
    add_verbosity_argument(
        p, "klog verbosity, as kube-scheduler's: 2 logs each bind and unschedulable pod, 3 each attempt"
    )


def run(args: argparse.Namespace) -> int:
    from kubesched.live import gc_policy

    thresholds = gc_policy.start_up()
    from kubesched.config import ConfigError, default_configuration, load_config_file
    from kubesched.errors import InputError
    from kubesched.live.logs import setup_logging

    setup_logging(args.logging_format, args.verbosity)
    if args.config:
        try:
            config = load_config_file(args.config)
        except ConfigError as err:
            raise InputError(err.source, err.message) from None
    else:
        config = default_configuration()
    from kubesched.live.kubeconfig import load_connection

    def check() -> None:
        from kubesched.configcheck import check_profiles

        # Refused at start-up, as kube-scheduler refuses a bad profile before it schedules anything.
        check_profiles(config, args.config or "<default configuration>")

    try:
        conn = load_connection(args.kubeconfig or config.client_connection.kubeconfig or None, args.context)
    except InputError:
        check()  # a bad profile is reported first, whatever is wrong with the connection
        raise
    from kubesched.live.health import ListenError
    from kubesched.live.runner import LiveScheduler

    # The profiles are checked once the initial lists are on their way: building every plugin (imports
    # included) then overlaps the API server's work on the lists instead of coming before it.
    try:
        return LiveScheduler(
            config,
            conn,
            bind_address=args.bind_address,
            port=args.port,
            identity=args.identity,
            seed=args.seed,
            bind_workers=args.bind_workers,
            gc_after_sync=thresholds,
        ).run(check)
    except ListenError as err:
        # A runtime failure, as `kubesched serve` reports one: status 1, one line.
        print(f"error: {err}", file=sys.stderr)
        return 1
