"""A translation service: the trained model, loaded once, answering HTTP, and a page to try it.

    python -m seq2seq.serve [--config FILE] [--checkpoint PATH] [--host H] [--port P] [key=value]
    python -m seq2seq.serve --engine ctranslate2 --model DIR   (seq2seq/exports/)
    python -m seq2seq.serve --model en_de.argosmodel --model runs/de_en/best.pt ...
                     several models, each pair its own (seq2seq/serving/models.py: a pair
                     without a model of its own goes through pivot languages); a pair's
                     versions side by side: --model original=PATH --model tuned=PATH
    python -m seq2seq.serve --model en_de.argosmodel decode.beam_size=1
                     each model decodes with its own decode settings (a checkpoint's,
                     Argos Translate's beam 4 for a package) but those set here: greedy,
                     as LibreTranslate's ARGOS_BEAM_SIZE=1; a setting a model has no use
                     for is refused at start (/info: the settings in force)

    POST /translate  {"text": ["three is three"], "beam_size": 1, "nbest": 2, "model": "tuned"}
                     (all but text optional)
                     -> {"translations": [...], "warnings": [...]}, what translate prints
    POST /attention  {"text": "three is three"} -> the translation, and the attention weights
                     of every layer and head with their tokens (not with --engine ctranslate2: 501)
    GET  /health, /info (model, vocabularies, config, limits), / (the page, seq2seq/service/static/)
    LibreTranslate's API too: POST /translate {"q": ...} or a form, POST /detect, GET /languages
    GET /openapi.json: the API described; GET /metrics, Prometheus' (serve.metrics)

A request's way, stop by stop, is docs/architecture.md's (checked against the code by
tests/test_service_walk.py); each module of seq2seq/service/ says its own step, and
docs/serve.md what each step answers. Concurrent small requests share a batch, and each gets
what `python -m seq2seq.translate` gives for its sentences. Every answer is JSON, errors too
({"error": "..."} naming the mistake; uvicorn's own 503 over the connection limit is its plain
text): a mistake is a 4xx, a failure while decoding a 500 (its traceback on stderr), and the
server goes on. The limits and the address come from the config's `serve` section; it listens
on 127.0.0.1 (this machine only) unless told otherwise. Ctrl-C or SIGTERM stops accepting
connections, answers every request already received (new ones on open connections get a 503),
then exits.

With serve.workers N, this process binds the socket and starts N workers (supervise), each
all of the above on that socket with its own engine; it then watches them, replacing one that
dies, and passes a Ctrl-C or SIGTERM on to each. The socket listens once the models are
loaded (the first worker's): before, a connection is refused, not kept waiting (a proxy tries
another replica); the `serving ... at URL` line says when. With serve.metrics, GET /metrics sums the
figures of every worker (seq2seq/service/prometheus.py: a folder they share while they run).
"""

import argparse
import contextlib
import gc
import logging
import multiprocessing
import multiprocessing.connection
import multiprocessing.synchronize
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import NamedTuple

import torch

from seq2seq.config import Config, add_config_arguments, decode_overrides, load_config
from seq2seq.decoding.engine_choice import (
    add_engine_arguments,
    compute_type_set,
    described,
    load_engine,
)
from seq2seq.serve_options import environment_settings
from seq2seq.serving.loaders import Loader, load_models, served
from seq2seq.support.database import answers
from seq2seq.support.errors import Interrupted, UserError, command_parser, run_cli, say, warn

try:  # the service's dependencies: one line, not a traceback, if they are missing
    from seq2seq.service.prometheus import forget, shared_between_workers
    from seq2seq.service.server import Server
    from seq2seq.serving.protocol import bind
except ImportError as missing:
    package = (missing.name or "").partition(".")[0]  # uvicorn, not uvicorn.protocols
    sys.exit(f'error: the service needs {package}: pip install -e ".[serve]"')


class Worker(NamedTuple):
    process: multiprocessing.Process
    ready: multiprocessing.synchronize.Event  # set once it listens (its models loaded)


def serve(server: Server) -> None:
    """Answer requests until Ctrl-C or SIGTERM. uvicorn handles the signal (a graceful
    shutdown), then raises it again once done, with the handlers it found: these note it."""
    logging.getLogger("uvicorn").addHandler(one_line_log())
    # What is loaded now lives as long as the process: out of sight of the garbage collector,
    # whose full passes over torch's many objects held every request for ~100 ms now and then
    gc.freeze()
    signals = []
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda number, frame: signals.append(number))
    try:
        server.serve_forever()
    finally:
        server.close()
    if signals:
        raise Interrupted(f"stopped serving ({signal.Signals(signals[0]).name})", signals[0])


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("seq2seq.serve", __doc__.splitlines()[0])
    add_config_arguments(parser)
    add_engine_arguments(parser, several=True)
    parser.add_argument("--host", help="address to listen on (default: serve.host, 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (default: serve.port, 8000; 0: any free)")
    args = parser.parse_intermixed_args(argv)
    overrides = [*environment(args.config), *args.overrides]
    if args.host is not None:
        overrides.append(f"serve.host={args.host}")
    if args.port is not None:
        overrides.append(f"serve.port={args.port}")
    config = load_config(args.config, overrides)
    if config.serve.database:
        answers(config.serve.database, "serve.database")
    engines = load(config, args)  # the same errors as one worker's, said once, before any
    path = ", ".join(map(str, args.model)) or engines[0].path  # a version: its checkpoint
    if config.serve.workers == 1:
        server = Server(engines, config.serve)
        del engines  # the server's: a version swapped in frees the engine loaded now
        engine = described(server.models.default.engine)  # the first: loaded at start
        page = Server.address(server.socket, config.serve.url_prefix)
        server.on_listening = partial(say, f"serving {path} ({engine}) at {page} (Ctrl-C to stop)")
        serve(server)
        return
    del engines  # each worker loads its own (a cached export is now made: they find it)
    sock = bind(config.serve.host, config.serve.port)
    url = Server.address(sock, config.serve.url_prefix)
    line = f"serving {path} at {url} with {config.serve.workers} workers (Ctrl-C to stop)"
    with shared_between_workers(config.serve.metrics):  # GET /metrics: all the workers' figures
        supervise(sock, config, args, partial(say, line))


def environment(config: str) -> list[str]:
    """The serve settings the environment sets (serve_options.py's environment_settings),
    checked against the config; a mistake names its variable (each tried alone to find it);
    said in one line."""
    found = environment_settings(dict(os.environ))
    if not found:
        return []
    try:
        load_config(config, [setting for _, setting in found])
    except UserError:
        for name, setting in found:
            try:
                load_config(config, [setting])
            except UserError as error:
                raise UserError(f"{name}={os.environ[name]}: {error}") from None
        raise
    say("from the environment: " + ", ".join(f"{s} ({name})" for name, s in found))
    return [setting for _, setting in found]


def load(config: Config, args: argparse.Namespace) -> list[Loader]:
    """The models of the command line: each --model's (loaded by the server: at once, or at
    its first request with serve.lazy), else the config's best checkpoint (or --checkpoint)
    as served (loaders.py's `served`: the version its versions/current names), loaded now;
    each decoding with its own decode settings but those the command line's overrides set
    (decode.beam_size=1: greedy), on the process's cores as serve.threads says (threads.py;
    torch: that many threads, one if 0)."""
    torch.set_num_threads(config.serve.threads or 1)
    decode = {**decode_overrides(args.overrides), **compute_type_set(args)}
    choice, device = args.engine, args.device
    if args.model:  # --checkpoint too: the first
        paths = [args.checkpoint, *args.model] if args.checkpoint else args.model
        return load_models(paths, config, choice, device, decode)
    given = Path(args.checkpoint or config.checkpoint_path)
    load = partial(load_engine, config, choice=choice, device=device, decode=decode,
                   serve=config.serve)  # fmt: skip
    path, versions = served(given, load)  # an experiment's best.pt: the version served
    # no version served: as given (None: the config's own, named in a "make train" error)
    engine = load(args.checkpoint if path == given else path)
    loader = Loader.of(engine, str(path), versions)
    return [loader if args.checkpoint else replace(loader, config=args.config)]


# A worker that dies this many times in a row before it serves stops the service
START_TRIES = 3


SPAWN = multiprocessing.get_context("spawn")  # a worker imports afresh: none of our threads


def start_worker(sock: socket.socket, config: Config, args, number: int, listening) -> Worker:
    """A worker process answering on `sock` with its own engine and decoder thread, and the
    event it sets once it listens (as it sets `listening`, the workers' shared one)."""
    ready = SPAWN.Event()
    process = SPAWN.Process(
        target=worker, args=(sock, config, args, (ready, listening)), name=f"worker {number}"
    )  # fmt: skip
    process.start()
    return Worker(process, ready)


def worker(sock: socket.socket, config: Config, args: argparse.Namespace, events) -> None:
    """One worker process: its own process group, so that a Ctrl-C at the terminal reaches
    the parent alone, which passes it on as one SIGTERM. `events`: those to set once it
    listens."""
    os.setpgrp()

    def run(_) -> None:
        server = Server(load(config, args), config.serve, sock)
        server.on_listening = lambda: [event.set() for event in events]
        with contextlib.suppress(Interrupted):  # the parent says that it stopped
            serve(server)

    run_cli(run)


def supervise(sock: socket.socket, config: Config, args, listening: Callable[[], None]) -> None:
    """Start serve.workers workers on `sock` and watch them: `listening()` once the first
    listens; one that dies is replaced (only the requests it was answering fail), unless it
    died START_TRIES times in a row before serving: then all stop, with one line. SIGINT or
    SIGTERM to this process is one SIGTERM to each worker (a graceful stop)."""
    first = SPAWN.Event()
    threading.Thread(target=lambda: first.wait() and listening(), daemon=True).start()
    workers: dict[int, Worker] = {}
    signals: list[int] = []
    stopped: set[int] = set()  # the workers sent a SIGTERM

    def stop_all() -> None:
        for process, _ in list(workers.values()):
            if process.is_alive() and process.pid not in stopped:
                stopped.add(process.pid)
                os.kill(process.pid, signal.SIGTERM)

    def on_signal(number: int, frame) -> None:
        signals.append(number)
        stop_all()

    for signal_number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signal_number, on_signal)
    for number in range(1, config.serve.workers + 1):
        workers[number] = start_worker(sock, config, args, number, first)
    failed_starts = dict.fromkeys(workers, 0)
    while not signals:
        by_sentinel = {process.sentinel: number for number, (process, _) in workers.items()}
        ended = multiprocessing.connection.wait(list(by_sentinel))
        number = by_sentinel[ended[0]]  # one at a time: the next turn sees any other
        dead, ready = workers[number]
        dead.join()
        forget(dead.pid)  # its gauges (serve.metrics)
        failed_starts[number] = 0 if ready.is_set() else failed_starts[number] + 1
        if signals or failed_starts[number] == START_TRIES:
            break
        warn(f"{dead.name} stopped ({ending(dead.exitcode)}): starting another in its place")
        workers[number] = start_worker(sock, config, args, number, first)
    stop_all()  # a worker started as the signal came gets it too
    for process, _ in workers.values():
        process.join()
    if signals:
        raise Interrupted(f"stopped serving ({signal.Signals(signals[0]).name})", signals[0])
    last = ending(workers[number].process.exitcode)
    raise UserError(f"worker {number} stopped {START_TRIES} times while starting (last: {last})")


def ending(exit_code: int) -> str:
    """How a process ended, from its exit code: `exit code 1`, `killed by SIGKILL`."""
    if exit_code < 0:
        return f"killed by {signal.Signals(-exit_code).name}"
    return f"exit code {exit_code}"


def one_line_log() -> logging.Handler:
    """uvicorn's warnings (a malformed request, the connection limit) as `warning: ...`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    return handler


if __name__ == "__main__":
    run_cli(main)
