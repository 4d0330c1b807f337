"""The one load harness of the service benchmarks: two drivers, and one way to pool what a
load's turns measured into its figures.

    wrk.py      wrk, a load generator in C: the speed figures (answers not read)
    clients.py  Python clients: where each answer is read and checked
    Load(batches, attack)      one kind of load on one server; add(turn) for each turn of
        either driver; figures() -> requests_per_s, p50_ms, p99_ms, failed,
        server_cpu_ms_per_request (Linux), sentences_per_batch (our server's batches, from
        GET /health); the Python clients' unlike (answered, but not as expected) and an
        attack's counts (load.py); wrk's cores (server_cores, wrk_cores) and counts (not_2xx,
        socket_errors: its failed)
        requests/s, CPU per request and sentences per batch: over every turn; p50 and p99: of
        every request the Python clients sent, or the median of wrk's turns' (wrk gives a
        turn's percentiles, not its latencies)
    turn(load, service, shape, sentences, expected, clients, args)   one turn by args.harness
        (matrix.arguments: --harness wrk|python, --seconds of wrk's, --requests of the clients')
"""

import math
import statistics
from collections import Counter
from dataclasses import dataclass, field

from benchmarks.service.clients import Shape, run_load
from benchmarks.service.process import Service
from benchmarks.service.wrk import run_wrk

ATTACK_COUNTS = ("poison_as_expected", "poison_otherwise", "idle_reopened")  # attack.py's
COUNTED = ("answered", "failed", "unlike", "not_2xx", "socket_errors", "batches", "sentences")


@dataclass
class Load:
    """One kind of load on one server, pooled over its turns (see the module). `batches`:
    whether the server's GET /health counts the batches of all its work (ours in one process)."""

    batches: bool = True
    attack: Counter | None = None  # the attacker's counts, for a load under attack
    seconds: float = 0.0
    cpu: float | None = 0.0  # the server's CPU seconds (None: unknown)
    counts: Counter = field(default_factory=Counter)  # COUNTED, summed over the turns
    latencies: list = field(default_factory=list)  # the Python clients': of each answer
    wrk_turns: list = field(default_factory=list)  # wrk's turns: p50_ms, p99_ms, the cores

    def add(self, turn: dict) -> None:
        self.seconds += turn["seconds"]
        self.cpu = None if None in (self.cpu, turn["cpu"]) else self.cpu + turn["cpu"]
        self.counts.update({key: turn[key] for key in COUNTED if key in turn})
        self.latencies += turn.get("latencies", [])
        self.wrk_turns += [turn] if "p50_ms" in turn else []

    def figures(self) -> dict:
        answered = self.counts["answered"]
        p50, p99 = self.percentiles()
        figures = {
            "requests_per_s": answered / self.seconds,  # one sentence each
            "p50_ms": p50,
            "p99_ms": p99,
            "failed": self.counts["failed"],
        }
        if not self.wrk_turns:
            figures["unlike"] = self.counts["unlike"]
        if self.cpu is not None:  # what the server spends on a request, however busy the machine
            figures["server_cpu_ms_per_request"] = 1000 * self.cpu / max(1, answered)
        if self.batches and self.counts["batches"]:
            figures["sentences_per_batch"] = self.counts["sentences"] / self.counts["batches"]
        if self.attack is not None:
            figures.update({key: self.attack[key] for key in ATTACK_COUNTS})
        if self.wrk_turns:  # the cores, and the counts `failed` comes from
            counts = {key: self.counts[key] for key in COUNTED if key in self.counts}
            figures |= {key: self.wrk_turns[0][key] for key in ("server_cores", "wrk_cores")}
            figures["counts"] = {**counts, "seconds": self.seconds, "server_cpu_s": self.cpu}
        return figures

    def percentiles(self) -> tuple[float, float]:
        """(p50, p99) in ms (see the module)."""
        if self.wrk_turns:
            return tuple(statistics.median(t[key] for t in self.wrk_turns)
                         for key in ("p50_ms", "p99_ms"))  # fmt: skip
        latencies = self.latencies
        if len(latencies) < 2:
            return (1000 * latencies[0],) * 2 if latencies else (math.nan, math.nan)
        cuts = statistics.quantiles(latencies, n=100, method="inclusive")
        return 1000 * cuts[49], 1000 * cuts[98]


def turn(load: Load, service: Service, shape: Shape, sentences, expected, clients: int, args):
    """One turn of load into `load`: wrk's, args.seconds by `clients` connections; or
    args.requests / args.rounds requests from `clients` Python clients in up to
    args.processes processes."""
    if args.harness == "wrk":
        load.add(run_wrk(service, shape, sentences, clients, args.seconds, load.batches))
    else:
        requests = args.requests // args.rounds
        load.add(run_load(service, shape, sentences, expected, requests, clients,
                          args.processes, batches=load.batches))  # fmt: skip
