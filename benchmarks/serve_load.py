"""The translation service under load, calm and under attack, with both engines.

    python benchmarks/serve_load.py [--quick] [--checkpoint runs/numbers/best.pt] [--config FILE]
    (and in `make bench`: the figures serve_*)

    translate, the command     python -m seq2seq.translate --engine torch --checkpoint C
                               < test.src, timed whole (start-up included); its lines are the
                               expected answers
                               (for CTranslate2, translate --engine ctranslate2 --model DIR's)
    translate, in-process      translate_lines(model, sentences), timed alone
    the service, per engine    python -m seq2seq.serve --engine torch --checkpoint C, or --engine
                               ctranslate2 --model DIR (the checkpoint exported to a temporary
                               folder; skipped, saying why, without the ctranslate2 package)
      <- 32 client threads (8 in quick mode), each with one keep-alive connection, sending
         POST /translate {"text": [one test sentence]}, cycling through test.src, until
         2,000 requests (100 in quick mode) are answered or the time bound has passed:
           calm      nothing else on the server
           attack    the same, while another process (this script with --attack) holds
                     1,000 idle connections (50 in quick mode; half silent, half trickling
                     a header a byte every 0.5 s, each re-opened as soon as the server closes
                     it) and one client sends poison in a loop, each request after the
                     answer to the last: a lone surrogate sentence (400), malformed JSON
                     (400), a body of serve.max_body_bytes + 1 bytes (413)
         two rounds of calm then attack (one in quick mode), after a warm-up; each phase's
         figures pool its rounds
      -> per engine and phase: requests/s, latency p50 and p99, failed (not 200, or never
         sent in time), mismatched (not the command's line for that sentence), sentences
         per batch, the server's CPU ms per request (Linux); poison answered as expected,
         and otherwise; idle connections re-opened
      -> serve_failed: the sum over every load; serve_mismatched: over the torch engine's
         (both must be 0, and so must serve_ctranslate2_*mismatched)

Ratios: serve_<engine>_p99_attack_vs_calm (the target: at most 2); serve_ctranslate2_vs_torch
(requests/s at one sentence per request); serve_vs_translate_command compares the torch
service's sentences/s with the whole command's on the same file, serve_vs_translate_in_process
with decoding alone, in large batches.

The server runs with the config's serve section, except for two settings, the same in every
phase: serve.max_connections is the idle connections + the clients + 64 (the poison client,
re-opened connections the server has not yet seen close, /health), so that uvicorn holds the
attack rather than answering the clients' requests 503 (with the default, 256, it would:
that limit keeps a server of small means alive, at the price of those 503s), and so is
serve.max_client_connections, since every connection comes from this machine's address; and
serve.timeout_s is 2 s instead of 10, so that within a phase of a few seconds the server
closes the idle connections and they come back, 1,000 accepts at a time: a costlier attack
than connections left open (with 10 s, few or none close within a phase). The attacker runs on
the same machine, sharing its cores. The server, the attacker and this process each need a
file per connection: the
soft limit on open files (ulimit -n, often 1,024) is raised for this process and, inherited,
for the other two, up to the hard limit; a hard limit too low for the attack is an error.

A third load per engine, calm, sends LibreTranslate's request: POST /translate form-encoded
q=...&source=...&target=... (the pair the service names at GET /languages), answered
{"translatedText": ...} (serve_<engine>_libretranslate_*).
"""

import argparse
import contextlib
import http.client
import json
import os
import queue
import re
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlencode, urlsplit

from seq2seq.config import DEFAULT_CONFIG, load_config
from seq2seq.service.protocol import allow_files
from seq2seq.support.paths import text_files

HANG = 600  # seconds: a server that has not started by then is hung
TIMEOUT_S = 2.0  # the server's serve.timeout_s in the load check (see above)
TRICKLE = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Trickle: "  # then "x" for ever
TRICKLE_EVERY = 0.5  # seconds between two bytes of a trickling connection


@dataclass(frozen=True)
class Sizes:
    requests: int  # per phase and round
    clients: int
    idle: int  # idle connections during the attack
    rounds: int
    bound: float  # seconds a phase may take at most
    poison_pause: float  # seconds between two poison requests (besides waiting for the answer)

    @classmethod
    def of(cls, quick: bool) -> "Sizes":
        if quick:
            return cls(requests=100, clients=8, idle=50, rounds=1, bound=120.0, poison_pause=0.05)
        return cls(requests=2000, clients=32, idle=1000, rounds=2, bound=600.0, poison_pause=0.0)


@dataclass(frozen=True)
class Shape:
    """How a load asks for the translation of one sentence, and reads it from the answer."""

    name: str
    path: str
    content_type: str
    body: Callable[[str], bytes]
    translation: Callable[[dict], str]


OURS = Shape(
    "ours",
    "/translate",
    "application/json",
    lambda sentence: json.dumps({"text": [sentence]}).encode(),
    lambda answer: answer["translations"][0],
)


def libretranslate_shape(url: str) -> Shape:
    """LibreTranslate's request: a form with q, source and target, the pair the service
    names at GET /languages (LibreTranslate lists each language as a target of itself too);
    the answer's translatedText."""
    status, languages = get_json(url, "/languages")
    if status != 200:
        sys.exit(f"the service answered GET /languages with {status}: no LibreTranslate API")
    source, target = next(
        (lang["code"], to) for lang in languages for to in lang["targets"] if to != lang["code"]
    )
    return Shape(
        "libretranslate",
        "/translate",
        "application/x-www-form-urlencoded",
        lambda sentence: urlencode({"q": sentence, "source": source, "target": target}).encode(),
        lambda answer: answer["translatedText"],
    )


def timed_command(source: Path, *args: str) -> tuple[float, list[str]]:
    """Wall seconds of `python -m seq2seq.translate args < source`, and its output lines."""
    start = time.perf_counter()
    with source.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "seq2seq.translate", *args],
            stdin=stdin, capture_output=True, text=True, check=True,
        )  # fmt: skip
    return time.perf_counter() - start, done.stdout.splitlines()


def timed_in_process(checkpoint: Path, sentences: list[str]) -> float:
    from seq2seq.checkpoint import load_checkpoint  # torch: not in the attacker's process
    from seq2seq.decoding.engines import TorchEngine
    from seq2seq.translate import translate_lines

    model = TorchEngine(load_checkpoint(checkpoint))
    translate_lines(model, sentences[:16])  # warm-up
    start = time.perf_counter()
    translate_lines(model, sentences)
    return time.perf_counter() - start


class Service(NamedTuple):
    url: str
    pid: int


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds so far of a process and of those it started that are still
    running (the service's workers) (Linux's /proc; None elsewhere)."""
    total = None
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # it ended
        if stat.parent.name == str(pid) or fields[1] == str(pid):
            total = (total or 0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


@contextlib.contextmanager
def running_server(engine_args: list[str], config: str, overrides: list[str]):
    """The service on a free port of 127.0.0.1, once it answers /health; stopped with
    SIGTERM at the end."""
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "seq2seq.serve", "--config", config, *engine_args,
             "--host", "127.0.0.1", "--port", "0", *overrides],
            stderr=log,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + HANG
            while not (found := re.search(r"serving .* at (http://\S+)", read(log))):
                if server.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"the service did not start: {read(log)}")
                time.sleep(0.05)
            url = found.group(1)
            assert get_json(url, "/health")[1]["status"] == "ok"
            yield Service(url, server.pid)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=HANG)


def read(log) -> str:
    return Path(log.name).read_text()


def get_json(url: str, path: str) -> tuple[int, dict | list | None]:
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    try:
        return response.status, json.loads(body)
    except ValueError:
        return response.status, None


def numbered_work(count: int) -> queue.Queue:
    """The requests' numbers, for the clients to take."""
    work: queue.Queue[int] = queue.Queue()
    for i in range(count):
        work.put(i)
    return work


def client(url, shape: Shape, work: queue.Queue, sentences, expected, deadline, results) -> None:
    """Send requests on one keep-alive connection while there is work and time:
    results get (latency in seconds, answered with 200, the expected translation)."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    headers = {"Content-Type": shape.content_type}
    while time.monotonic() < deadline:
        try:
            i = work.get_nowait()
        except queue.Empty:
            break
        body = shape.body(sentences[i % len(sentences)])
        start = time.perf_counter()
        try:
            connection.request("POST", shape.path, body, headers)
            response = connection.getresponse()
            answer = json.loads(response.read())
            ok = response.status == 200
            same = ok and shape.translation(answer) == expected[i % len(expected)]
        except (OSError, http.client.HTTPException, ValueError, KeyError, IndexError):
            connection.close()  # reconnects at the next request
            ok = same = False
        results.append((time.perf_counter() - start, ok, same))
    connection.close()


@dataclass
class Phase:
    """One kind of load, pooled over its rounds."""

    requests: int = 0
    seconds: float = 0.0
    batches: int = 0
    sentences: int = 0
    cpu: float | None = 0.0  # the server's CPU seconds (None: unknown)
    results: list = field(default_factory=list)  # (latency, answered, as expected)
    attack: Counter | None = None  # the attacker's counts, for a phase under attack

    def add(self, requests: int, seconds: float, results: list, before: dict, after: dict):
        self.requests += requests
        self.seconds += seconds
        self.results += results
        self.batches += after["batches"] - before["batches"]
        self.sentences += after["sentences"] - before["sentences"]
        known = None not in (self.cpu, before["cpu"], after["cpu"])
        self.cpu = self.cpu + after["cpu"] - before["cpu"] if known else None

    def figures(self, label: str) -> dict:
        results = self.results
        answered = sum(ok for _, ok, _ in results)
        latencies = [latency for latency, ok, _ in results if ok] or [float("nan")] * 2
        percentiles = statistics.quantiles(latencies, n=100, method="inclusive")
        figures = {
            f"serve_{label}_requests_per_s": answered / self.seconds,  # one sentence each
            f"serve_{label}_latency_p50_ms": 1000 * percentiles[49],
            f"serve_{label}_latency_p99_ms": 1000 * percentiles[98],
            f"serve_{label}_failed": self.requests - answered,  # an error, or not sent in time
            f"serve_{label}_mismatched": sum(ok and not same for _, ok, same in results),
            f"serve_{label}_sentences_per_batch": self.sentences / max(1, self.batches),
        }
        if self.cpu is not None:  # what the server spends on a request, however busy the machine
            figures[f"serve_{label}_server_cpu_ms_per_request"] = 1000 * self.cpu / max(1, answered)
        if self.attack is not None:
            for key in ("poison_as_expected", "poison_otherwise", "idle_reopened"):
                figures[f"serve_{label}_{key}"] = self.attack[key]
        return figures


def run_load(service, shape: Shape, sentences, expected, requests: int, sizes: Sizes, phase):
    """`requests` requests of one sentence from sizes.clients keep-alive clients, into
    `phase`."""
    url = service.url
    work = numbered_work(requests)
    results: list = []
    deadline = time.monotonic() + sizes.bound
    args = (url, shape, work, sentences, expected, deadline, results)
    threads = [threading.Thread(target=client, args=args) for _ in range(sizes.clients)]
    before = {**get_json(url, "/health")[1], "cpu": cpu_seconds(service.pid)}
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    after = {**get_json(url, "/health")[1], "cpu": cpu_seconds(service.pid)}
    phase.add(requests, seconds, results, before, after)


@contextlib.contextmanager
def attacked(url: str, sizes: Sizes, stats: Counter):
    """This script with --attack in another process (so that its work does not slow this
    process's clients down), from the moment its idle connections are open; its counts
    added to `stats` when it stops."""
    attacker = subprocess.Popen(
        [sys.executable, __file__, "--attack", url, "--idle", str(sizes.idle),
         "--poison-pause", str(sizes.poison_pause)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    with attacker:
        if attacker.stdout.readline().strip() != "ready":
            attacker.kill()
            sys.exit(f"the attacker did not start (exit code {attacker.wait()})")
        try:
            yield
        finally:
            attacker.stdin.close()  # its signal to stop
            report = attacker.stdout.read()
            attacker.wait(timeout=HANG)
    if attacker.returncode != 0:
        sys.exit(f"the attacker failed (exit code {attacker.returncode})")
    stats.update(json.loads(report))


def engine_loads(
    service: Service, label: str, shapes: list[Shape], sentences, expected, sizes: Sizes
) -> dict:
    """Warm-up; rounds of calm then attack with our requests; the other shapes, calm."""
    others = [make_shape(service.url) for make_shape in shapes]  # a missing API stops here
    run_load(service, OURS, sentences, expected, 2 * sizes.clients, sizes, Phase())
    calm, attack = Phase(), Phase(attack=Counter())
    for _ in range(sizes.rounds):
        run_load(service, OURS, sentences, expected, sizes.requests, sizes, calm)
        with attacked(service.url, sizes, attack.attack):
            run_load(service, OURS, sentences, expected, sizes.requests, sizes, attack)
    figures = {**calm.figures(label), **attack.figures(f"{label}_attack")}
    p99 = f"serve_{label}_latency_p99_ms"
    attack_p99 = figures[f"serve_{label}_attack_latency_p99_ms"]
    figures[f"serve_{label}_p99_attack_vs_calm"] = attack_p99 / figures[p99]
    for shape in others:
        phase = Phase()
        for _ in range(sizes.rounds):
            run_load(service, shape, sentences, expected, sizes.requests, sizes, phase)
        figures.update(phase.figures(f"{label}_{shape.name}"))
    return figures


def load_check(
    checkpoint: Path,
    source: Path,
    quick: bool,
    config: str = DEFAULT_CONFIG,
) -> dict:
    sizes = Sizes.of(quick)
    shapes = [libretranslate_shape]
    needed = sizes.idle + sizes.clients + 1024  # the rest: libraries, logs, margin
    hard = allow_files(needed)  # the server and the attacker inherit it
    if hard is not None:
        sys.exit(f"the load check needs {needed} open files; the hard limit is {hard} (ulimit -Hn)")
    most = sizes.idle + sizes.clients + 64
    overrides = [
        f"serve.max_connections={most}",
        f"serve.max_client_connections={most}",  # all from 127.0.0.1
        f"serve.timeout_s={TIMEOUT_S}",
    ]
    sentences = source.read_text(encoding="utf-8").splitlines()
    torch = ["--engine", "torch", "--checkpoint", str(checkpoint)]
    command_seconds, expected = timed_command(source, *torch)
    in_process_seconds = timed_in_process(checkpoint, sentences)
    figures: dict = {
        "serve_requests": sizes.requests,
        "serve_clients": sizes.clients,
        "serve_rounds": sizes.rounds,
        "serve_idle_connections": sizes.idle,
    }
    with running_server(torch, config, overrides) as service:
        figures.update(engine_loads(service, "torch", shapes, sentences, expected, sizes))
    figures.update(ctranslate2_loads(checkpoint, source, config, overrides, shapes, sizes))

    rate = figures["serve_torch_requests_per_s"]
    command_rate = len(sentences) / command_seconds
    in_process_rate = len(sentences) / in_process_seconds
    if "serve_ctranslate2_requests_per_s" in figures:
        figures["serve_ctranslate2_vs_torch"] = figures["serve_ctranslate2_requests_per_s"] / rate
    failed = [key for key in figures if key.endswith("_failed")]
    torch_mismatched = [key for key in figures if re.fullmatch(r"serve_torch\w*_mismatched", key)]
    return {
        **figures,
        "serve_failed": sum(figures[key] for key in failed),
        "serve_mismatched": sum(figures[key] for key in torch_mismatched),
        "serve_translate_command_sentences_per_s": command_rate,
        "serve_translate_in_process_sentences_per_s": in_process_rate,
        "serve_vs_translate_command": rate / command_rate,
        "serve_vs_translate_in_process": rate / in_process_rate,
    }


def ctranslate2_loads(checkpoint: Path, source: Path, config: str, overrides, shapes, sizes):
    """The same loads with the checkpoint exported to CTranslate2, its answers checked against
    translate --engine ctranslate2's; nothing if the ctranslate2 package is missing."""
    try:
        import ctranslate2  # noqa: F401
    except ImportError:
        print(
            "ctranslate2 not installed: the service's CTranslate2 figures are skipped", flush=True
        )
        return {}
    from seq2seq.checkpoint import load_checkpoint
    from seq2seq.exports.ctranslate2 import export_ctranslate2

    sentences = source.read_text(encoding="utf-8").splitlines()
    with tempfile.TemporaryDirectory() as folder:
        exported = Path(folder) / "ct2"
        export_ctranslate2(load_checkpoint(checkpoint), exported)
        engine = ["--engine", "ctranslate2", "--model", str(exported)]
        _, expected = timed_command(source, *engine)
        with running_server(engine, config, overrides) as service:
            return engine_loads(service, "ctranslate2", shapes, sentences, expected, sizes)


# The attacker: python benchmarks/serve_load.py --attack URL --idle N, until its stdin closes.

POISON = (  # (what, body, the status expected)
    ("lone surrogate", json.dumps({"text": ["\ud800"]}).encode(), 400),
    ("malformed JSON", b'{"text": ["three is', 400),
)


def attack(url: str, idle: int, poison_pause: float) -> None:
    """Hold `idle` idle connections and send poison until stdin closes; print "ready" once
    they are open and the first poison is answered, then at the end the counts as JSON."""
    stats: Counter = Counter()
    stop, ready = threading.Event(), threading.Event()
    host, port = urlsplit(url).hostname, urlsplit(url).port
    holder = threading.Thread(
        target=hold_idle, args=((host, port), idle, stop, ready, stats), daemon=True
    )  # a daemon: should this thread fail, the process still ends
    holder.start()
    ready.wait()
    status, info = get_json(url, "/info")
    if status != 200:
        sys.exit(f"the attacker's GET /info was answered {status}: {info}")
    oversized = b'{"text": ["' + b"x" * info["serve"]["max_body_bytes"] + b'"]}'
    poison = [*POISON, ("oversized body", oversized, 413)]
    poisoner = threading.Thread(target=send_poison, args=(url, poison, poison_pause, stop, stats))
    poisoner.start()
    deadline = time.monotonic() + HANG
    while not (stats["poison_as_expected"] or stats["poison_otherwise"]):
        if time.monotonic() > deadline:
            sys.exit("the service did not answer the poison")
        time.sleep(0.01)
    print("ready", flush=True)
    sys.stdin.read()
    stop.set()
    holder.join()
    poisoner.join()
    print(json.dumps(stats), flush=True)


def hold_idle(address, count: int, stop, ready, stats: Counter) -> None:
    """`count` connections that send nothing (the even ones) or trickle a never-ending header
    (the odd ones), each re-opened when the server closes it."""
    selector = selectors.DefaultSelector()
    sockets: list = [None] * count
    sent = [0] * count  # bytes trickled on each

    def open_connection(i: int) -> None:
        connection = socket.create_connection(address, timeout=HANG)
        connection.setblocking(False)
        selector.register(connection, selectors.EVENT_READ, i)
        sockets[i], sent[i] = connection, 0

    for i in range(count):
        open_connection(i)
    ready.set()
    next_trickle = time.monotonic()
    while not stop.is_set():
        for key, _ in selector.select(timeout=0.1):
            try:
                closed = key.fileobj.recv(65536) == b""  # else an answer (408, 400): dropped
            except OSError:
                closed = True
            if closed:
                selector.unregister(key.fileobj)
                key.fileobj.close()
                open_connection(key.data)
                stats["idle_reopened"] += 1
        if time.monotonic() >= next_trickle:
            next_trickle += TRICKLE_EVERY
            for i in range(1, count, 2):
                byte = TRICKLE[sent[i] : sent[i] + 1] or b"x"
                with contextlib.suppress(OSError):  # closed: the selector sees it
                    sent[i] += sockets[i].send(byte)
    for connection in sockets:
        connection.close()


def send_poison(url: str, poison, pause: float, stop, stats: Counter) -> None:
    """Each request of `poison` in turn on one keep-alive connection (a new one when the
    server closes it), until `stop`."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    headers = {"Content-Type": "application/json"}
    turn = 0
    while not stop.is_set():
        _, body, status = poison[turn % len(poison)]
        turn += 1
        try:
            connection.request("POST", "/translate", body, headers)
            response = connection.getresponse()
            response.read()
            stats["poison_as_expected" if response.status == status else "poison_otherwise"] += 1
        except (OSError, http.client.HTTPException):
            connection.close()
            stats["poison_otherwise"] += 1
        time.sleep(pause)
    connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 requests from 8 clients")
    parser.add_argument("--config", default=DEFAULT_CONFIG)
    parser.add_argument("--checkpoint", help="default: the config's best.pt")
    parser.add_argument("--attack", metavar="URL", help=argparse.SUPPRESS)  # the attacker
    parser.add_argument("--idle", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--poison-pause", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.attack:
        attack(args.attack, args.idle, args.poison_pause)
        return
    config = load_config(args.config)
    checkpoint = Path(args.checkpoint or config.checkpoint_path)
    source = text_files(config.data_dir, "test")[0]
    figures = load_check(checkpoint, source, args.quick, args.config)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
