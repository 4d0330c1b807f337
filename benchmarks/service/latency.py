"""The service from 1 to 64 clients, against the real LibreTranslate on the same model.

    make bench-serve    (= python -m benchmarks.service.latency [--quick] [--config FILE]
                           [--checkpoint C] [--libretranslate-python P] [--no-libretranslate])

    the servers, each started once on 127.0.0.1, all on this machine:
      ours, torch          python -m seq2seq.serve --engine torch --checkpoint C
      ours, CTranslate2    python -m seq2seq.serve --checkpoint C (the default engine: greedy
                           decoding by CTranslate2 on the export cached beside C)
      ours, 2 workers      the same with serve.workers=2 (its batches and share not shown:
                           /health speaks for the worker that answers it)
      LibreTranslate       1.9.6 serving our Argos export of C, offline, with its defaults but
                           like for like (libretranslate_peer.like_for_like): greedy
                           (ARGOS_BEAM_SIZE=1) as ours, on one thread (ARGOS_INTRA_THREADS=1)
                           (libretranslate_peer.py; skipped, saying why, if its venv is missing)
    for clients in 1, 4, 16, 32, 64, each server in turn, five times (interleaved, so that a
    change in the machine's load falls on all; each server's five turns pooled), after a
    warm-up:
      <- that many client threads of this process, each with one keep-alive connection, each
         request one test sentence in LibreTranslate's form (q, source, target), the same
         client and request for every server, until 1,000 requests (100: --quick) are answered
      -> the figures of the load harness (clients.py): requests/s, p50, p99, the server's CPU
         ms per request (Linux: its process and its workers), failed, unlike (answers unlike
         `translate --engine torch`'s: 0 expected, but where LibreTranslate's answer is
         formatted otherwise or runs past our length limit), our sentences per batch
      -> ours: the service's share of its engine's speed in-process, on batches of that size
         (the engine loaded here, the same sentences translated in batches of that size,
         timed alone)
      -> ours / LibreTranslate: requests/s, p99

Results: benchmarks/results/serve_latency.{json,md} (--out DIR elsewhere).
"""

import argparse
import contextlib
import dataclasses
import sys
import tempfile
from functools import cache
from pathlib import Path

from benchmarks.common import RESULTS, machine, save_results, timed_translation
from benchmarks.service.clients import Load, libretranslate_shape, run_load
from benchmarks.service.libretranslate_peer import PYTHON as LIBRETRANSLATE_PYTHON
from benchmarks.service.libretranslate_peer import (
    SETTINGS,
    like_for_like,
    running_libretranslate,
)
from benchmarks.service.load import timed_command
from benchmarks.service.process import running_server
from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import DEFAULT_CONFIG, load_config
from seq2seq.decoding.engine_choice import load_engine
from seq2seq.exports.argos import export_argos
from seq2seq.service.protocol import allow_files
from seq2seq.support.paths import text_files

CLIENTS = (1, 4, 16, 32, 64)
ROUNDS = 5  # each server's requests at a number of clients come in this many turns, pooled


@dataclasses.dataclass
class Server:
    """One server under test: how to start it, and (ours) the engine to compare it with."""

    label: str
    start: object  # a context manager factory -> Service
    engine: str | None = None  # ours, in one process: the --engine it runs (else None)


def ours(label: str, checkpoint: Path, config: str, engine: str, workers: int = 1) -> Server:
    args = ["--engine", engine, "--checkpoint", str(checkpoint)]
    overrides = [f"serve.workers={workers}"]
    start = lambda: running_server(args, config, overrides)  # noqa: E731
    return Server(label, start, engine if workers == 1 else None)


def libretranslate(python: Path, checkpoint: Path, folder: Path) -> Server:
    """LibreTranslate serving the Argos export of `checkpoint`, made into `folder`."""
    package = folder / "model.argosmodel"
    export_argos(load_checkpoint(checkpoint), package)
    return Server(
        "LibreTranslate 1.9.6", lambda: running_libretranslate(python, [package], like_for_like(1))
    )


@cache
def loaded(checkpoint: Path, engine: str):
    return load_engine(checkpoint=checkpoint, choice=engine, device="cpu")


def engine_speed(checkpoint: Path, engine: str, sentences: list[str], batch: int) -> float:
    """Sentences/s of the engine in this process, greedy, translating `sentences` `batch` at a
    time."""
    engine = loaded(checkpoint, engine)
    greedy = dataclasses.replace(engine.config.decode, beam_size=1, batch_size=batch)
    return len(sentences) / timed_translation(engine.translate, sentences, greedy)[0]


def run(servers: list[Server], requests: int, sentences, expected) -> dict:
    """Every server at every number of clients, interleaved."""
    figures: dict = {server.label: {} for server in servers}
    with contextlib.ExitStack() as stack:
        services = [stack.enter_context(server.start()) for server in servers]
        shapes = [libretranslate_shape(service.url) for service in services]
        for service, shape in zip(services, shapes, strict=True):  # warm-up
            run_load(service, shape, sentences, expected, 50, 4, Load())
        for clients in CLIENTS:
            loads = [Load(batches=server.engine is not None) for server in servers]
            for _ in range(ROUNDS):
                for service, shape, load in zip(services, shapes, loads, strict=True):
                    run_load(service, shape, sentences, expected, requests // ROUNDS, clients, load)
            for server, load in zip(servers, loads, strict=True):
                figures[server.label][clients] = load.figures()
                print(server.label, clients, "clients:", load.figures(), flush=True)
    return figures


def shares(servers: list[Server], figures: dict, checkpoint: Path, sentences) -> None:
    """Each of our points gets its engine's in-process speed at its batch size, and the
    service's share of it."""
    speeds: dict = {}
    for server in servers:
        for point in figures[server.label].values() if server.engine else ():
            batch = max(1, round(point["sentences_per_batch"]))
            key = (server.engine, batch)
            if key not in speeds:
                speeds[key] = engine_speed(checkpoint, server.engine, sentences, batch)
            point["engine_in_process_sentences_per_s"] = speeds[key]
            point["share_of_engine"] = point["requests_per_s"] / speeds[key]


def markdown(results: dict) -> str:
    peer = results["peer"]
    lines = [
        "# The service from 1 to 64 clients, against LibreTranslate",
        "",
        f"Machine: {results['machine']['device_name']}, {results['machine']['cpu_count']} "
        f"cores; {results['machine']['date']}. `python -m benchmarks.service.latency`: "
        f"{results['requests']} one-sentence requests per row, from keep-alive clients in this "
        "process; servers interleaved, in five turns each.",
        "",
        "| server | clients | req/s | p50 ms | p99 ms | server CPU ms/request | sentences/batch "
        "| share of its engine | req/s vs LibreTranslate | p99 vs LibreTranslate |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for clients in CLIENTS:
        theirs = results["servers"].get(peer, {}).get(clients) if peer else None
        for label, points in results["servers"].items():
            p = points[clients]
            versus = (
                [f"{p['requests_per_s'] / theirs['requests_per_s']:.2f}",
                 f"{p['p99_ms'] / theirs['p99_ms']:.2f}"]
                if theirs and label != peer else ["", ""]
            )  # fmt: skip
            lines.append(
                f"| {label} | {clients} | {p['requests_per_s']:,.0f} | {p['p50_ms']:.1f} "
                f"| {p['p99_ms']:.1f} | {p['server_cpu_ms_per_request']:.2f} "
                f"| {shown(p, 'sentences_per_batch', '.1f')} "
                f"| {shown(p, 'share_of_engine', '.2f')} | {' | '.join(versus)} |"
            )
    lines += ["", "Answers unlike `translate --engine torch` (of all requests), and failures:", ""]
    for label, points in results["servers"].items():
        unlike = sum(p["unlike"] for p in points.values())
        failed = sum(p["failed"] for p in points.values())
        lines.append(f"- {label}: {unlike} unlike, {failed} failed")
    if peer:
        overrides = ", ".join(f"{k}={v}" for k, v in results["peer_overrides"].items())
        lines += ["", f"LibreTranslate's settings: its defaults, but {overrides}, like for "
                  "like with our greedy decoding on one thread. Its defaults:", ""]  # fmt: skip
        lines += [f"- {key}: {value}" for key, value in results["peer_settings"].items()]
    return "\n".join(lines) + "\n"


def shown(point: dict, key: str, spec: str) -> str:
    """A figure that only our single-process servers have, or nothing."""
    return format(point[key], spec) if key in point else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 requests a row")
    parser.add_argument("--config", default=DEFAULT_CONFIG)
    parser.add_argument("--checkpoint", help="default: the config's best.pt")
    parser.add_argument("--libretranslate-python", type=Path, default=LIBRETRANSLATE_PYTHON)
    parser.add_argument("--no-libretranslate", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    config = load_config(args.config)
    checkpoint = Path(args.checkpoint or config.checkpoint_path)
    source = text_files(config.data_dir, "test")[0]
    sentences = source.read_text(encoding="utf-8").splitlines()
    _, expected = timed_command(source, "--engine", "torch", "--checkpoint", str(checkpoint))
    requests = 100 if args.quick else 1000
    allow_files(max(CLIENTS) + 1024)
    servers = [
        ours("ours, torch", checkpoint, args.config, "torch"),
        ours("ours, CTranslate2", checkpoint, args.config, "auto"),
        ours("ours, CTranslate2, 2 workers", checkpoint, args.config, "auto", workers=2),
    ]
    peer = None
    with contextlib.ExitStack() as stack:
        if args.no_libretranslate:
            print("LibreTranslate skipped (--no-libretranslate)")
        elif not args.libretranslate_python.exists():
            print(f"LibreTranslate skipped: no {args.libretranslate_python} (make bench-serve)")
        else:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            servers.append(libretranslate(args.libretranslate_python, checkpoint, folder))
            peer = servers[-1].label
        figures = run(servers, requests, sentences, expected)
    shares(servers, figures, checkpoint, sentences)
    results = {
        "machine": machine(),
        "requests": requests,
        "peer": peer,
        "peer_settings": SETTINGS if peer else {},
        "peer_overrides": like_for_like(1) if peer else {},
        "servers": figures,
    }
    save_results(args.out / "serve_latency", results, markdown(results))


if __name__ == "__main__":
    sys.exit(main())
