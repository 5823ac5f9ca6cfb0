"""Scenario generators: random clusters for equivalence tests, and large clusters for benchmarks.

Everything is drawn from a seeded generator, so a (shape, seed) pair always
gives the same scenario. The output is a list of plain manifests (dicts) that
can be dumped as YAML or parsed directly.

shape.py    what a random cluster may contain, and the labels it uses
cluster.py  random nodes and pods (random_scenario), with the add-ons:
storage.py  volumes and claims; devices.py: DRA devices and claims; config.py: a scheduler configuration
basic.py    scheduler_perf's SchedulingBasic cluster; to_yaml and to_scenario
"""

from kubesched.simulate.generate.basic import basic_cluster, to_scenario, to_yaml
from kubesched.simulate.generate.cluster import random_scenario
from kubesched.simulate.generate.config import random_config
from kubesched.simulate.generate.shape import HOSTNAME, ZONE, Shape

__all__ = ["HOSTNAME", "ZONE", "Shape", "basic_cluster", "random_config", "random_scenario", "to_scenario", "to_yaml"]
