"""The load harness's pool (benchmarks/service/harness.py): the turns of either driver add up
to one load's figures, requests/s and CPU per request over every turn, p50 and p99 of every
request the Python clients sent or the median of wrk's turns'; and the load told in words
(benchmarks/service/matrix.py)."""

import argparse
import json

import pytest

from benchmarks.common import RESULTS
from benchmarks.service.harness import Load
from benchmarks.service.matrix import loads


def wrk_turn(seconds: float, answered: int, p99_ms: float, cpu: float | None) -> dict:
    return {"seconds": seconds, "answered": answered, "failed": 1, "not_2xx": 1,
            "socket_errors": 0, "p50_ms": p99_ms / 2, "p99_ms": p99_ms, "cpu": cpu,
            "server_cores": [0], "wrk_cores": [1], "batches": answered // 2,
            "sentences": answered}  # fmt: skip


def test_wrk_turns_pool_their_counts_and_take_the_median_of_their_percentiles():
    load = Load(batches=True)
    for turn in (wrk_turn(2.0, 100, 30.0, 1.0), wrk_turn(2.0, 300, 10.0, 1.0),
                 wrk_turn(1.0, 100, 20.0, 0.5)):  # fmt: skip
        load.add(turn)
    figures = load.figures()
    assert figures["requests_per_s"] == 500 / 5.0
    assert (figures["p50_ms"], figures["p99_ms"]) == (10.0, 20.0)
    assert figures["server_cpu_ms_per_request"] == pytest.approx(1000 * 2.5 / 500)
    assert figures["sentences_per_batch"] == 500 / 250
    assert figures["failed"] == figures["counts"]["not_2xx"] == 3
    assert figures["wrk_cores"] == [1] and "unlike" not in figures


def test_the_python_clients_turns_pool_every_latency_and_an_unknown_cpu_stays_unknown():
    load = Load(batches=False)
    load.add({"seconds": 1.0, "answered": 2, "failed": 1, "unlike": 1, "latencies": [0.01, 0.03],
              "cpu": 0.2})  # fmt: skip
    load.add({"seconds": 1.0, "answered": 1, "failed": 0, "unlike": 0, "latencies": [0.02],
              "cpu": None})  # fmt: skip
    figures = load.figures()
    assert figures["requests_per_s"] == 3 / 2.0
    assert figures["p50_ms"] == pytest.approx(20.0)
    assert (figures["failed"], figures["unlike"]) == (1, 1)
    assert "server_cpu_ms_per_request" not in figures and "counts" not in figures


@pytest.mark.parametrize(
    ("stem", "rounds", "processes", "seconds"),
    [("serve_latency", 5, 1, 2), ("pairs", 1, 4, 10), ("pairs_numbers_python", 1, 4, 10)],
)
def test_each_targets_load_is_told_as_its_committed_run_tells_it(stem, rounds, processes, seconds):
    """matrix.loads, bench-serve's and bench-pairs' one account of a cell's load (wrk's seconds
    or the Python clients' requests), words their tables as their committed runs do."""
    committed = json.loads((RESULTS / f"{stem}.json").read_text("utf-8"))
    args = argparse.Namespace(harness=committed["harness"], quick=False, seconds=seconds,
                              requests=1000)  # fmt: skip
    assert loads(args, rounds, processes, quick=(1, 100)) == committed["load"]
    assert (args.rounds, args.processes) == (rounds, processes)
