#!/usr/bin/env python3
"""Randomized differential run: random clusters through kube-scheduler (the oracle) and kubesched.

Usage: tools/differential.py [--oracle PATH] [--cases N] [--first-seed S] [--repeat R] [--keep DIR]

Each case is a random cluster (kubesched.simulate.generate) of one family:
core, affinity, preemption, batch, extended. The oracle runs it R times with
--record-ties; a field of a pod counts only where all R runs agree (upstream
is racy around preemption: victims are deleted asynchronously). Pods are
compared in document order up to the first pod upstream placed by a random
tie (later pods depend on that draw); the deleted set is compared when no
tie stopped the comparison and the R runs agree on it. Prints one line per
disagreeing case and a closing "N passed, N failed" line; --keep writes the
disagreeing scenarios and their outputs to DIR.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
from typing import Any

from kubesched.simulate.generate import Shape, random_scenario, to_scenario, to_yaml
from kubesched.simulate.output import to_dict
from kubesched.simulate.runner import Simulation

FAMILIES: dict[str, Shape] = {
    "core": Shape(nodes=6, running_pods=8, pending_pods=15, pod_affinity_fraction=0, spread_fraction=0),
    "affinity": Shape(nodes=6, running_pods=10, pending_pods=15, pod_affinity_fraction=0.6, spread_fraction=0.5),
    "preemption": Shape(nodes=5, running_pods=20, pending_pods=12, priorities=(0, 100, 1000)),
    "batch": Shape(nodes=5, running_pods=15, pending_pods=15, priorities=(0, 100, 1000), mode="batch"),
    "extended": Shape(nodes=6, running_pods=12, pending_pods=12, priorities=(0, 100), extended_resources=34),
}
FIELDS = ("node", "status", "nominatedNode", "message")


def oracle_runs(oracle: str, case: pathlib.Path, repeat: int) -> list[dict[str, Any]]:
    runs = []
    for _ in range(repeat):
        out = subprocess.run(
            [oracle, "run", str(case), "--seed", "0", "--record-ties"], capture_output=True, text=True, check=False
        )
        runs.append(json.loads(out.stdout))
    return runs


def disagreements(runs: list[dict[str, Any]], ours: dict[str, Any]) -> list[str]:
    """What kubesched says differently from every oracle run, on fields all runs agree on."""
    problems: list[str] = []
    mine = {r["pod"]: r for r in ours["results"]}
    tie = False
    for i, want in enumerate(runs[0]["results"]):
        pod = want["pod"]
        theirs = [run["results"][i] for run in runs]
        have = mine[pod]
        tied = [t.get("tiedNodes") for t in theirs if t.get("tiedNodes")]
        for field in FIELDS:
            values = {json.dumps(t.get(field)) for t in theirs}
            if len(values) != 1:
                continue
            if field == "node" and tied:
                if have["node"] not in tied[0]:
                    problems.append(f"{pod}: node {have['node']!r}, expected one of {tied[0]}")
            elif have.get(field) != want.get(field):
                problems.append(f"{pod}: {field} {have.get(field)!r}, expected {want.get(field)!r}")
        if tied:
            tie = True
            break
    deleted = {json.dumps(sorted(run["deleted"])) for run in runs}
    if not tie and len(deleted) == 1 and sorted(ours["deleted"]) != sorted(runs[0]["deleted"]):
        problems.append(f"deleted {sorted(ours['deleted'])}, expected {sorted(runs[0]['deleted'])}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--oracle", default=str(pathlib.Path.home() / ".cache" / "oracle"))
    ap.add_argument("--cases", type=int, default=50)
    ap.add_argument("--first-seed", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=pathlib.Path)
    args = ap.parse_args()
    passed = failed = 0
    names = list(FAMILIES)
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.cases):
            seed = args.first_seed + k
            family = names[k % len(names)]
            docs = random_scenario(FAMILIES[family], seed)
            case = pathlib.Path(tmp) / f"{family}-{seed}.yaml"
            case.write_text(to_yaml(docs))
            runs = oracle_runs(args.oracle, case, args.repeat if family in ("preemption", "batch") else 1)
            ours = to_dict(Simulation(to_scenario(docs, str(case)), seed=0).run())
            problems = disagreements(runs, ours)
            if not problems:
                passed += 1
                continue
            failed += 1
            print(f"FAIL {case.name}: {len(problems)} disagreement(s); first: {problems[0]}")
            if args.keep is not None:
                args.keep.mkdir(parents=True, exist_ok=True)
                (args.keep / case.name).write_text(case.read_text())
                (args.keep / f"{case.stem}.oracle.json").write_text(json.dumps(runs[0], indent=2))
                (args.keep / f"{case.stem}.kubesched.json").write_text(json.dumps(ours, indent=2))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
