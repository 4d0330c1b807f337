"""`make bench-pairs`: two language pairs and a pivot served from one address (or one pair),
ours against LibreTranslate 1.9.6 serving the same Argos packages, like for like: a selection
of the matrix (matrix.py), two servers x each its own API x the pairs x greedy and beam 4 x 1
and 16 clients.

    python -m benchmarks.service.pairs --package A.argosmodel [--package B.argosmodel]
        [--sentences data/multi30k_de_en/test.src] [--harness wrk|python] [--seconds 10]
        [--requests 1000] [--quick] [--out DIR] [--name pairs]
        [--ours KEY=VALUE ...]

    A and B: B translates from A's target, so that A's source to B's target goes through a
      pivot, which both servers find by themselves (LibreTranslate as Argos Translate does,
      ours as seq2seq/serving/models.py does); A alone: its pair, direct (e.g. one package
      int8, then its float32 export: the weights' types like for like)
    each server started alone at each beam, like for like (contenders.py): greedy
      (decode.beam_size=1; LibreTranslate's ARGOS_BEAM_SIZE=1) and beam 4 (the packages' own),
      one decoding thread each (and ours with the settings of --ours, e.g. serve.workers=2)
    for the direct pair (A) and the pivoted one, at 1 and 16 clients, cycling through the
    first 200 test sentences, after a warm-up, by the harness (harness.py): 10 s (3: --quick)
    of wrk, or 1,000 requests (200: --quick) from Python clients in 4 processes (one
    Python process's clients would be the bottleneck)
      -> requests/s, p50, p99, the server's CPU ms per request (its process and children),
         failed
      -> of the sentences, asked one at a time, ours (formatted as LibreTranslate formats its
         text answers) unlike LibreTranslate's: 0 expected, our Argos engine decodes as Argos
      -> ours / LibreTranslate: requests/s and CPU per request
    before the servers start, CTranslate2 alone (common.ctranslate2_alone) on A, at each beam,
    on the same 200 sentences in batches of 1 and of 16 (the batch a server has of as many
    clients' one-sentence requests): the limit, in sentences per CPU second
      -> ours / CTranslate2 alone, on the direct pair: requests/s over its sentences per CPU
         second (at as many clients as its batch), and CPU ms per request over its CPU ms a
         sentence

Ours / CTranslate2 alone by requests/s is the share of the limit that the server's core
allows: it assumes that the server has one core of its own, as wrk.py gives it on 2 cores
(every core but the last, which wrk has; on more cores the server has more, and the share
may pass 1; the Python clients share the cores with it), and that 16 clients make batches
of 16; at 1 client, the server idles through each round trip, which the share counts too.
By CPU ms it holds on any machine: the server's process and children against CTranslate2's
work alone.

Results: benchmarks/results/pairs.{json,md} (--out DIR elsewhere, --name for another stem).
"""

import os
import sys
from dataclasses import replace
from pathlib import Path

from benchmarks.common import (
    ctranslate2_alone,
    machine,
    markdown_table,
    save_results,
    service_page,
)
from benchmarks.service.clients import ask
from benchmarks.service.contenders import codes
from benchmarks.service.matrix import BEAMS, Server, arguments, loads, measure
from benchmarks.service.wrk import cores
from seq2seq.decoding.argos_engine import ArgosEngine
from seq2seq.service.libretranslate import formatted

CLIENTS, PROCESSES, SENTENCES = (1, 16), 4, 200


def pairs_of(packages: list[Path]) -> dict[str, tuple[str, str]]:
    """The direct pair (the first package's) and the pivoted one (through the second, if
    given), from their metadata."""
    if len(packages) == 1:
        return {"direct": codes(packages[0])}
    (a_from, a_to), (b_from, b_to) = (codes(package) for package in packages)
    if b_from != a_to:
        sys.exit(f"the second package must translate from {a_to}, the first one's target")
    return {"direct": (a_from, a_to), "pivoted": (a_from, b_to)}


def checker(sentences: list[str], unlikes: dict):
    """The check (and warm-up) of each server: the sentences asked one at a time, each answer
    read; LibreTranslate's (checked first) are the answers expected, and of ours, formatted as
    LibreTranslate formats its text answers, those unlike them are counted into unlikes."""
    expected: dict = {}

    def check(server: Server, service, shape, route: str, setting: str) -> list[str]:
        answers = [ask(service.url, shape, s)[1] for s in sentences]
        if server.name == "libretranslate":
            expected[setting, route] = answers
        else:
            theirs = expected[setting, route]
            unlikes.setdefault(setting, {})[route] = sum(
                formatted(s, a) != e for s, a, e in zip(sentences, answers, theirs, strict=True)
            )
        ask(service.url, shape, sentences[0])  # warm-up
        return expected[setting, route]

    return check


def limits(package: Path, sentences: list[str]) -> dict:
    """CTranslate2 alone on `package` (common.ctranslate2_alone; the package's engine, as our
    server loads it), at each setting, for each number of clients: the sentences in batches of
    that many, in sentences per CPU second, on the cores wrk.py gives the servers (the cores of
    a virtual machine may differ by a third from each other)."""
    engine = ArgosEngine.load(package, "cpu")
    figures: dict = {}
    available = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cores()[0])
    try:
        for setting, beam in BEAMS.items():
            for clients in CLIENTS:
                decoding = replace(engine.config.decode, beam_size=beam, batch_size=clients)
                speed = ctranslate2_alone(engine, sentences, decoding, clients)
                figures.setdefault(setting, {})[str(clients)] = speed
    finally:
        os.sched_setaffinity(0, available)
    return figures


ALONE_NOTE = (
    "CTranslate2 alone (benchmarks/common.py's ctranslate2_alone): the direct pair's package "
    "decoded by CTranslate2's translate_batch, given its tokens made beforehand and the "
    f"options our Argos engine passes, on the same {SENTENCES} sentences in batches of as "
    "many as the row's clients, one thread on the servers' cores, timed by CPU time: the "
    "limit. Ours / alone: "
    "requests/s over its sentences per CPU second (the share of the limit, for a server "
    "given one core: wrk.py gives it every core but the last, one of 2), and CPU ms per "
    "request over its CPU ms a sentence."
)


def header(alone: bool) -> list[str]:
    """The table's columns, with CTranslate2 alone's where the run measured it (`alone`)."""
    by_speed, by_cpu = (["CTranslate2 alone, sentences per CPU second", "ours / alone"],
                        ["ours / alone"]) if alone else ([], [])  # fmt: skip
    return ["setting", "route", "clients", "requests/s, ours", "LibreTranslate", "ours / LT",
            *by_speed, "CPU ms per request, ours", "LibreTranslate", "ours / LT", *by_cpu,
            "p99 ms, ours", "LibreTranslate",
            f"of the {SENTENCES} sentences, ours unlike LibreTranslate's"]  # fmt: skip


def against_alone(ours: dict, limit: float | None) -> tuple[list[str], list[str]]:
    """The cells of ours against CTranslate2 alone's `limit` (sentences per CPU second; None:
    not measured on this route): the limit and ours' requests/s over it; ours' CPU ms per
    request over its CPU ms a sentence."""
    if limit is None:
        return ["-", "-"], ["-"]
    return ([f"{limit:.0f}", f"{ours['requests_per_s'] / limit:.2f}"],
            [f"{ours['server_cpu_ms_per_request'] * limit / 1000:.2f}"])  # fmt: skip


def markdown(results: dict) -> str:
    routes = ", ".join(f"{route} {'-'.join(pair)}" for route, pair in results["pairs"].items())
    settings = ", ".join(["serve.threads=1", *results.get("ours", [])])
    about = (
        f"The packages {', '.join(Path(p).name for p in results['packages'])}; {routes}; "
        f"one-sentence requests, {results['load']} a row; LibreTranslate 1.9.6 at "
        f"ARGOS_INTRA_THREADS=1, ours at {settings}."
    )
    alone = results.get("alone")  # not measured by older runs
    rows = []
    for setting, routes in results["figures"].items():
        for route, points in routes.items():
            for clients, point in points.items():
                ours, theirs = point["ours"], point["libretranslate"]
                rps, cpu = (ours[k] / theirs[k]
                            for k in ("requests_per_s", "server_cpu_ms_per_request"))  # fmt: skip
                limit = alone[setting][clients] if alone and route == "direct" else None
                by_speed, by_cpu = against_alone(ours, limit) if alone else ([], [])
                rows.append([setting, route, clients, f"{ours['requests_per_s']:.0f}",
                             f"{theirs['requests_per_s']:.0f}", f"{rps:.2f}", *by_speed,
                             f"{ours['server_cpu_ms_per_request']:.1f}",
                             f"{theirs['server_cpu_ms_per_request']:.1f}", f"{cpu:.2f}",
                             *by_cpu, f"{ours['p99_ms']:.0f}", f"{theirs['p99_ms']:.0f}",
                             results["unlike"][setting][route]])  # fmt: skip
    notes = [ALONE_NOTE] * bool(alone)
    table = markdown_table(header(bool(alone)), rows, *notes)
    title = ("Two pairs and a pivot from one address" if len(results["pairs"]) > 1
             else "One pair") + ", against LibreTranslate"  # fmt: skip
    return service_page(title, results, "pairs", about, table)


def main() -> None:
    quick = "3 s or 200 requests a row"
    parser = arguments(__doc__, seconds=10, per="row", quick=quick, name="pairs")
    parser.add_argument("--package", type=Path, action="append", required=True)
    parser.add_argument("--sentences", type=Path, default=Path("data/multi30k_de_en/test.src"))
    parser.add_argument(
        "--ours", action="append", default=[], metavar="KEY=VALUE",
        help="a setting of our server's, e.g. serve.workers=2 (again for more)",
    )  # fmt: skip
    args = parser.parse_args()
    load = loads(args, 1, PROCESSES, quick=(3, 200))
    if len(args.package) not in (1, 2):
        parser.error("--package once or twice: a pair, then one from its target language")
    if not args.libretranslate_python.exists():
        sys.exit(f"no LibreTranslate at {args.libretranslate_python}: make bench-pairs installs it")
    sentences = args.sentences.read_text("utf-8").splitlines()[:SENTENCES]
    packages = tuple(args.package)
    servers = [Server("libretranslate", "libretranslate", packages),
               Server("ours", "ours", packages, tuple(args.ours))]  # fmt: skip
    unlike: dict = {}
    check = checker(sentences, unlike)
    pairs = pairs_of(packages)
    alone = limits(packages[0], sentences)  # before the servers start
    cells = measure(servers, pairs, BEAMS, CLIENTS, sentences, check, args, False)
    figures: dict = {}
    for (name, _, route, setting, clients), point in cells.items():
        row = figures.setdefault(setting, {}).setdefault(route, {})
        row.setdefault(str(clients), {})[name] = point
    results = {"machine": machine(), "packages": [str(p) for p in args.package],
               "ours": args.ours, "pairs": pairs, "harness": args.harness,
               "load": load, "figures": figures, "unlike": unlike, "alone": alone}  # fmt: skip
    save_results(args.out / args.name, results, markdown(results))


if __name__ == "__main__":
    main()
