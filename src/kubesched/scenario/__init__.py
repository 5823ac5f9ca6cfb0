"""Scenarios: the cluster a user declares, read from YAML or JSON as the API server would take it in.

`simulate`, `explain`, `capacity`, `replay` and `serve` all start from a Scenario:
the manifests in document order (workloads expanded into the pods their
controllers would make), the optional `kind: Scenario` header, and notes for
the user. This layer sits below those applications; it knows the API types and
the workload controllers, nothing of scheduling.

- loader.py: Scenario, Manifest, parse_scenario/load_scenario/read_text.
- yamlstream.py / jsonstream.py: fast, exact readers of multi-document streams.
"""

from kubesched.scenario.loader import (
    Manifest,
    Scenario,
    load_scenario,
    object_ref,
    parse_scenario,
    read_text,
)

__all__ = ["Manifest", "Scenario", "load_scenario", "object_ref", "parse_scenario", "read_text"]
