"""`make bench-pairs`: two language pairs and a pivot served from one address, ours against
LibreTranslate 1.9.6 serving the same two Argos packages, like for like.

    python -m benchmarks.service.pairs --package A.argosmodel --package B.argosmodel
        [--sentences data/multi30k_de_en/test.src] [--harness wrk|python] [--seconds 10]
        [--requests 1000] [--quick] [--out DIR] [--name pairs]
        [--ours KEY=VALUE ...]

    A and B: B translates from A's target, so that A's source to B's target goes through a
      pivot, which both servers find by themselves (LibreTranslate as Argos Translate does,
      ours as seq2seq/service/models.py does)
    each setting, like for like, each server started alone on this machine:
      greedy    ours: {"beam_size": 1} in our API;  LibreTranslate: ARGOS_BEAM_SIZE=1
      beam 4    ours: the packages' default (Argos's);  LibreTranslate: its default, 4
      LibreTranslate at ARGOS_INTRA_THREADS=1 (faster on 2 cores than its default), ours at
      serve.threads 1 (and the settings of --ours, such as serve.workers=2)
    for the direct pair (A) and the pivoted one, at 1 and 16 clients, cycling through the
    first 200 test sentences, after a warm-up:
      --harness wrk (the default): wrk.py, 10 s (3: --quick) of wrk's keep-alive connections,
         wrk on the machine's last core and the server on the others
      --harness python: clients.py's keep-alive client threads in 4 processes (one Python
         process's clients would be the bottleneck), 1,000 requests (200: --quick)
      -> requests/s, p50, p99, the server's CPU ms per request (its process and children),
         failed
      -> of the sentences, asked one at a time, ours (formatted as LibreTranslate formats its
         text answers) unlike LibreTranslate's: 0 expected, our Argos engine decodes as Argos
      -> ours / LibreTranslate: requests/s and CPU per request

Results: benchmarks/results/pairs.{json,md} (--out DIR elsewhere, --name for another stem).
"""

import argparse
import contextlib
import sys
from pathlib import Path

from benchmarks.common import RESULTS, machine, save_results
from benchmarks.service.clients import Load, Shape, ask, run_load
from benchmarks.service.libretranslate_peer import PYTHON as LIBRETRANSLATE_PYTHON
from benchmarks.service.libretranslate_peer import like_for_like, running_libretranslate
from benchmarks.service.process import running_server
from benchmarks.service.wrk import harness_options, run_wrk
from seq2seq.exports.argos_package import package_metadata
from seq2seq.service.libretranslate import formatted

SETTINGS = {"greedy": 1, "beam 4": 4}  # the beam size of each
CLIENTS, PROCESSES, SENTENCES = (1, 16), 4, 200


def shape(server: str, source: str, target: str, beam: int) -> Shape:
    """One sentence's request, ours (JSON, with the beam size) or LibreTranslate's (a form)."""
    if server == "ours":
        return Shape.ours(source=source, target=target, beam_size=beam)
    return Shape.libretranslate(source, target)


def load(service, asked: Shape, sentences, expected, clients: int, args) -> dict:
    """The figures of one load: wrk's, `args.seconds` by `clients` connections (wrk.py); or,
    --harness python, args.requests requests from `clients` Python clients in up to
    PROCESSES processes (clients.py)."""
    if args.harness == "wrk":
        return run_wrk(service, asked, sentences, clients, args.seconds)
    measured = Load(batches=False)
    run_load(service, asked, sentences, expected, args.requests, clients, measured, PROCESSES)
    return measured.figures()


def pairs_of(packages: list[Path]) -> dict[str, tuple[str, str]]:
    """The direct pair (the first package's) and the pivoted one, from their metadata."""
    (a_from, a_to), (b_from, b_to) = (codes(package) for package in packages)
    if b_from != a_to:
        sys.exit(f"the second package must translate from {a_to}, the first one's target")
    return {"direct": (a_from, a_to), "pivoted": (a_from, b_to)}


def codes(package: Path) -> tuple[str, str]:
    metadata = package_metadata(package)
    return metadata["from_code"], metadata["to_code"]


@contextlib.contextmanager
def server(name: str, packages: list[Path], beam: int, python: Path, ours: list[str]):
    if name == "ours":
        models = [arg for package in packages for arg in ("--model", str(package))]
        with running_server(models, "config.yaml", ["serve.threads=1", *ours]) as service:
            yield service
    else:
        with running_libretranslate(python, packages, like_for_like(beam)) as service:
            yield service


def measure(args, sentences: list[str]) -> tuple[dict, dict]:
    pairs = pairs_of(args.package)
    figures: dict = {}
    unlikes: dict = {}  # of each setting and route: our answers, formatted, unlike theirs
    for setting, beam in SETTINGS.items():
        expected: dict = {}
        unlike: dict = {}
        for name in ("libretranslate", "ours"):
            with server(name, args.package, beam, args.libretranslate_python, args.ours) as service:
                for route, (source, target) in pairs.items():
                    asked = shape(name, source, target, beam)
                    answers = [ask(service.url, asked, s)[1] for s in sentences]  # one at a time
                    if name == "libretranslate":  # its own answers
                        expected[route] = answers
                    else:  # ours, formatted as LibreTranslate formats its text answers
                        unlike[route] = sum(
                            formatted(s, a) != e
                            for s, a, e in zip(sentences, answers, expected[route], strict=True)
                        )
                    ask(service.url, asked, sentences[0])  # warm-up
                    for clients in CLIENTS:
                        point = load(service, asked, sentences, expected[route], clients, args)
                        figures.setdefault(setting, {}).setdefault(route, {}).setdefault(
                            str(clients), {}
                        )[name] = point
                        print(setting, route, clients, name, point, flush=True)
        unlikes[setting] = unlike
    return figures, unlikes


def markdown(results: dict) -> str:
    info, lines = results["machine"], []
    lines += [
        "# Two pairs and a pivot from one address, against LibreTranslate",
        "",
        f"{info['device_name']}, {info['cpu_count']} cores, {info['date'][:10]}. "
        f"`python -m benchmarks.service.pairs`: the packages "
        f"{', '.join(Path(p).name for p in results['packages'])}; "
        f"direct {'-'.join(results['pairs']['direct'])}, pivoted "
        f"{'-'.join(results['pairs']['pivoted'])}; one-sentence requests, {results['load']} "
        "a row; LibreTranslate 1.9.6 at ARGOS_INTRA_THREADS=1, ours at "
        f"{', '.join(['serve.threads=1', *results.get('ours', [])])}.",
        "",
        "| setting | route | clients | requests/s, ours | LibreTranslate | ours / LT | CPU ms "
        "per request, ours | LibreTranslate | ours / LT | p99 ms, ours | LibreTranslate | "
        f"of the {SENTENCES} sentences, ours unlike LibreTranslate's |",
        "|" + " --- |" * 12,
    ]
    for setting, routes in results["figures"].items():
        for route, points in routes.items():
            unlike = results["unlike"][setting][route]
            for clients, point in points.items():
                ours, theirs = point["ours"], point["libretranslate"]
                rps = ours["requests_per_s"] / theirs["requests_per_s"]
                cpu = ours["server_cpu_ms_per_request"] / theirs["server_cpu_ms_per_request"]
                lines.append(
                    f"| {setting} | {route} | {clients} | {ours['requests_per_s']:.0f} | "
                    f"{theirs['requests_per_s']:.0f} | {rps:.2f} | "
                    f"{ours['server_cpu_ms_per_request']:.1f} | "
                    f"{theirs['server_cpu_ms_per_request']:.1f} | "
                    f"{cpu:.2f} | {ours['p99_ms']:.0f} | {theirs['p99_ms']:.0f} | "
                    f"{unlike} |"
                )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, action="append", required=True)
    parser.add_argument("--sentences", type=Path, default=Path("data/multi30k_de_en/test.src"))
    parser.add_argument("--libretranslate-python", type=Path, default=LIBRETRANSLATE_PYTHON)
    harness_options(parser, seconds=10, per="row")
    parser.add_argument("--quick", action="store_true", help="3 s or 200 requests a row")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--name", default="pairs", help="the results' stem: <out>/<name>.json")
    parser.add_argument(
        "--ours", action="append", default=[], metavar="KEY=VALUE",
        help="a setting of our server's, e.g. serve.workers=2 (again for more)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.requests = 3, 200
    if len(args.package) != 2:
        parser.error("--package twice: a pair, then one from its target language")
    if not args.libretranslate_python.exists():
        sys.exit(f"no LibreTranslate at {args.libretranslate_python}: make bench-pairs installs it")
    sentences = args.sentences.read_text("utf-8").splitlines()[:SENTENCES]
    figures, unlike = measure(args, sentences)
    results = {
        "machine": machine(),
        "packages": [str(p) for p in args.package],
        "ours": args.ours,
        "pairs": pairs_of(args.package),
        "harness": args.harness,
        "load": f"{args.seconds} s of wrk"
        if args.harness == "wrk"
        else f"{args.requests:,} requests from Python clients in {PROCESSES} processes",
        "figures": figures,
        "unlike": unlike,
    }
    save_results(args.out / args.name, results, markdown(results))


if __name__ == "__main__":
    main()
