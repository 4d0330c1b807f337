"""The translation service under load, calm and under attack, with both engines.

    python -m benchmarks.service.load [--quick] [--checkpoint runs/numbers/best.pt] [--config FILE]
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
           attack    the same, while another process (attack.py) holds
                     1,000 idle connections (50 in quick mode; half silent, half trickling
                     a header a byte every 0.5 s, each re-opened as soon as the server closes
                     it) and one client sends poison in a loop, each request after the
                     answer to the last: a lone surrogate sentence (400), malformed JSON
                     (400), a body of serve.max_body_bytes + 1 bytes (413)
         two rounds of calm then attack (one in quick mode), after a warm-up; each phase's
         figures pool its rounds
      -> per engine and phase, the figures of the load harness (harness.py): requests/s,
         p50, p99, failed, unlike (not the command's line for that sentence), sentences per
         batch, the server's CPU ms per request; poison answered as expected, and otherwise;
         idle connections re-opened
      -> serve_failed: the sum over every load; serve_unlike: over the torch engine's
         (both must be 0, and so must serve_ctranslate2_*unlike)

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
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import ROOT, arguments, run, timed_translation
from benchmarks.service.clients import Shape, libretranslate_shape, run_load
from benchmarks.service.harness import Load
from benchmarks.service.process import HANG, Service, running_server
from seq2seq.config import DEFAULT_CONFIG, load_config
from seq2seq.serving.protocol import allow_files
from seq2seq.support.paths import text_files

TIMEOUT_S = 2.0  # the server's serve.timeout_s in the load check (see above)


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


def timed_command(source: Path, *args: str) -> tuple[float, list[str]]:
    """Wall seconds of `python -m seq2seq.translate args < source`, and its output lines."""
    ran = run([sys.executable, "-m", "seq2seq.translate", *args], stdin=source)
    return ran.seconds, ran.stdout.splitlines()


def timed_in_process(checkpoint: Path, sentences: list[str]) -> float:
    from seq2seq.checkpoint import load_checkpoint  # torch: not in the attacker's process
    from seq2seq.decoding.engines import TorchEngine

    engine = TorchEngine(load_checkpoint(checkpoint))
    return timed_translation(engine.translate, sentences, engine.config.decode)[0]


@contextlib.contextmanager
def attacked(url: str, sizes: Sizes, stats: Counter):
    """The attacker (attack.py) in another process, so that its work does not slow this
    process's clients down, from the moment its idle connections are open; its counts added
    to `stats` when it stops."""
    attacker = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.service.attack", url, "--idle", str(sizes.idle),
         "--poison-pause", str(sizes.poison_pause)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
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


def engine_loads(service: Service, label: str, sentences, expected, sizes: Sizes) -> dict:
    """Warm-up; rounds of our requests calm and under attack, and of LibreTranslate's, calm."""
    ours, theirs = Shape.ours(), libretranslate_shape(service.url)  # a missing API stops here
    loads = {"": Load(), "_attack": Load(attack=Counter()), "_libretranslate": Load()}

    def send(shape: Shape, load: Load, requests: int = sizes.requests) -> None:
        clients, bound = sizes.clients, sizes.bound
        load.add(run_load(service, shape, sentences, expected, requests, clients, bound=bound))

    send(ours, Load(), 2 * sizes.clients)  # warm-up
    for _ in range(sizes.rounds):
        send(ours, loads[""])
        with attacked(service.url, sizes, loads["_attack"].attack):
            send(ours, loads["_attack"])
        send(theirs, loads["_libretranslate"])
    figures = {
        f"serve_{label}{kind}_{key}": value
        for kind, load in loads.items()
        for key, value in load.figures().items()
    }
    calm, attack = figures[f"serve_{label}_p99_ms"], figures[f"serve_{label}_attack_p99_ms"]
    figures[f"serve_{label}_p99_attack_vs_calm"] = attack / calm
    return figures


def load_check(
    checkpoint: Path,
    source: Path,
    quick: bool,
    config: str = DEFAULT_CONFIG,
) -> dict:
    sizes = Sizes.of(quick)
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
    in_process_seconds = timed_in_process(checkpoint, sentences)
    figures: dict = {
        "serve_requests": sizes.requests,
        "serve_clients": sizes.clients,
        "serve_rounds": sizes.rounds,
        "serve_idle_connections": sizes.idle,
    }
    commands = {}  # each engine's translate command's seconds
    with tempfile.TemporaryDirectory() as folder:
        for label, engine in engines(checkpoint, Path(folder)).items():
            commands[label], expected = timed_command(source, *engine)
            with running_server(engine, config, overrides) as service:
                figures.update(engine_loads(service, label, sentences, expected, sizes))
    rate = figures["serve_torch_requests_per_s"]
    command_rate = len(sentences) / commands["torch"]
    in_process_rate = len(sentences) / in_process_seconds
    if "serve_ctranslate2_requests_per_s" in figures:
        figures["serve_ctranslate2_vs_torch"] = figures["serve_ctranslate2_requests_per_s"] / rate
    failed = [key for key in figures if key.endswith("_failed")]
    torch_unlike = [key for key in figures if re.fullmatch(r"serve_torch\w*_unlike", key)]
    return {
        **figures,
        "serve_failed": sum(figures[key] for key in failed),
        "serve_unlike": sum(figures[key] for key in torch_unlike),
        "serve_translate_command_sentences_per_s": command_rate,
        "serve_translate_in_process_sentences_per_s": in_process_rate,
        "serve_vs_translate_command": rate / command_rate,
        "serve_vs_translate_in_process": rate / in_process_rate,
    }


def engines(checkpoint: Path, folder: Path) -> dict[str, list[str]]:
    """Each engine's arguments, for translate and serve: torch's, and CTranslate2's on the
    checkpoint exported into `folder` (none if the ctranslate2 package is missing: said)."""
    torch = {"torch": ["--engine", "torch", "--checkpoint", str(checkpoint)]}
    try:
        import ctranslate2  # noqa: F401
    except ImportError:
        print("ctranslate2 not installed: the service's CTranslate2 figures are skipped",
              flush=True)  # fmt: skip
        return torch
    from seq2seq.checkpoint import load_checkpoint
    from seq2seq.exports.ctranslate2 import export_ctranslate2

    export_ctranslate2(load_checkpoint(checkpoint), folder / "ct2")
    return {**torch, "ctranslate2": ["--engine", "ctranslate2", "--model", str(folder / "ct2")]}


def with_checkpoint(parser: argparse.ArgumentParser) -> tuple[argparse.Namespace, Path, Path]:
    """The command line of `parser` with --checkpoint, parsed; the checkpoint (default: the
    config's best.pt) and the config's test source."""
    parser.add_argument("--checkpoint", help="default: the config's best.pt")
    args = parser.parse_args()
    config = load_config(args.config)
    checkpoint = Path(args.checkpoint or config.checkpoint_path)
    return args, checkpoint, text_files(config.data_dir, "test")[0]


def main() -> None:
    parser = arguments(__doc__, config=DEFAULT_CONFIG, quick="100 requests from 8 clients")
    args, checkpoint, source = with_checkpoint(parser)
    figures = load_check(checkpoint, source, args.quick, args.config)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
