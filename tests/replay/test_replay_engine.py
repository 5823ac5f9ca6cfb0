"""The replay loop on hand-computed traces: latencies, preemption, graceful termination, comparisons."""

from __future__ import annotations

import pytest
from replay_helpers import Runner, fit_strategy, node, priority_class, template

from kubesched.replay import distribution, percentile
from kubesched.replay.metrics import FINISHED, PENDING, PREEMPTED, RUNNING, time_weighted_mean

# One 1-cpu node. `first` (top priority) holds it for 10 s; then three pods of distinct priorities
# queue for it and get it highest first, whatever their arrival order:
#   first: 0 -> 0 (latency 0), runs to 10
#   high:  arrives 3, bound 10 (7), runs to 20
#   mid:   arrives 2, bound 20 (18), runs to 30
#   low:   arrives 1, bound 30 (29), runs to 40
QUEUE_CLUSTER = (
    priority_class("top", 1000)
    + priority_class("p-high", 300)
    + priority_class("p-mid", 200)
    + priority_class("p-low", 100)
    + node("n1", cpu="1")
    + template("one", "1")
)
QUEUE_TRACE = """time,name,template,priorityClass,duration
0,first,one,top,10
1,low,one,p-low,10
2,mid,one,p-mid,10
3,high,one,p-high,10
"""


def test_latency_percentiles_hand_computed(run_replay: Runner) -> None:
    (run,) = run_replay(QUEUE_CLUSTER, QUEUE_TRACE)
    pods = {p.key: p for p in run.pods}
    assert {k: (p.arrival, p.bound, p.end, p.node) for k, p in pods.items()} == {
        "default/first": (0.0, 0.0, 10.0, "n1"),
        "default/low": (1.0, 30.0, 40.0, "n1"),
        "default/mid": (2.0, 20.0, 30.0, "n1"),
        "default/high": (3.0, 10.0, 20.0, "n1"),
    }
    s = run.summary()
    # Latencies 0, 7, 18, 29: nearest rank p50 is the 2nd, p90 and p99 the 4th.
    assert s["latencySeconds"] == {"count": 4, "mean": 13.5, "p50": 7.0, "p90": 29.0, "p99": 29.0, "max": 29.0}
    assert s["pendingSeconds"] == s["latencySeconds"]
    assert (s["finished"], s["running"], s["pending"], s["preempted"]) == (4, 0, 0, 0)
    assert s["endTime"] == 40.0
    # One cpu busy from 0 to 40: the node is full the whole time; memory 1Gi of 8Gi.
    assert s["utilization"]["cpu"] == {"mean": 1.0, "peak": 1.0}
    assert s["utilization"]["memory"]["mean"] == pytest.approx(0.125)


def test_until_cuts_the_replay_and_counts_pending_time_to_it(run_replay: Runner) -> None:
    (run,) = run_replay(QUEUE_CLUSTER, QUEUE_TRACE, until=25.0)
    states = {p.key: p.state for p in run.pods}
    assert states == {
        "default/first": FINISHED,
        "default/low": PENDING,
        "default/mid": RUNNING,
        "default/high": FINISHED,
    }
    assert run.end_time == 25.0
    assert sorted(run.pending_times()) == [0.0, 7.0, 18.0, 24.0]  # low: pending from 1 to 25
    assert run.samples.time[-1] == 25.0


def test_preemption_counts_victims_and_frees_their_room(run_replay: Runner) -> None:
    cluster = priority_class("low", 10) + priority_class("high", 1000) + node("n1") + template("half", "2")
    trace = """time,name,template,priorityClass,duration
0,a,half,low,100
0,b,half,low,100
5,c,half,high,
"""
    (run,) = run_replay(cluster, trace)
    pods = {p.key: p for p in run.pods}
    victims = [p for p in run.pods if p.state == PREEMPTED]
    assert len(victims) == 1 and victims[0].end == 5.0 and victims[0].bound == 0.0
    assert pods["default/c"].bound == 5.0 and pods["default/c"].state == RUNNING
    survivor = next(p for k, p in pods.items() if k in ("default/a", "default/b") and p.state != PREEMPTED)
    assert survivor.state == FINISHED and survivor.end == 100.0
    s = run.summary()
    assert (s["preempted"], s["finished"], s["running"], s["pending"]) == (1, 1, 1, 0)
    assert s["overcommits"] == 0
    # cpu: 4 of 4 from 0 to 100 (the victim's place taken at once), then c alone: 2 of 4.
    assert run.utilization()["cpu"] == [0.0, 1.0, 1.0, 0.5]
    assert run.samples.time == [0.0, 0.0, 5.0, 100.0]


def test_graceful_termination_keeps_victims_resources_for_their_grace_period(run_replay: Runner) -> None:
    cluster = (
        "kind: Scenario\ngracefulTermination: true\n"
        + priority_class("low", 10)
        + priority_class("high", 1000)
        + node("n1", cpu="2")
        + template("slow-exit", "1500m", grace=30)
        + template("whole", "2")
    )
    trace = """time,name,template,priorityClass,duration
0,victim,slow-exit,low,
10,preemptor,whole,high,
"""
    (run,) = run_replay(cluster, trace)
    pods = {p.key: p for p in run.pods}
    assert pods["default/victim"].state == PREEMPTED and pods["default/victim"].end == 10.0
    # The victim leaves at 10 + 30 s; only then does the preemptor bind.
    assert pods["default/preemptor"].bound == 40.0
    assert run.latencies() == [0.0, 30.0]
    assert run.samples.time == [0.0, 0.0, 10.0, 40.0]
    assert run.utilization()["cpu"] == [0.0, 0.75, 0.75, 1.0]
    assert run.samples.pending == [0, 0, 1, 0]
    assert run.samples.preempted == [0, 0, 1, 1]


# Two 4-cpu nodes; two 1-cpu pods, then a 4-cpu pod of the same priority (no preemption).
# LeastAllocated spreads the small pods, leaving 3 cpu free on each node: the big pod never fits
# and 6 of 8 cpu are stranded. MostAllocated packs them, and the big pod takes the empty node.
PACKING_CLUSTER = node("n1") + node("n2") + template("small", "1") + template("big", "4")
PACKING_TRACE = """time,name,template,duration
0,a,small,
1,b,small,
2,big,big,10
"""


def test_most_allocated_packs_where_least_allocated_spreads(run_replay: Runner) -> None:
    configs = [fit_strategy("LeastAllocated"), fit_strategy("MostAllocated")]
    least, most = run_replay(PACKING_CLUSTER, PACKING_TRACE, configs, until=20.0)
    lp = {p.key: p for p in least.pods}
    mp = {p.key: p for p in most.pods}
    assert lp["default/a"].node != lp["default/b"].node
    assert mp["default/a"].node == mp["default/b"].node
    assert lp["default/big"].state == PENDING and lp["default/big"].bound is None
    assert mp["default/big"].state == FINISHED and (mp["default/big"].bound, mp["default/big"].end) == (2.0, 12.0)
    assert mp["default/big"].node != mp["default/a"].node

    # Stranded capacity: from t=2 on, 3 cpu free on each node and the pending pod needs 4.
    assert least.samples.time == [0.0, 0.0, 1.0, 2.0, 20.0]
    assert least.fragmentation()["cpu"] == [0.0, 0.0, 0.0, 0.75, 0.75]
    assert least.samples.fragmented[-1][0] == 6000  # millicores
    # 7Gi free on each node of 8Gi: all of it stranded too.
    assert least.fragmentation()["memory"][-1] == pytest.approx(14 / 16)
    assert most.samples.time == [0.0, 0.0, 1.0, 2.0, 12.0, 20.0]
    assert most.fragmentation()["cpu"] == [0.0] * 6
    assert most.utilization()["cpu"] == [0.0, 0.125, 0.25, 0.75, 0.25, 0.25]

    ls, ms = least.summary(), most.summary()
    assert (ls["pending"], ms["pending"]) == (1, 0)
    assert ls["latencySeconds"]["count"] == 2 and ms["latencySeconds"]["count"] == 3
    assert ls["pendingSeconds"]["max"] == 18.0  # big: from 2 to the end, 20
    assert ms["pendingSeconds"]["max"] == 0.0
    # Stranded 0.75 of the cpu from 2 to 20 of the 20 s.
    assert ls["fragmentation"]["cpu"] == {"mean": pytest.approx(0.75 * 18 / 20), "peak": 0.75, "end": 0.75}
    assert ms["fragmentation"]["cpu"] == {"mean": 0.0, "peak": 0.0, "end": 0.0}


def test_a_pod_larger_than_every_node_strands_nothing(run_replay: Runner) -> None:
    trace = "time,name,template\n0,a,small\n1,huge,huge\n"
    (run,) = run_replay(node("n1") + template("small", "1") + template("huge", "16"), trace)
    assert [p.state for p in run.pods] == [RUNNING, PENDING]
    assert run.fragmentation()["cpu"] == [0.0, 0.0, 0.0]


def test_jsonl_trace_with_inline_specs(run_replay: Runner) -> None:
    trace = (
        '{"time": 0, "name": "team-a/x", "spec": {"containers": [{"name": "c", "image": "i",'
        ' "resources": {"requests": {"cpu": "3"}}}]}, "duration": 5}\n'
        '{"time": 1, "name": "y", "spec": {"metadata": {"labels": {"app": "y"}}, "spec": {"containers":'
        ' [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "2"}}}]}}, "duration": null}\n'
    )
    (run,) = run_replay(node("n1"), trace, suffix=".jsonl")
    pods = {p.key: p for p in run.pods}
    assert pods["team-a/x"].bound == 0.0 and pods["team-a/x"].end == 5.0
    assert pods["default/y"].bound == 5.0  # 3 + 2 > 4 cpu: y waits for x
    assert pods["default/y"].state == RUNNING


def test_same_seed_same_result(run_replay: Runner) -> None:
    a = run_replay(PACKING_CLUSTER, PACKING_TRACE, seed=7)[0]
    b = run_replay(PACKING_CLUSTER, PACKING_TRACE, seed=7)[0]
    assert [(p.key, p.node, p.bound) for p in a.pods] == [(p.key, p.node, p.bound) for p in b.pods]
    assert a.summary() == b.summary()


@pytest.mark.parametrize(
    ("values", "p", "expected"),
    [
        ([5.0], 50, 5.0),
        ([1.0, 2.0, 3.0, 4.0], 50, 2.0),
        ([1.0, 2.0, 3.0, 4.0], 51, 3.0),
        ([1.0, 2.0, 3.0, 4.0], 100, 4.0),
        ([1.0, 2.0, 3.0, 4.0], 0, 1.0),
        ([float(i) for i in range(1, 101)], 99, 99.0),
        ([float(i) for i in range(1, 101)], 90, 90.0),
    ],
)
def test_nearest_rank_percentile(values: list[float], p: float, expected: float) -> None:
    assert percentile(values, p) == expected


def test_distribution_of_nothing_and_time_weighted_mean() -> None:
    assert distribution([]) == {"count": 0, "mean": None, "p50": None, "p90": None, "p99": None, "max": None}
    # 0.5 for 10 s, then 1.0 for 30 s: (5 + 30) / 40.
    assert time_weighted_mean([0.0, 10.0, 40.0], [0.5, 1.0, 0.0]) == pytest.approx(35 / 40)
    assert time_weighted_mean([3.0, 3.0], [0.2, 0.6]) == 0.6


def test_cluster_file_pods_can_be_preempted_and_are_counted_apart(run_replay: Runner) -> None:
    from kubesched.replay.report.table import summary_rows

    running = template("old", "3").replace("spec:", "spec:\n  nodeName: n1\n  priorityClassName: low")
    cluster = priority_class("low", 10) + priority_class("high", 1000) + node("n1") + running + template("new", "2")
    (run,) = run_replay(cluster, "time,name,template,priorityClass\n4,new,new,high\n")
    s = run.summary()
    assert (s["initialPods"], s["initialPreempted"]) == (1, 1)
    assert (s["arrived"], s["preempted"], s["running"]) == (1, 0, 1)
    assert run.pods[0].bound == 4.0
    # 3 of 4 cpu until 4 s, then the newcomer's 2.
    assert run.utilization()["cpu"] == [0.75, 0.5]
    assert ("cluster-file pods preempted", ["1"]) in summary_rows([s], run.resources)
