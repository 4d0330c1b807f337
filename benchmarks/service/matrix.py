"""make bench-serve and make bench-pairs as one matrix, servers x APIs x pairs x beams x
clients, each target a selection of it (latency.py, pairs.py), loaded by the one harness
(harness.py).

    Server(label, name, models, settings, apis, engine)   a server: a contender
        (contenders.contender: ours or LibreTranslate) and the APIs it is asked by, each its
        own rows (clients.APIS: ours, LibreTranslate's, DeepL's; none named: its own)
    measure(servers, pairs, beams, clients, sentences, check, args, together) -> figures by
      (label, API, pair's name, beam's name, clients)
        for each beam, the servers started at it, all together (their turns interleaved, so
        that a change in the machine's load falls on all) or each alone; for each pair (its
        languages; None: the ones the server names at GET /languages):
          check(server, service, shape, pair's name, beam's name) -> the answers expected of the
            server by the shape's API (its answers read, one way or another; a warm-up too)
          for each number of clients: args.rounds turns of load of each server by each of its
            APIs, pooled
    arguments(doc, seconds, per, quick)   the command line both targets share;
    loads(args, rounds, processes, quick)  each cell's load set on args, told in words
"""

import argparse
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks import common
from benchmarks.service.clients import Shape, named_pair
from benchmarks.service.contenders import PYTHON as LIBRETRANSLATE_PYTHON
from benchmarks.service.contenders import contender
from benchmarks.service.harness import Load, turn
from benchmarks.service.process import Service

BEAMS = {"greedy": 1, "beam 4": 4}  # bench-pairs' and bench-profile's settings: their beams


@dataclass(frozen=True)
class Server:
    label: str
    name: str  # contenders.SERVERS: ours or libretranslate
    models: tuple[Path, ...]
    settings: tuple[str, ...] = ()  # more of our server's (contenders.contender)
    apis: tuple[str, ...] = ()  # the APIs it is asked by (clients.APIS); (): its own, `name`
    engine: str | None = None  # ours in one process (its /health counts its batches): --engine


def shape(api: str, url: str, languages: tuple[str, str] | None) -> Shape:
    """One sentence's request by `api` to the server at `url`, from and to `languages` (None:
    the pair the server names at GET /languages)."""
    return Shape.asking(api, *(languages or named_pair(url)))


def measure(
    servers: list[Server],
    pairs: dict[str, tuple[str, str] | None],  # each pair's name: its languages
    beams: dict[str, int],
    clients: tuple[int, ...],
    sentences: list[str],
    check: Callable,
    args: argparse.Namespace,
    together: bool,
) -> dict:
    """The figures of every cell of the selection (see the module)."""
    figures: dict = {}
    config = getattr(args, "config", "config.yaml")  # our server's
    for setting, beam in beams.items():
        for group in [servers] if together else [[server] for server in servers]:
            with contextlib.ExitStack() as stack:
                running = {s: stack.enter_context(contender(s.name, s.models, beam, s.settings,
                           config, args.libretranslate_python)) for s in group}  # fmt: skip
                for pair, languages in pairs.items():
                    cell = (pair, languages, setting)
                    figures |= loaded(running, cell, clients, sentences, check, args)
    return figures


def loaded(running: dict[Server, Service], cell, clients, sentences, check, args) -> dict:
    """One pair's cells at one beam: each server checked by each of its APIs, then at each
    number of clients, args.rounds turns of each server by each API, interleaved."""
    pair, languages, setting = cell
    rows = [(server, api) for server in running for api in server.apis or (server.name,)]
    asked = {(s, api): shape(api, running[s].url, languages) for s, api in rows}
    expected = {(s, api): check(s, running[s], asked[s, api], pair, setting) for s, api in rows}
    figures = {}
    for number in clients:
        loads = {(s, api): Load(batches=s.engine is not None) for s, api in rows}
        for _ in range(args.rounds):
            for (s, api), load in loads.items():
                turn(load, running[s], asked[s, api], sentences, expected[s, api], number, args)
        for (s, api), load in loads.items():
            figures[s.label, api, pair, setting, number] = point = load.figures()
            print(s.label, api, pair, setting, number, "clients:", point, flush=True)
    return figures


def arguments(doc: str, seconds: int, per: str, quick: str, **more) -> argparse.ArgumentParser:
    """The command line of either target: common.arguments' (--out, --quick, `more`), the
    harness's options (see harness.turn) and LibreTranslate's Python."""
    parser = common.arguments(doc, out=common.RESULTS, quick=quick, **more)
    parser.add_argument(
        "--harness", choices=("wrk", "python"), default="wrk",
        help="the load: wrk (wrk.py, the default) or the Python clients (clients.py)",
    )  # fmt: skip
    parser.add_argument("--seconds", type=int, default=seconds, help=f"wrk's load a {per}")
    parser.add_argument("--requests", type=int, default=1000, help="the Python clients' a row")
    parser.add_argument("--libretranslate-python", type=Path, default=LIBRETRANSLATE_PYTHON)
    return parser


def loads(args: argparse.Namespace, rounds: int, processes: int, quick: tuple[int, int]) -> str:
    """Sets the load of each cell on `args`: `rounds` turns (--quick: one, of quick's seconds
    of wrk or requests), the Python clients in `processes` processes; -> the load, in words."""
    args.rounds, args.processes = (1 if args.quick else rounds), processes
    if args.quick:
        args.seconds, args.requests = quick
    if args.harness == "wrk":
        return f"{args.rounds} x " * (args.rounds > 1) + f"{args.seconds} s of wrk"
    if processes == 1:
        return f"{args.requests:,} requests from keep-alive clients in this process"
    return f"{args.requests:,} requests from Python clients in {processes} processes"
