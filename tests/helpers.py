"""What the tests that start other processes, or the translation service, share.

No test may assume how fast the machine is (one machine imports torch in 0.5 s, another in
4 s). A test waits for an event instead: a file appears, a checkpoint's step moves on, a process
ends. The one deadline, HANG, is there only so that a hung process fails its test rather than
the whole CI run, and is long enough for the slowest machine.
"""

import copy
import dataclasses
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from urllib.error import HTTPError
from urllib.parse import urlsplit

import numpy as np
import pytest
import torch

from benchmarks.service.process import HANG, address, family  # HANG: hung, not slow
from seq2seq.checkpoint import Checkpoint
from seq2seq.config import Config, load_config
from seq2seq.decoding.batches import search_sources
from seq2seq.decoding.greedy import max_lengths
from seq2seq.decoding.repeats import repeated_ngrams
from seq2seq.model.transformer import Transformer
from seq2seq.support.device import pick_device
from seq2seq.tokens.batching import pair_tensors, source_tensor, token_batches
from seq2seq.tokens.special import BOS, EOS, PAD, non_output_logits
from seq2seq.tokens.vocab import Vocab, normalize_source, train_vocab
from seq2seq.training.distributed import World
from seq2seq.training.loss import batch_loss
from seq2seq.training.optimizer import make_optimizer
from seq2seq.training.run import Run, set_up

ROOT = Path(__file__).resolve().parent.parent
# seconds: a wait for what takes a fraction of a second (an answer, a swap) fails after it
SOON = 60

# the project's code, whatever the current directory, before any PYTHONPATH given (packages
# installed apart, as on a lent GPU machine); a subprocess of a test never needs more than one
# thread, and with one it competes less with the test that waits for it
ENV = dict(
    os.environ,
    PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    OMP_NUM_THREADS="1",
)


def command(module: str, *args: str) -> list[str]:
    """`python -m module args...` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def wait_until(
    condition: Callable[[], bool], what: str, process=None, timeout: float = SOON
) -> float:
    """Poll `condition()` every 20 ms until it is true; returns the seconds waited. Fails if
    `process` (a subprocess.Popen) ends first, with its output, or after `timeout` seconds
    (SOON: what takes a fraction of a second; HANG for what trains)."""
    start = time.monotonic()
    while not condition():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the process ended before {what}: {process.communicate()}")
        if time.monotonic() - start > timeout:
            raise AssertionError(f"hung: still no {what} after {timeout:g} s")
        time.sleep(0.02)
    return time.monotonic() - start


# The device the suite's training runs pick: they keep train.device: auto, unless a test checks
# what only the CPU does and says train.device=cpu.
TRAINING_DEVICE = pick_device("auto").type
# CUDA kernels do not promise the same bits from run to run (atomic additions in another
# order), and Adam turns last-bit noise into updates as large as the learning rate where a
# gradient is about 0: two runs that should be the same agree to this on a GPU.
GPU_TOLERANCE = 5e-2


def assert_same_parameters(actual: dict, expected: dict) -> None:
    """Two training runs that should be the same: bit for bit on the CPU, within
    GPU_TOLERANCE on a GPU."""
    assert actual.keys() == expected.keys()
    for name, tensor in actual.items():
        if TRAINING_DEVICE == "cpu":
            assert torch.equal(tensor, expected[name]), name
        else:
            torch.testing.assert_close(tensor, expected[name], rtol=0, atol=GPU_TOLERANCE, msg=name)


def damage(checkpoint: Path, count: int = 256) -> None:
    """Write `count` bytes of 0xff over the stored bytes of a checkpoint's largest weight, as a
    failing disk or a bad copy would: the file still loads as a zip and a pickle."""
    weights = torch.load(checkpoint, weights_only=True)["model"]
    largest = max(weights.values(), key=lambda w: w.numel()).contiguous()
    data = bytearray(checkpoint.read_bytes())
    at = data.find(largest.view(-1).view(torch.uint8).numpy().tobytes())
    assert at >= 0, "the weight's bytes are not stored as they are in memory"
    data[at : at + count] = b"\xff" * count
    checkpoint.write_bytes(bytes(data))


def same_figures(expected: list[float]) -> object:
    """What the figures of a run that should be the same must equal: these on the CPU,
    figures within GPU_TOLERANCE of them on a GPU."""
    return expected if TRAINING_DEVICE == "cpu" else pytest.approx(expected, rel=GPU_TOLERANCE)


def seed_preset_run(seed_run: Path, monkeypatch, *overrides: str) -> Run:
    """A fresh run of the seed preset (nine pairs, a tiny model without dropout) on the CPU in
    fp32 (auto would be bf16 on some CPUs), on the corpus the `seed_run` fixture built."""
    monkeypatch.chdir(seed_run.parent.parent)
    config = load_config("config.yaml", ["train.device=cpu", "train.precision=fp32", *overrides])
    return set_up(config, World(), torch.device("cpu"))


def briefly_trained(config: Config, pairs: list[tuple[str, str]], epochs: int = 8) -> Checkpoint:
    """A model trained for a few seconds on `pairs` (batches of 1,000 tokens), with the
    vocabularies config.vocab asks for (joint or separate; the source normalised): far from
    right, but its outputs vary in content and length."""
    torch.manual_seed(0)
    settings, sources = config.vocab, [s for s, _ in pairs]
    targets = [t for _, t in pairs]
    normalized = [normalize_source(s, settings) for s in sources]
    if settings.joint:
        src_vocab = tgt_vocab = train_vocab(normalized + targets, settings.src_size, settings)
    else:
        src_vocab = train_vocab(normalized, settings.src_size, settings)
        tgt_vocab = train_vocab(targets, settings.tgt_size, settings)
    src_vocab = Vocab(src_vocab.model_bytes, settings)  # normalises what it encodes
    model = Transformer(config.model, len(src_vocab), len(tgt_vocab), pad_id=PAD)
    optimizer = make_optimizer(model, config.train)
    source_ids, target_ids = src_vocab.encode(sources), tgt_vocab.encode(targets)
    lengths = [np.array([len(ids) for ids in side]) for side in (source_ids, target_ids)]
    for _ in range(epochs):
        for indices in token_batches(*lengths, 1000, np.random.default_rng(0)):
            batch = pair_tensors([source_ids[i] for i in indices], [target_ids[i] for i in indices])
            loss = batch_loss(model, batch, 0.1)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return Checkpoint(config, model.eval(), src_vocab, tgt_vocab, {})


# Outputs of two engines or code paths that compute the same model (CTranslate2, transformers,
# Argos Translate; the cache or the whole prefix; one batch or another) differ where the model
# hesitates: both sum the same products in another order (other kernels, another CPU, another
# thread count), round differently in the last bits, and where the reference's two best next
# tokens are that close, the argmax may go either way. A barely trained model hesitates often.
# Such a test accepts a difference only if it is such a tie: at the first step where two
# outputs differ, the two tokens chosen are the reference model's two best, and their
# log-probabilities (float64, by teacher forcing) are within TIE of each other. Float32 engines
# agree on these models' logits to about 1e-5 (test_huggingface.test_logits_are_ours); any real
# mistake (a wrong weight, a wrong position) moves them by far more than TIE.
TIE = 1e-3


class Recording:
    """A CTranslate2 translator that keeps the tokens and options of each translate_batch
    call, in order."""

    def __init__(self, translator):
        self.translator, self.calls = translator, []

    def translate_batch(self, tokens, **options):
        self.calls.append((tokens, options))
        return self.translator.translate_batch(tokens, **options)

    def __getattr__(self, name):
        return getattr(self.translator, name)


def greedy_ids(checkpoint: Checkpoint, sentences: list[str], **decode) -> list[list[int]]:
    """Our output ids for `sentences` (greedy, float32, with the cache unless `decode` says
    otherwise; no BOS or EOS), in their order."""
    decoding = dataclasses.replace(checkpoint.config.decode, beam_size=1, precision="fp32")
    decoding = dataclasses.replace(decoding, **decode)
    sources = checkpoint.src_vocab.encode(sentences)
    return [output.ids for output in search_sources(checkpoint.model, sources, decoding)]


def length_limits(checkpoint: Checkpoint, sentences: list[str]) -> list[int]:
    """Each sentence's longest output in pieces, as our decoding sets it."""
    model = checkpoint.model
    sources = [ids[: model.cfg.longest_source] for ids in checkpoint.src_vocab.encode(sentences)]
    return max_lengths(model, source_tensor(sources), checkpoint.config.decode).tolist()


def assert_same_or_tied(
    checkpoint: Checkpoint,
    sentences: list[str],
    expected: list,
    actual: list,
    no_repeat: int | None = None,
) -> int:
    """`expected`: the reference's outputs of `sentences`, `actual`: another engine's or code
    path's, each a list of ids or a text, both decoded with decode.no_repeat_ngram `no_repeat`
    (None: the checkpoint's). Every pair is equal, or differs first at a tie (TIE), or the
    reference stopped at its length limit (max_len_a * source length + max_len_b) where the
    other went on. -> how many pairs differ."""
    if no_repeat is None:
        no_repeat = checkpoint.config.decode.no_repeat_ngram
    model = copy.deepcopy(checkpoint.model).double().eval()
    sources = checkpoint.src_vocab.encode(sentences)
    differ = 0
    for sentence, source, ours, theirs in zip(sentences, sources, expected, actual, strict=True):
        if ours == theirs:
            continue
        differ += 1
        ours, theirs = (checkpoint.tgt_vocab.encode([o])[0] if isinstance(o, str) else o
                        for o in (ours, theirs))  # fmt: skip
        limit = int(max_lengths(model, source_tensor([source]), checkpoint.config.decode)[0])
        if len(ours) == limit and theirs[:limit] == ours:
            continue  # ours stopped at its own limit; Argos's calls, HF's generate have none
        ours, theirs = ours + [EOS], theirs + [EOS]
        step = next(i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b)
        source, prefix = source[: model.cfg.longest_source], ours[:step]
        log_probs = next_token_log_probs(model, source, prefix, no_repeat)
        best = log_probs.topk(2)
        chosen = {ours[step], theirs[step]}
        gap = float(best.values[0] - best.values[1])
        assert chosen == set(best.indices.tolist()) and gap <= TIE, (
            f"{sentence!r}: not a tie at step {step}: ours {ours[step]}, theirs {theirs[step]}; "
            f"the model's two best {best.indices.tolist()}, {gap:.2e} apart"
        )
    return differ


@torch.inference_mode()
def next_token_log_probs(
    model: Transformer, source: list[int], prefix: list[int], no_repeat: int = 0
) -> torch.Tensor:
    """log P(next token | source, prefix) by teacher forcing: (V,), in the model's dtype, with
    the tokens never output (PAD, BOS) at -inf, as decoding has them, and with no_repeat > 0
    those that would repeat a no_repeat-gram of the prefix."""
    src, tgt_in = source_tensor([source]), torch.tensor([[BOS, *prefix]])
    logits = model(src, tgt_in)[0, -1]  # (V,)
    logits = logits + non_output_logits(logits, logits.size(0))
    if no_repeat:
        banned = repeated_ngrams(torch.tensor([prefix], dtype=torch.long), no_repeat, len(logits))
        logits = logits.masked_fill(banned[0], float("-inf"))
    return torch.log_softmax(logits, dim=-1)


# The translation service (tests/service/).


@contextmanager
def running(model, **settings) -> Iterator:
    """A seq2seq.service.server.Server on a free port of 127.0.0.1, answering from a thread of
    this process."""
    from seq2seq.config import ServeConfig
    from seq2seq.service.server import Server

    models = model if isinstance(model, list) else [model]
    server = Server(models, ServeConfig(port=0, **settings))
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        wait_until(lambda: server.started, "the server to start")
        yield server
    finally:
        server.should_exit = True
        thread.join()
        server.close()


JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def call(url: str, method: str, path: str, body=None, headers=JSON) -> tuple[int, dict, dict]:
    """-> status, the JSON answer, the headers. `body`: bytes as they are, anything else as
    JSON."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
    connection.request(method, path, body, headers)
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    return response.status, answer, response.headers


METERED = 60  # the characters a month of tests/service/conftest.py's key `metered`


def ours(url: str, texts: list[str], key: str = "first") -> list[str]:
    """The texts' translations by our API (POST /translate with this key), what a client of
    another API (DeepL's: tests/service/conftest.py's `url`) must answer the same."""
    bearer = {**JSON, "Authorization": f"Bearer {key}"}
    status, answer, _ = call(url, "POST", "/translate", {"text": texts}, bearer)
    assert status == 200, answer
    return answer["translations"]


def start_server(*args: str, **popen) -> subprocess.Popen:
    """`python -m seq2seq.serve args --port 0` started (Popen's `popen` arguments), its stderr
    piped as text: read_address gives its URL; stop_server (benchmarks/service/process.py), as
    every test's server process, stops it."""
    return subprocess.Popen(
        command("seq2seq.serve", *args, "--port", "0"),
        **{"stderr": subprocess.PIPE, "text": True, "env": ENV, **popen},
    )


def read_address(process: subprocess.Popen) -> str:
    """The URL of the `serving ... at URL` line a started server prints on stderr, the lines
    before it (a first measure of the compute types, say) passed over."""
    lines = []

    def read() -> None:
        for line in process.stderr:
            lines.append(line)
            if address(line):
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=HANG)
    url = address(lines[-1] if lines else "")
    assert url, f"no address in {lines}"
    return url


def spawned_workers(pid: int) -> set[int]:
    """The worker processes of the service `pid` (spawned by multiprocessing) still running."""
    return {p for p in family(pid) if p != pid and b"spawn_main" in command_line(p)}


def command_line(pid: int) -> bytes:
    """The command line of a process; empty once it has ended (a worker may die between the
    listing of /proc and this read)."""
    with suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    return b""


def start_workers(seed_run: Path, *overrides: str) -> tuple[subprocess.Popen, str]:
    """The service with serve.workers=2 (and these config overrides), started; and its URL."""
    process = start_server("--checkpoint", str(seed_run / "best.pt"), "serve.workers=2", *overrides)
    return process, read_address(process)


# Documents (tests/documents/test_documents.py, tests/service/test_translate_file.py).


# Raw HTTP/1.1 on a socket, as a sloppy or hostile client writes it (tests/service/
# test_serve_attacks.py, tests/serving/test_edge.py).


def host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname, parts.port


def raw(url: str, request: bytes) -> socket.socket:
    """A connection that sent `request` as it is."""
    connection = socket.create_connection(host_port(url), timeout=HANG)
    connection.sendall(request)
    return connection


def post(body: bytes, *headers: bytes) -> bytes:
    lines = [
        b"POST /translate HTTP/1.1",
        b"Host: 127.0.0.1",
        b"Content-Type: application/json",
        *headers,
    ]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def answer_of(connection: socket.socket) -> tuple[int, dict]:
    """The status and JSON of the one answer on a raw connection, which the server closes."""
    data = b""
    while chunk := connection.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def failure(call, *args) -> tuple[int, dict]:
    """The status and JSON error of a libretranslatepy call that fails."""
    with pytest.raises(HTTPError) as raised:
        call(*args)
    return raised.value.code, json.loads(raised.value.read())
