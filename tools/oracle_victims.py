#!/usr/bin/env python3
"""Record, from kube-scheduler itself, the victims of each case's first preemption, in upstream's order.

Usage: tools/oracle_victims.py [--oracle PATH] CASE.yaml...   (writes CASE.victims.json beside each case)

Why not the expected file: the set of deleted pods in a case is racy upstream
(the preemptor can be retried before the scheduler's cache has seen all its
victims go, and preempt again), but the first dry run is not. Its victims, in
the order SelectVictimsOnNode returns them (the order of upstream's unstable
sort.Slice by MoreImportantPod, then reprieval), are read from the oracle's
log at verbosity 5, and checked against kubesched by
tests/preemption/test_victim_order.py.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import subprocess
import sys

VICTIM = re.compile(r'"Pod is a potential preemption victim on node".*? pod="([^"]+)" node="([^"]+)"')
TARGET = re.compile(r'"the target node for the preemption is determined".*? node="([^"]+)" pod="([^"]+)"')


def first_preemption(log: str) -> dict[str, object] | None:
    """The chosen node and its victims in the first preemption the log shows (None: no preemption)."""
    blocks = log.split('"Dry run the preemption"')
    if len(blocks) < 2:
        return None
    block = blocks[1]
    target = TARGET.search(block)
    if target is None:
        return None
    node = target.group(1)
    victims = [m.group(1) for m in VICTIM.finditer(block[: target.start()]) if m.group(2) == node]
    return {"preemptor": target.group(2), "node": node, "victims": victims}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--oracle", default=str(pathlib.Path.home() / ".cache" / "oracle"))
    ap.add_argument("cases", nargs="+")
    args = ap.parse_args()
    for case in map(pathlib.Path, args.cases):
        run = subprocess.run(
            [args.oracle, "run", str(case), "--seed", "0", "-v", "5"], capture_output=True, text=True, check=False
        )
        found = first_preemption(run.stderr)
        if found is None:
            print(f"{case}: no preemption", file=sys.stderr)
            continue
        case.with_suffix(".victims.json").write_text(json.dumps(found, indent=2) + "\n")
        print(f"{case}: {len(found['victims'])} victims on {found['node']}")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
