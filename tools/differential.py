#!/usr/bin/env python3
"""Randomized differential run: random clusters through kube-scheduler (the oracle) and kubesched.

Usage: tools/differential.py [--oracle PATH] [--cases N] [--first-seed S] [--repeat R] [--confirm C]
                             [--families a,b,...] [--keep DIR] [--log FILE.jsonl] [--oracle-cache DIR]

Each case is a random cluster (kubesched.simulate.generate) of one family, the
families taken in turn: core, affinity, config (a random scheduler configuration),
volumes, dra, preemption, batch, extended (more than 30 resources), mixed and
mixed-batch (all of them at once). The oracle runs the racy families (those with
more than one priority, where preemption happens) R times, the others once, with
--record-ties; a field of a pod counts only where all R runs agree (upstream is
racy around preemption: victims are deleted asynchronously); a racy case that
disagrees gets C more runs under each of four timings before it is reported:
as is, with GOMAXPROCS=1, pinned to one CPU, and beside two busy processes
(three runs agree by chance often enough where upstream's choice is random,
and a course that one machine's timing makes repeatable can flip under
another's: only what upstream does under every timing counts). Pods are compared
up to the first pod upstream placed by a random tie, in the order kubesched
attempted them (later pods depend on that draw); the deleted set is compared
when no tie stopped the comparison and the R runs agree on it. A case the
oracle refuses (an invalid configuration) must be refused by kubesched too.
Prints one line per disagreeing case, then per family the cases run, pods
compared and cases failed, and a closing "N passed, N failed" line; --keep
writes the disagreeing scenarios, the oracle's runs and kubesched's output to
DIR; --oracle-cache keeps the oracle's runs to re-check kubesched later (named by
the case and a hash of its text, so a changed generator never reuses old runs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from kubesched.simulate.generate import Shape, random_scenario, to_scenario, to_yaml
from kubesched.simulate.output import to_dict
from kubesched.simulate.runner import Simulation

FAMILIES: dict[str, Shape] = {
    "core": Shape(nodes=6, running_pods=8, pending_pods=15, pod_affinity_fraction=0, spread_fraction=0),
    "affinity": Shape(nodes=6, running_pods=10, pending_pods=15, pod_affinity_fraction=0.6, spread_fraction=0.5),
    "config": Shape(nodes=6, running_pods=10, pending_pods=15, config=True),
    "volumes": Shape(nodes=6, running_pods=8, pending_pods=15, volumes=True),
    "dra": Shape(nodes=6, running_pods=8, pending_pods=15, dra=True),
    "preemption": Shape(nodes=5, running_pods=20, pending_pods=12, priorities=(0, 100, 1000), pdb_status=True),
    "batch": Shape(nodes=5, running_pods=15, pending_pods=15, priorities=(0, 100, 1000), mode="batch", pdb_status=True),
    "extended": Shape(
        nodes=6, running_pods=12, pending_pods=12, priorities=(0, 100), extended_resources=34, pdb_status=True
    ),
    # Everything at once: priorities and PDBs, affinity and spread, volumes, devices, a random configuration.
    "mixed": Shape(
        nodes=8,
        running_pods=16,
        pending_pods=15,
        priorities=(0, 100, 1000),
        pdb_status=True,
        volumes=True,
        dra=True,
        config=True,
    ),
    "mixed-batch": Shape(
        nodes=8,
        running_pods=16,
        pending_pods=15,
        priorities=(0, 100, 1000),
        mode="batch",
        pdb_status=True,
        volumes=True,
        dra=True,
    ),
}
# Families where upstream's asynchronous preemption makes runs differ (there is more than one
# priority): the oracle runs them --repeat times.
RACY = tuple(name for name, shape in FAMILIES.items() if len(set(shape.priorities)) > 1)
FIELDS = ("node", "status", "nominatedNode", "message")
TIMING_KEY = "timing"  # added to each oracle run: how it was run


@dataclass(frozen=True)
class Timing:
    """A way to run the oracle that changes how its goroutines interleave (not what it decides)."""

    name: str
    env: dict[str, str] = field(default_factory=dict)
    prefix: tuple[str, ...] = ()
    busy: int = 0  # processes spinning on the CPUs meanwhile


AS_IS = Timing("as-is")
# Upstream's victim deletions race its scheduling loop: these move the race, so that a course one
# machine's timing happens to repeat is not taken for upstream's behaviour.
TIMINGS = (
    AS_IS,
    Timing("gomaxprocs-1", env={"GOMAXPROCS": "1"}),
    Timing("one-cpu", prefix=("taskset", "-c", "0")),
    Timing("loaded", busy=2),
)


def oracle_runs(oracle: str, case: pathlib.Path, repeat: int, timing: Timing = AS_IS) -> list[dict[str, Any]] | str:
    """The oracle's outputs (each marked with its timing), or its error text when it refuses the case."""
    runs = []
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(timing.busy)]
    try:
        for _ in range(repeat):
            out = subprocess.run(
                [*timing.prefix, oracle, "run", str(case), "--seed", "0", "--record-ties"],
                capture_output=True,
                text=True,
                check=False,
                env={**os.environ, **timing.env},
            )
            if out.returncode != 0 or not out.stdout.strip():
                return out.stderr.strip()[-500:] or f"exit status {out.returncode}"
            runs.append({**json.loads(out.stdout), TIMING_KEY: timing.name})
    finally:
        for p in busy:
            p.kill()
            p.wait()
    return runs


def confirm_runs(
    oracle: str, case: pathlib.Path, runs: list[dict[str, Any]], per_timing: int
) -> list[dict[str, Any]] | str:
    """More runs, until each timing has `per_timing` (runs cached before timings were kept count as as-is)."""
    more: list[dict[str, Any]] = []
    for timing in TIMINGS:
        have = sum(1 for r in runs if r.get(TIMING_KEY, AS_IS.name) == timing.name)
        if have < per_timing:
            got = oracle_runs(oracle, case, per_timing - have, timing)
            if isinstance(got, str):
                return got
            more += got
    return more


def cache_file(cache: pathlib.Path, case: pathlib.Path) -> pathlib.Path:
    """Where the oracle's runs of a case are kept: named by the case and its content (a changed generator
    makes new cases under the same names)."""
    digest = hashlib.sha256(case.read_bytes()).hexdigest()[:12]
    return cache / f"{case.stem}-{digest}.runs.json"


def simulate(docs: list[dict[str, Any]], source: str) -> tuple[dict[str, Any], list[str]]:
    """kubesched's output, and the pods in the order it attempted them (one entry per attempt)."""
    sim = Simulation(to_scenario(docs, source), seed=0)
    order: list[str] = []
    sim.scheduler.before_cycle = lambda _fw, qpi: order.append(qpi.pod_info.key)
    return to_dict(sim.run()), order


def comparable(runs: list[dict[str, Any]], order: list[str]) -> tuple[set[str], bool]:
    """The pods whose outcome cannot depend on a random tie-break, and whether there was a tie.

    The tie is placed at the last attempt of the first pod that upstream placed by a random
    choice among tied nodes, in the order kubesched attempted the pods (as long as the two agree,
    that order is upstream's; in batch mode it is not document order). Pods whose last attempt
    came later may depend on that draw; so may the set of deleted pods.
    """
    pods = [r["pod"] for r in runs[0]["results"]]
    tied = {r["pod"] for run in runs for r in run["results"] if r.get("tiedNodes")}
    if not tied:
        return set(pods), False
    last = {pod: i for i, pod in enumerate(order)}
    cut = min((last[p] for p in tied if p in last), default=len(order))
    return {p for p in pods if last.get(p, -1) <= cut}, True


def disagreements(runs: list[dict[str, Any]], ours: dict[str, Any], order: list[str]) -> list[str]:
    """What kubesched says differently from every oracle run, on fields all runs agree on."""
    problems: list[str] = []
    mine = {r["pod"]: r for r in ours["results"]}
    compare, tie = comparable(runs, order)
    for i, want in enumerate(runs[0]["results"]):
        pod = want["pod"]
        if pod not in compare:
            continue
        theirs = [run["results"][i] for run in runs]
        have = mine[pod]
        if any(t.get("tiedNodes") for t in theirs):
            # Placed by a random draw (in some run): any node some run could have drawn or chose will do;
            # whether it is later evicted depends on that draw too.
            allowed = sorted({n for t in theirs for n in (t.get("tiedNodes") or [t.get("node")])} - {None})
            if have["node"] not in allowed:
                problems.append(f"{pod}: node {have['node']!r}, expected one of {allowed}")
            continue
        for name in FIELDS:
            values = {json.dumps(t.get(name)) for t in theirs}
            if len(values) != 1:
                continue
            if have.get(name) != want.get(name):
                problems.append(f"{pod}: {name} {have.get(name)!r}, expected {want.get(name)!r}")
    deleted = {json.dumps(sorted(run["deleted"])) for run in runs}
    if not tie and len(deleted) == 1 and sorted(ours["deleted"]) != sorted(runs[0]["deleted"]):
        problems.append(f"deleted {sorted(ours['deleted'])}, expected {sorted(runs[0]['deleted'])}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--oracle", default=str(pathlib.Path.home() / ".cache" / "oracle"))
    ap.add_argument("--cases", type=int, default=50)
    ap.add_argument("--first-seed", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3, help="oracle runs per case of the racy families")
    ap.add_argument("--families", default=",".join(FAMILIES), help="comma-separated, taken in turn")
    ap.add_argument(
        "--confirm",
        type=int,
        default=3,
        help="oracle runs under each timing of a racy case that disagrees, before reporting it",
    )
    ap.add_argument("--keep", type=pathlib.Path)
    ap.add_argument("--log", type=pathlib.Path, help="append one JSON line per case")
    ap.add_argument(
        "--oracle-cache", type=pathlib.Path, help="keep the oracle's runs here and reuse them (re-checking kubesched)"
    )
    args = ap.parse_args()
    names = args.families.split(",")
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        ap.error(f"unknown families {unknown}; known: {list(FAMILIES)}")
    tally: dict[str, dict[str, int]] = {n: {"cases": 0, "failed": 0, "refused": 0, "pods": 0} for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.cases):
            seed = args.first_seed + k
            family = names[k % len(names)]
            t = tally[family]
            t["cases"] += 1
            docs = random_scenario(FAMILIES[family], seed)
            case = pathlib.Path(tmp) / f"{family}-{seed}.yaml"
            case.write_text(to_yaml(docs))
            want = args.repeat if family in RACY else 1
            cached = cache_file(args.oracle_cache, case) if args.oracle_cache is not None else None
            runs = json.loads(cached.read_text()) if cached is not None and cached.exists() else []
            if isinstance(runs, list) and len(runs) < want:
                more = oracle_runs(args.oracle, case, want - len(runs))
                runs = more if isinstance(more, str) else runs + more
                if cached is not None:
                    cached.parent.mkdir(parents=True, exist_ok=True)
                    cached.write_text(json.dumps(runs))
            record: dict[str, Any] = {"case": case.stem}
            if isinstance(runs, str):
                # kube-scheduler refused the scenario (e.g. a configuration it rejects): so must kubesched.
                t["refused"] += 1
                record["refused"] = runs
                try:
                    ours, _ = simulate(docs, str(case))
                    problems = [f"kubesched accepted what kube-scheduler refused: {runs}"]
                except Exception:  # noqa: BLE001 - any refusal agrees
                    ours = {}
                    problems = []
            else:
                try:
                    ours, order = simulate(docs, str(case))
                    problems = disagreements(runs, ours, order)
                    if problems and family in RACY:
                        # A few runs can agree by chance, or by one machine's timing, where upstream races:
                        # ask it more, under each timing, before reporting.
                        more = confirm_runs(args.oracle, case, runs, args.confirm)
                        if not isinstance(more, str) and more:
                            runs += more
                            if cached is not None:
                                cached.write_text(json.dumps(runs))
                            problems = disagreements(runs, ours, order)
                    t["pods"] += len(comparable(runs, order)[0])
                except Exception as err:  # noqa: BLE001 - a crash is a disagreement to report, not to stop on
                    ours = {"error": repr(err)}
                    problems = [f"kubesched raised {err!r}"]
                record["problems"] = problems
            if args.log is not None:
                with args.log.open("a") as f:
                    f.write(json.dumps(record) + "\n")
            if not problems:
                continue
            t["failed"] += 1
            print(f"FAIL {case.name}: {len(problems)} disagreement(s); first: {problems[0]}", flush=True)
            if args.keep is not None:
                args.keep.mkdir(parents=True, exist_ok=True)
                (args.keep / case.name).write_text(case.read_text())
                (args.keep / f"{case.stem}.oracle.json").write_text(json.dumps(runs, indent=2))
                (args.keep / f"{case.stem}.kubesched.json").write_text(json.dumps(ours, indent=2))
    for family, t in tally.items():
        print(f"{family}: {t['cases']} cases, {t['pods']} pods compared, {t['failed']} failed, {t['refused']} refused")
    failed = sum(t["failed"] for t in tally.values())
    print(f"{sum(t['cases'] for t in tally.values()) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
