"""The `kubesched` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kubesched import __version__
from kubesched.config import ConfigError, load_config_file
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.errors import InputError

EXIT_INPUT = 2
WORKLOAD_NAMES = ("basic", "podaffinity", "antiaffinity", "spread", "preemption")


def _load_config(path: str | None) -> KubeSchedulerConfiguration | None:
    if path is None:
        return None
    try:
        return load_config_file(path)
    except ConfigError as err:
        raise InputError(err.source, err.message) from None


def cmd_simulate(args: argparse.Namespace) -> int:
    from kubesched.simulate import output
    from kubesched.simulate.runner import Simulation
    from kubesched.simulate.scenario import load_scenario

    scenario = load_scenario(args.scenario)
    sim = Simulation(scenario, _load_config(args.config), seed=args.seed, keep_scores=not args.no_scores)
    result = sim.run()
    if args.output == "json":
        print(output.to_json(result))
    elif args.output == "yaml":
        print(output.to_yaml(result), end="")
    else:
        from rich.console import Console

        Console().print(output.render_table(result, scenario.description))
    return 0


def cmd_config_check(args: argparse.Namespace) -> int:
    import json

    from kubesched.configcheck import check_config

    try:
        with open(args.file, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as err:
        raise InputError(args.file, f"cannot read: {err.strerror or err}") from None
    result = check_config(text, args.file)
    if args.output == "json":
        print(json.dumps(result, indent=2))
    elif result["valid"]:
        print(f"{args.file}: valid ({len(result['defaulted']['profiles'])} profile(s))")
    else:
        print(f"{args.file}: {result['message']}")
    return 0 if result["valid"] else EXIT_INPUT


def cmd_bench(args: argparse.Namespace) -> int:
    import json

    from kubesched.bench import bench

    def progress(rep: int, r: object) -> None:
        if args.output != "json":
            print(f"  run {rep + 1}: {r.pods_per_second:.0f} pods/s ({r.seconds:.2f} s)", file=sys.stderr)  # type: ignore[attr-defined]

    result = bench(
        args.workload,
        args.nodes,
        args.pods,
        args.init_pods,
        reps=args.reps,
        seed=args.seed,
        profile=args.profile,
        progress=progress,
    )
    s = result.summary()
    if args.output == "json":
        print(json.dumps(s, indent=2))
    else:
        pps = s["podsPerSecond"]
        lat = s["attemptLatencyMs"]
        print(
            f"{s['workload']} nodes={s['nodes']} init={s['initPods']} pods={s['pods']}: "
            f"{pps['min']:.0f} / {pps['median']:.0f} / {pps['max']:.0f} pods/s (min/median/max), "
            f"attempt p50 {lat['p50']:.2f} ms p99 {lat['p99']:.2f} ms, peak RSS {s['peakRssMB']:.0f} MB"
        )
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from kubesched.live.command import run

    return run(args)


def cmd_serve(args: argparse.Namespace) -> int:
    from kubesched.serve.command import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kubesched", description="kube-scheduler v1.34 in Python.")
    p.add_argument("--version", action="version", version=f"kubesched {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="schedule the pods of a scenario on an embedded cluster")
    sim.add_argument("scenario", help="multi-document YAML: nodes, pods, ... (optionally a Scenario header)")
    sim.add_argument("--config", help="KubeSchedulerConfiguration file (overrides the scenario's inline config)")
    sim.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    sim.add_argument("--seed", type=int, default=0, help="seed for tie-breaking and preemption offsets")
    sim.add_argument(
        "--no-scores",
        action="store_true",
        help="leave out each pod's per-node scores and tied nodes (large clusters: saves memory and time)",
    )
    sim.set_defaults(func=cmd_simulate)

    b = sub.add_parser("bench", help="scheduler_perf workloads on the embedded cluster (pods per second)")
    b.add_argument(
        "--workload", choices=("basic", "podaffinity", "antiaffinity", "spread", "preemption"), default="basic"
    )
    b.add_argument("--nodes", type=int, default=500)
    b.add_argument("--pods", type=int, default=1000, help="measured pods")
    b.add_argument("--init-pods", type=int, default=500, help="pods bound before the clock starts")
    b.add_argument("--reps", type=int, default=3)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--profile", help="write a cProfile of the first run to this file")
    b.add_argument("-o", "--output", choices=("text", "json"), default="text")
    b.set_defaults(func=cmd_bench)

    from kubesched.live import command as live_command
    from kubesched.serve import command as serve_command

    run = sub.add_parser("run", help="schedule a real cluster's pods (kubeconfig or in-cluster; leader election)")
    live_command.add_arguments(run)
    run.set_defaults(func=cmd_run)

    srv = sub.add_parser("serve", help="serve a scenario's cluster through the Kubernetes API (for kubectl, `run`)")
    serve_command.add_arguments(srv)
    srv.set_defaults(func=cmd_serve)

    cfg = sub.add_parser("config", help="KubeSchedulerConfiguration tools")
    cfg_sub = cfg.add_subparsers(dest="config_command", required=True)
    check = cfg_sub.add_parser("check", help="decode, default and validate a config, and build its profiles")
    check.add_argument("file")
    check.add_argument("-o", "--output", choices=("text", "json"), default="text")
    check.set_defaults(func=cmd_config_check)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
