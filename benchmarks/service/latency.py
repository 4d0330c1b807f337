"""make bench-serve: the service from 1 to 64 clients, against the real LibreTranslate on the
same model, and by each API it speaks; a selection of the matrix (matrix.py): four servers x
LibreTranslate's API (ours, torch: x our API, LibreTranslate's and DeepL's) x the pair they
name x greedy x 1, 4, 16, 32 and 64 clients.

    python -m benchmarks.service.latency [--quick] [--config FILE] [--checkpoint C]
        [--libretranslate-python P] [--no-libretranslate] [--harness wrk|python]
        [--seconds 2] [--requests 1000]

    the servers (contenders.py), all started at once on 127.0.0.1, on this machine:
      ours, torch          python -m seq2seq.serve --engine torch --model C, greedy, one thread;
                           asked by each API it speaks (clients.APIS): ours (POST /translate,
                           JSON text), LibreTranslate's (POST /translate, a form: q, source,
                           target) and DeepL's (POST /v2/translate, JSON text, source_lang,
                           target_lang), each its own rows
      ours, CTranslate2    the same with the default engine (greedy decoding by CTranslate2 on
                           the export cached beside C)
      ours, 2 workers      the same with serve.workers=2 (its batches and share not shown:
                           /health speaks for the worker that answers it)
      LibreTranslate       1.9.6 serving our Argos export of C, like for like: greedy, one
                           thread (skipped, saying why, if its venv is missing)
    first, the check (and warm-up) of each server by each of its APIs: every test sentence
      (up to 1,000; 100: --quick) asked once by 4 keep-alive Python clients (clients.py), each
      answer read
      -> unlike: answers unlike `translate --engine torch`'s (0 expected, but where
         LibreTranslate's answer is formatted otherwise or runs past our length limit)
    then, at each number of clients, each server by each of its APIs in turn, five times
    (interleaved; each row's five turns pooled; one turn: --quick), each request one test
    sentence in that API's shape (clients.Shape), by the harness (harness.py): --seconds of wrk
    a turn (1: --quick), or --requests (100: --quick) from that many Python client threads of
    this process, on the cores the server uses
      -> requests/s, p50, p99, the server's CPU ms per request (Linux: its process and its
         workers), failed, our sentences per batch
      -> ours: the service's share of its engine's speed in-process, on batches of that size
         (the engine loaded here, the same sentences translated in batches of that size,
         timed alone)
      -> ours, torch by LibreTranslate's API and by DeepL's / by our API: CPU per request
         (DeepL's aim: within 1.1)
      -> ours / LibreTranslate: requests/s, p99, CPU per request

Results: benchmarks/results/serve_latency.{json,md} (--out DIR elsewhere).
"""

import dataclasses
import sys
import tempfile
from functools import cache
from pathlib import Path

from benchmarks import common
from benchmarks.service.clients import APIS, run_load
from benchmarks.service.contenders import SETTINGS, like_for_like
from benchmarks.service.harness import Load
from benchmarks.service.load import timed_command, with_checkpoint
from benchmarks.service.matrix import Server, arguments, loads, measure
from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import DEFAULT_CONFIG
from seq2seq.decoding.engine_choice import load_engine
from seq2seq.exports.argos import export_argos
from seq2seq.serving.protocol import allow_files

CLIENTS = (1, 4, 16, 32, 64)
ROUNDS = 5  # each server's load at a number of clients comes in this many turns, pooled
CHECKED = 1000  # test sentences asked of each server, each answer read
PEER = "LibreTranslate 1.9.6"


def servers(checkpoint: Path, args, folder: Path) -> list[Server]:
    """Ours with each engine and with 2 workers, and LibreTranslate on the Argos export of
    `checkpoint` (made into `folder`) unless skipped; all asked by LibreTranslate's API, ours
    with torch by every API it speaks."""
    # 64 clients and the benchmark's own GET /health, whose connection the server may not have
    # seen closed when the load starts: past the default serve.max_client_connections
    most = f"serve.max_client_connections={2 * max(CLIENTS)}"

    def ours(label: str, engine: str, workers: int = 1, apis=("libretranslate",)) -> Server:
        settings = ("--engine", engine, f"serve.workers={workers}", most)
        alone = engine if workers == 1 else None
        return Server(label, "ours", (checkpoint,), settings, apis, alone)

    chosen = [ours("ours, torch", "torch", apis=APIS), ours("ours, CTranslate2", "auto"),
              ours("ours, CTranslate2, 2 workers", "auto", workers=2)]  # fmt: skip
    if args.no_libretranslate:
        print("LibreTranslate skipped (--no-libretranslate)")
    elif not args.libretranslate_python.exists():
        print(f"LibreTranslate skipped: no {args.libretranslate_python} (make bench-serve)")
    else:
        package = folder / "model.argosmodel"
        export_argos(load_checkpoint(checkpoint), package)
        chosen.append(Server(PEER, "libretranslate", (package,)))
    return chosen


def checker(sentences: list[str], expected: list[str], requests: int, checks: dict):
    """The check (and warm-up) of each server by each API: the first `requests` sentences
    asked by 4 keep-alive Python clients, each answer read -> checks[label][API]."""

    def check(server: Server, service, shape, route, setting) -> list[str]:
        asked = min(requests, len(sentences))
        checked = Load(batches=False)
        checked.add(run_load(service, shape, sentences, expected, asked, 4, batches=False))
        figures = checked.figures()
        checks.setdefault(server.label, {})[shape.api] = {
            "requests": asked, "unlike": figures["unlike"], "failed": figures["failed"]
        }  # fmt: skip
        return expected

    return check


@cache
def loaded(checkpoint: Path, engine: str):
    return load_engine(checkpoint=checkpoint, choice=engine, device="cpu")


def engine_speed(checkpoint: Path, engine: str, sentences: list[str], batch: int) -> float:
    """Sentences/s of the engine in this process, greedy, translating `sentences` `batch` at a
    time."""
    engine = loaded(checkpoint, engine)
    greedy = dataclasses.replace(engine.config.decode, beam_size=1, batch_size=batch)
    return len(sentences) / common.timed_translation(engine.translate, sentences, greedy)[0]


def shares(servers: list[Server], figures: dict, checkpoint: Path, sentences) -> None:
    """Each of our points (by each API) gets its engine's in-process speed at its batch size,
    and the service's share of it."""
    speeds: dict = {}
    for server in servers:
        for points in figures[server.label].values() if server.engine else ():  # by API
            for point in points.values():
                batch = max(1, round(point["sentences_per_batch"]))
                key = (server.engine, batch)
                if key not in speeds:
                    speeds[key] = engine_speed(checkpoint, server.engine, sentences, batch)
                point["engine_in_process_sentences_per_s"] = speeds[key]
                point["share_of_engine"] = point["requests_per_s"] / speeds[key]


API_NAMES = {"ours": "ours", "libretranslate": "LibreTranslate's", "deepl": "DeepL's"}
HEADER = ["server", "API", "clients", "req/s", "p50 ms", "p99 ms", "server CPU ms/request",
          "CPU vs our API", "sentences/batch", "share of its engine", "req/s vs LibreTranslate",
          "p99 vs LibreTranslate", "CPU vs LibreTranslate"]  # fmt: skip
CPU = "server_cpu_ms_per_request"
VERSUS = ("requests_per_s", "p99_ms", CPU)  # ours / LibreTranslate's


def markdown(results: dict) -> str:
    peer, servers = results["peer"], results["servers"]
    about = (f"One-sentence requests, {results['load']} a row; servers interleaved, in "
             f"{results['rounds']} turns each.")  # fmt: skip
    rows = []
    for clients in map(str, CLIENTS):
        theirs = servers[peer]["libretranslate"][clients] if peer else None
        for label, apis in servers.items():
            ours = apis["ours"][clients] if "ours" in apis else None
            for api, points in apis.items():
                versus = (ours if api != "ours" else None, theirs if label != peer else None)
                rows.append(row(label, api, clients, points[clients], *versus))
    table = common.markdown_table(HEADER, rows, *notes(results), right=True)
    title = "The service from 1 to 64 clients, against LibreTranslate"
    return common.service_page(title, results, "latency", about, table)


def row(label: str, api: str, clients: str, p: dict, ours, theirs) -> list[str]:
    """The table's row of the point `p`: its server `label` by `api`, its CPU per request
    over `ours` (the same server's by our API, if any), and over `theirs` (LibreTranslate's
    by its own, if any)."""
    by_ours = f"{p[CPU] / ours[CPU]:.2f}" if ours else ""
    versus = [f"{p[key] / theirs[key]:.2f}" if theirs else "" for key in VERSUS]
    return [label, API_NAMES[api], clients, f"{p['requests_per_s']:,.0f}", f"{p['p50_ms']:.1f}",
            f"{p['p99_ms']:.1f}", f"{p[CPU]:.2f}", by_ours, shown(p, "sentences_per_batch", ".1f"),
            shown(p, "share_of_engine", ".2f"), *versus]  # fmt: skip


def notes(results: dict) -> list[str]:
    """The notes under the table: the checks and failures of each server by each API, what
    "CPU vs our API" is, and LibreTranslate's settings."""
    checks = []
    for label, apis in results["servers"].items():
        for api, points in apis.items():
            checked = results["checked"][label][api]
            failed = sum(p["failed"] for p in points.values())
            checks.append(f"- {label}, by {API_NAMES[api]}: {checked['unlike']} unlike of "
                          f"{checked['requests']:,} ({checked['failed']} failed), {failed} "
                          "failed under load")  # fmt: skip
    found = ["Answers unlike `translate --engine torch`'s, of the check's (each read), and "
             "requests failed under load:", "\n".join(checks),
             "CPU vs our API: the server's CPU per request by that API over its CPU per "
             "request by ours (POST /translate, JSON), at as many clients (DeepL's "
             "POST /v2/translate: aimed within 1.10)."]  # fmt: skip
    if results["peer"]:
        overrides = ", ".join(f"{k}={v}" for k, v in results["peer_overrides"].items())
        defaults = [f"- {key}: {value}" for key, value in results["peer_settings"].items()]
        found += [f"LibreTranslate's settings: its defaults, but {overrides}, like for like "
                  "with our greedy decoding on one thread. Its defaults:",
                  "\n".join(defaults)]  # fmt: skip
    return found


def shown(point: dict, key: str, spec: str) -> str:
    """A figure that only our single-process servers have, or nothing."""
    return format(point[key], spec) if key in point else ""


def main() -> None:
    quick = "one turn of 1 s or 100 requests"
    parser = arguments(__doc__, seconds=2, per="turn", quick=quick, config=DEFAULT_CONFIG)
    parser.add_argument("--no-libretranslate", action="store_true")
    args, checkpoint, source = with_checkpoint(parser)
    sentences = source.read_text(encoding="utf-8").splitlines()
    _, expected = timed_command(source, "--engine", "torch", "--checkpoint", str(checkpoint))
    load = loads(args, ROUNDS, 1, quick=(1, 100))
    checked_requests = 100 if args.quick else CHECKED
    allow_files(max(CLIENTS) + 1024)
    checked: dict = {}
    check = checker(sentences, expected, checked_requests, checked)
    with tempfile.TemporaryDirectory() as folder:
        chosen = servers(checkpoint, args, Path(folder))
        cells = measure(
            chosen, {"": None}, {"greedy": 1}, CLIENTS, sentences, check, args, together=True
        )
    figures: dict = {}  # by server, API and clients
    for (label, api, _, _, clients), point in cells.items():
        figures.setdefault(label, {}).setdefault(api, {})[str(clients)] = point
    shares(chosen, figures, checkpoint, sentences)
    peer = PEER if PEER in figures else None
    results = {"machine": common.machine(), "harness": args.harness, "load": load,
               "rounds": args.rounds, "checked": checked, "peer": peer,
               "peer_settings": SETTINGS if peer else {},
               "peer_overrides": like_for_like(1) if peer else {}, "servers": figures}  # fmt: skip
    common.save_results(args.out / "serve_latency", results, markdown(results))


if __name__ == "__main__":
    sys.exit(main())
