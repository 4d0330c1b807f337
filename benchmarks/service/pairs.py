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

Results: benchmarks/results/pairs.{json,md} (--out DIR elsewhere, --name for another stem).
"""

import sys
from pathlib import Path

from benchmarks.common import machine, markdown_table, save_results, service_page
from benchmarks.service.clients import ask
from benchmarks.service.contenders import codes
from benchmarks.service.matrix import BEAMS, Server, arguments, loads, measure
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


HEADER = ["setting", "route", "clients", "requests/s, ours", "LibreTranslate", "ours / LT",
          "CPU ms per request, ours", "LibreTranslate", "ours / LT", "p99 ms, ours",
          "LibreTranslate",
          f"of the {SENTENCES} sentences, ours unlike LibreTranslate's"]  # fmt: skip


def markdown(results: dict) -> str:
    routes = ", ".join(f"{route} {'-'.join(pair)}" for route, pair in results["pairs"].items())
    settings = ", ".join(["serve.threads=1", *results.get("ours", [])])
    about = (
        f"The packages {', '.join(Path(p).name for p in results['packages'])}; {routes}; "
        f"one-sentence requests, {results['load']} a row; LibreTranslate 1.9.6 at "
        f"ARGOS_INTRA_THREADS=1, ours at {settings}."
    )
    rows = []
    for setting, routes in results["figures"].items():
        for route, points in routes.items():
            for clients, point in points.items():
                ours, theirs = point["ours"], point["libretranslate"]
                rps, cpu = (ours[k] / theirs[k]
                            for k in ("requests_per_s", "server_cpu_ms_per_request"))  # fmt: skip
                rows.append([setting, route, clients, f"{ours['requests_per_s']:.0f}",
                             f"{theirs['requests_per_s']:.0f}", f"{rps:.2f}",
                             f"{ours['server_cpu_ms_per_request']:.1f}",
                             f"{theirs['server_cpu_ms_per_request']:.1f}", f"{cpu:.2f}",
                             f"{ours['p99_ms']:.0f}", f"{theirs['p99_ms']:.0f}",
                             results["unlike"][setting][route]])  # fmt: skip
    title = ("Two pairs and a pivot from one address" if len(results["pairs"]) > 1
             else "One pair") + ", against LibreTranslate"  # fmt: skip
    return service_page(title, results, "pairs", about, markdown_table(HEADER, rows))


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
    cells = measure(servers, pairs_of(packages), BEAMS, CLIENTS, sentences, check, args, False)
    figures: dict = {}
    for (name, _, route, setting, clients), point in cells.items():
        row = figures.setdefault(setting, {}).setdefault(route, {})
        row.setdefault(str(clients), {})[name] = point
    results = {"machine": machine(), "packages": [str(p) for p in args.package],
               "ours": args.ours, "pairs": pairs_of(packages), "harness": args.harness,
               "load": load, "figures": figures, "unlike": unlike}  # fmt: skip
    save_results(args.out / args.name, results, markdown(results))


if __name__ == "__main__":
    main()
