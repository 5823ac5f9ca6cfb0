"""The `kubesched` command."""

from __future__ import annotations

import argparse
import errno
import gc
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from kubesched import __version__
from kubesched.cliargs import add_progress_arguments, add_validate_argument, check_output, int_at_least, seconds
from kubesched.collector import collector_paused
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


def _load(path: str, args: argparse.Namespace, progress: Any = None) -> Any:
    """The scenario at `path` ("-": standard input), its notes and warnings printed on stderr."""
    from kubesched.scenario import load_scenario

    # argparse runs `type` on a string default too: args.validate is a FieldValidation.
    scenario = load_scenario(path, validation=args.validate, seed=args.seed, progress=progress)
    print_notes(scenario.notes)
    return scenario


def print_notes(notes: Sequence[str]) -> None:
    for line in notes:
        print(line, file=sys.stderr)


def cmd_simulate(args: argparse.Namespace) -> int:
    from kubesched.progress import progress_display
    from kubesched.simulate import output
    from kubesched.simulate.runner import Simulation

    # The config first: the out-of-tree plugins it names may bring kinds the scenario uses (e.g. PodGroup).
    config = _config_with_plugins(args.config)
    # Per-node scores only where they are printed: JSON and YAML carry them, the table does not.
    keep_scores = args.output in ("json", "yaml") and not args.no_scores
    # The loaded cluster and every pod's outcome live until the command ends, and make no reference cycles:
    # the collector would only walk them again and again (seconds on 150,000 pods).
    with collector_paused():
        with progress_display(args) as progress:
            scenario = _load(args.scenario, args, progress)
            sim = Simulation(
                scenario, config, seed=args.seed, keep_scores=keep_scores, config_source=args.config, spool_scores=True
            )
            sim.settle(progress)
        if args.output in ("json", "yaml"):
            output.write_results(sim, sys.stdout, args.output)
        else:
            output.print_table(
                sim.result(), scenario.description, sys.stdout, wide=args.output == "wide", headers=not args.no_headers
            )
    return 0


def _config_with_plugins(path: str | None) -> KubeSchedulerConfiguration | None:
    """The config, the out-of-tree plugins it names loaded first (they may bring kinds the scenario uses)."""
    config = _load_config(path)
    if config is not None:
        from kubesched.framework.registry import plugin_names, preload

        preload(plugin_names(config))
    return config


def cmd_explain(args: argparse.Namespace) -> int:
    from kubesched.explain import explain
    from kubesched.explain import render as explain_render
    from kubesched.progress import progress_display

    config = _config_with_plugins(args.config)
    with progress_display(args) as progress:
        scenario = _load(args.scenario, args, progress)
        ex = explain(scenario, args.pod, config, seed=args.seed, config_source=args.config, progress=progress)
    if args.output == "json":
        print(explain_render.to_json(ex))
    else:
        explain_render.print_text(ex, sys.stdout)
    return 0


def cmd_capacity(args: argparse.Namespace) -> int:
    from kubesched import capacity
    from kubesched.progress import progress_display

    config = _config_with_plugins(args.config)
    with progress_display(args) as progress:
        scenario = _load(args.cluster, args, progress)
        template = capacity.load_pod(args.pod, args.validate, scenario)
        result = capacity.capacity(
            scenario, template, config, args.max, args.seed, args.pod, args.config, progress=progress
        )
    if args.output == "json":
        print(capacity.to_json(result))
    else:
        capacity.print_text(result, sys.stdout)
    return 0


def cmd_snapshot(args: argparse.Namespace) -> int:
    from kubesched.live.snapshot import run

    return run(args)


def cmd_config_check(args: argparse.Namespace) -> int:
    import json

    from kubesched.configcheck import check_config, plugin_hint

    try:
        with open(args.file, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as err:
        raise InputError(args.file, f"cannot read: {err.strerror or err}") from None
    result = check_config(text, args.file)
    if args.output == "json":
        print(json.dumps(result, indent=2))
    elif result["valid"]:
        import yaml

        # The configuration as kube-scheduler runs it: every default filled in.
        print(yaml.safe_dump(result["defaulted"], sort_keys=False), end="")
    else:
        print(f"error: {args.file}: {result['message']}", file=sys.stderr)
        hint = plugin_hint(result["message"])
        if hint is not None:
            print(hint, file=sys.stderr)
    return 0 if result["valid"] else EXIT_INPUT


def cmd_bench(args: argparse.Namespace) -> int:
    import json

    from kubesched.bench import bench

    if args.profile:
        check_output(args.profile)  # before the run, not after it

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


def _replay_configs(paths: list[str] | None, scenario_has_config: bool) -> list[Any]:
    """A RunConfig per --config: labels are file stems, or whole paths where two stems clash."""
    from pathlib import Path

    from kubesched.replay import RunConfig

    if not paths:
        return [RunConfig("cluster-file config" if scenario_has_config else "default")]
    stems = [Path(p).stem for p in paths]
    labels = [stem if stems.count(stem) == 1 else p for stem, p in zip(stems, paths, strict=True)]
    if len(set(labels)) != len(labels):
        dup = next(x for x in labels if labels.count(x) > 1)
        raise InputError(dup, "given twice as --config")
    return [RunConfig(label, _load_config(p), p) for label, p in zip(labels, paths, strict=True)]


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as err:
        raise InputError(path, f"cannot write: {err.strerror or err}") from None


def cmd_replay(args: argparse.Namespace) -> int:
    from kubesched.progress import progress_display
    from kubesched.replay import load_inputs, replay_all
    from kubesched.replay.report.data import ReportMeta, report_dict, to_json
    from kubesched.replay.report.table import summary_table

    for out in (args.report, args.json):
        if out:
            check_output(out)  # before the replay, not after it
    if args.report:
        from kubesched.replay.report.html import require_plotly

        require_plotly()
    scenario, trace = load_inputs(args.cluster, args.trace, args.templates, args.validate, args.seed)
    print_notes(scenario.notes)
    configs = _replay_configs(args.config, scenario.config is not None)

    with progress_display(args) as progress:

        def progress_for(label: str) -> Callable[[int, int], None]:
            return progress.stage(f"replay {label}", len(trace.entries), "pods arrived").update

        runs = replay_all(scenario, trace, configs, seed=args.seed, until=args.until, progress=progress_for)
    doc = report_dict(ReportMeta(args.cluster, args.trace, args.seed, args.until), runs)
    if args.json:
        if args.json == "-":
            sys.stdout.write(to_json(doc))
        else:
            _write(args.json, to_json(doc))
    if args.report:
        from kubesched.replay.report.html import render_html

        _write(args.report, render_html(doc))
    if args.json != "-":
        from rich.console import Console

        title = f"{args.trace} on {args.cluster}: {len(trace.entries)} pods, seed {args.seed}"
        Console().print(summary_table(runs, title))
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
    sim.add_argument(
        "scenario", help="multi-document YAML or JSON: nodes, pods, ... (optionally a Scenario header); - for stdin"
    )
    add_validate_argument(sim)
    sim.add_argument("--config", help="KubeSchedulerConfiguration file (overrides the scenario's inline config)")
    sim.add_argument(
        "-o",
        "--output",
        choices=("table", "wide", "json", "yaml"),
        default="table",
        help="table (default), wide (a table with the nominated node, attempts and score), json or yaml "
        "(FORMAT.md: with each pod's per-node scores)",
    )
    sim.add_argument(
        "--no-headers",
        action="store_true",
        help="table: the pod rows only (no header, workload headings or totals), as kubectl's",
    )
    sim.add_argument("--seed", type=int, default=0, help="seed for tie-breaking and preemption offsets")
    sim.add_argument(
        "--no-scores",
        action="store_true",
        help="json/yaml: leave out each pod's per-node scores and tied nodes (the table never keeps them)",
    )
    add_progress_arguments(sim)
    sim.set_defaults(func=cmd_simulate, exit_fast=True)

    b = sub.add_parser("bench", help="scheduler_perf workloads on the embedded cluster (pods per second)")
    b.add_argument(
        "--workload", choices=("basic", "podaffinity", "antiaffinity", "spread", "preemption"), default="basic"
    )
    b.add_argument("--nodes", type=int_at_least(1), default=500)
    b.add_argument("--pods", type=int_at_least(1), default=1000, help="measured pods")
    b.add_argument("--init-pods", type=int_at_least(0), default=500, help="pods bound before the clock starts")
    b.add_argument("--reps", type=int_at_least(1), default=3)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--profile", help="write a cProfile of the first run to this file")
    b.add_argument("-o", "--output", choices=("text", "json"), default="text")
    b.set_defaults(func=cmd_bench)

    rp = sub.add_parser(
        "replay",
        help="replay a workload trace on the virtual clock; compare configurations (docs/replay.md)",
    )
    rp.add_argument("cluster", help="multi-document YAML: nodes, running pods, PriorityClasses, pod templates, ...")
    rp.add_argument("trace", help="CSV or JSON Lines: time, name, template or spec, priorityClass, duration")
    rp.add_argument(
        "--config",
        action="append",
        help="KubeSchedulerConfiguration file; give two or more to compare them on the same trace",
    )
    rp.add_argument("--templates", help="extra Pod manifests the trace's `template` column may name")
    add_validate_argument(rp)
    rp.add_argument("--report", metavar="OUT.html", help="write a self-contained HTML report with plots")
    rp.add_argument("--json", metavar="OUT.json", help="write the report's figures as JSON ('-': stdout)")
    rp.add_argument("--seed", type=int, default=0, help="seed for tie-breaking and preemption offsets")
    rp.add_argument("--until", type=seconds(), help="stop the replay at this virtual time (seconds)")
    add_progress_arguments(rp)
    rp.set_defaults(func=cmd_replay, exit_fast=True)

    from kubesched.live import command as live_command
    from kubesched.serve import command as serve_command

    run = sub.add_parser("run", help="schedule a real cluster's pods (kubeconfig or in-cluster; leader election)")
    live_command.add_arguments(run)
    run.set_defaults(func=cmd_run)

    srv = sub.add_parser("serve", help="serve a scenario's cluster through the Kubernetes API (for kubectl, `run`)")
    serve_command.add_arguments(srv)
    srv.set_defaults(func=cmd_serve)

    ex = sub.add_parser("explain", help="why a pod of a scenario landed where it did, or why it stays pending")
    ex.add_argument("scenario", help="the scenario YAML (as for simulate)")
    ex.add_argument(
        "pod",
        help="the pod: name, or namespace/name; or a workload (deployment/web, [namespace/]statefulset/db, ...): "
        "its first pod that is not scheduled (or its first pod)",
    )
    add_validate_argument(ex)
    ex.add_argument("--config", help="KubeSchedulerConfiguration file (overrides the scenario's inline config)")
    ex.add_argument("-o", "--output", choices=("table", "json"), default="table")
    ex.add_argument("--seed", type=int, default=0, help="seed for tie-breaking and preemption offsets")
    add_progress_arguments(ex)
    ex.set_defaults(func=cmd_explain, exit_fast=True)

    cap = sub.add_parser("capacity", help="how many replicas of a pod fit in a cluster, and where")
    cap.add_argument("cluster", help="the cluster YAML (a scenario; its pending pods are scheduled first)")
    cap.add_argument("--pod", required=True, help="YAML file with the pod to replicate")
    add_validate_argument(cap)
    cap.add_argument("--max", type=int_at_least(0), default=None, metavar="N", help="stop after N replicas")
    cap.add_argument("--config", help="KubeSchedulerConfiguration file (overrides the scenario's inline config)")
    cap.add_argument("-o", "--output", choices=("table", "json"), default="table")
    cap.add_argument("--seed", type=int, default=0, help="seed for tie-breaking and preemption offsets")
    add_progress_arguments(cap)
    cap.set_defaults(func=cmd_capacity, exit_fast=True)

    from kubesched.research import command as research_command

    res = sub.add_parser("research", help="scheduling-policy research: replay the openb GPU trace (FGD paper)")
    research_command.add_arguments(res)
    from kubesched.research import sweep_command

    swp = sub.add_parser("sweep", help="a grid of policies x traces x seeds, in parallel or on Ray: table, figures")
    sweep_command.add_arguments(swp)

    snap = sub.add_parser("snapshot", help="capture a live cluster into a scenario file (to stdout)")
    from kubesched.live import snapshot

    snapshot.add_arguments(snap)
    snap.set_defaults(func=cmd_snapshot)

    cfg = sub.add_parser("config", help="KubeSchedulerConfiguration tools")
    cfg_sub = cfg.add_subparsers(dest="config_command", required=True)
    check = cfg_sub.add_parser("check", help="decode, default and validate a config, and build its profiles")
    check.add_argument("file")
    check.add_argument("-o", "--output", choices=("text", "json"), default="text")
    check.set_defaults(func=cmd_config_check)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return _run_command(build_parser().parse_args(argv))


def run() -> NoReturn:
    """The `kubesched` program: main(), then, after a command that built a large heap, an exit that does not
    free it object by object (the kernel takes the memory back at once; a second or more on 150,000 pods).
    Only the program exits this way: main() returns to its caller (tests, an embedding program).

    Such a command also runs with the cyclic collector off throughout: its bulk work already pauses it, and
    turning it back on at the end would only cost one pass over everything allocated in the pause (half a
    second on 150,000 pods) just before the process leaves."""
    args = build_parser().parse_args()
    exit_fast = getattr(args, "exit_fast", False)
    if exit_fast:
        gc.disable()
    code = _run_command(args)
    if exit_fast:
        # _run_command flushed stdout (reporting a failure there); stderr is unbuffered or line-buffered.
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _run_command(args: argparse.Namespace) -> int:
    try:
        code = int(args.func(args))
        # Here, not at exit: a failure to write the last of the output is reported as any other.
        sys.stdout.flush()
        return code
    except InputError as err:
        # One line, whatever the message holds (a CEL compiler's caret diagram spans three).
        print("error: " + " ".join(str(err).splitlines()), file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        return 130
    except OSError as err:
        if err.filename is not None:
            raise  # a file the command itself should have reported: a bug, keep its traceback
        # stdout cannot take the output (`| head` closed the pipe, a full disk): one line, no traceback;
        # stdout goes to /dev/null so that the flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if err.errno == errno.EPIPE:
            return 141  # as a shell reports a command killed by SIGPIPE
        print(f"error: cannot write the output: {err.strerror or err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    run()
