"""A translation service: the trained model, loaded once, answering HTTP, and a page to try it.

    python -m seq2seq.serve [--config FILE] [--checkpoint PATH] [--host H] [--port P] [key=value]

    POST /translate  {"text": ["three is three"], "beam_size": 1, "nbest": 2}  (both optional)
                     -> {"translations": [...], "warnings": [...]}, what translate prints
    POST /attention  {"text": "three is three"} -> the translation, and the attention weights
                     of every layer and head with their tokens (seq2seq/attention_maps.py)
    GET  /health, /info (model, vocabularies, config, limits), / (the page, seq2seq/static/)

A request's way through the server:

    handler thread (one per connection)    reads and checks the JSON; a mistake -> 4xx
      -> Job(sentences, options, future) -> queue
    decoder thread (the only one that runs torch)
      the first job, then those that arrive within serve.batch_window_ms, up to
      serve.max_batch_sentences sentences -> grouped by options (beam_size, nbest)
      -> one translate() / translate_nbest() call per group -> each job its own slice
    handler thread <- future                -> 200 {"translations": ..., "warnings": ...}

So concurrent small requests share a batch, and each gets what `python -m seq2seq.translate`
gives for its sentences: the same translations (one line each), the n-best with their scores,
the same warnings ("line N" is the Nth sentence of the request). A mistake in a request is a
4xx with {"error": "..."} naming it; a failure while decoding is a 500, and the server goes on.
The limits and the address come from the config's `serve` section; it listens on 127.0.0.1
(this machine only) unless told otherwise. Ctrl-C or SIGTERM stops it.
"""

import dataclasses
import difflib
import json
import queue
import signal
import sys
import threading
import time
import traceback
from concurrent.futures import Future
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from urllib.parse import urlsplit

import torch

from seq2seq.attention_maps import Attention, attention_maps
from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import ServeConfig, add_config_arguments, load_config
from seq2seq.device import pick_device
from seq2seq.errors import Interrupted, UserError, command_parser, run_cli
from seq2seq.translate import TorchModel, input_warnings, one_line

STATIC = {"/": "index.html", "/style.css": "style.css", "/app.js": "app.js"}
CONTENT_TYPES = {"html": "text/html", "css": "text/css", "js": "text/javascript"}


class HTTPError(Exception):
    """A request the server will not answer: the status code and what is wrong."""

    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.headers = status, headers or {}


CLOSE = {"Connection": "close"}  # for errors that leave the body unread: the connection ends


@dataclasses.dataclass(frozen=True)
class Options:
    """How a /translate request is decoded: the jobs of a batch are grouped by these."""

    beam_size: int
    nbest: int | None  # None: the best translation only, as text


@dataclasses.dataclass(eq=False)
class Job:
    """One request's work for the decoder thread; its future receives the response."""

    sentences: list[str]
    options: Options | None  # None: the attention of the one sentence
    future: Future = dataclasses.field(default_factory=Future)


STOP = Job([], None)  # put on the queue, it ends the decoder thread


class Decoder:
    """The one thread that runs the model, a batch at a time."""

    def __init__(self, model: TorchModel, settings: ServeConfig):
        self.model, self.settings = model, settings
        self.jobs: queue.Queue[Job] = queue.Queue()
        self.requests = self.batches = self.sentences = 0  # so far, for /health
        self.thread = threading.Thread(target=self.run, name="decoder", daemon=True)
        self.thread.start()

    def submit(self, job: Job) -> dict:
        """Wait for the job's response (from a handler thread)."""
        self.jobs.put(job)
        return job.future.result()

    def stop(self) -> None:
        self.jobs.put(STOP)
        self.thread.join()

    def run(self) -> None:
        job = self.jobs.get()
        while job is not STOP:
            batch, job = self.collect(job)  # job: the one that starts the next batch, if any
            self.decode(batch)
            job = job or self.jobs.get()

    def collect(self, first: Job) -> tuple[list[Job], Job | None]:
        """`first` and the jobs that arrive within the window after it, up to the batch's
        sentences; and a job that did not fit (or STOP), which starts the next batch."""
        batch, size = [first], len(first.sentences)
        deadline = time.monotonic() + self.settings.batch_window_ms / 1000
        while size < self.settings.max_batch_sentences:
            try:
                job = self.jobs.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if job is STOP or size + len(job.sentences) > self.settings.max_batch_sentences:
                return batch, job
            batch.append(job)
            size += len(job.sentences)
        return batch, None

    def decode(self, batch: list[Job]) -> None:
        """Each attention job on its own; the translation jobs, one decoding per options."""
        self.requests += len(batch)
        self.batches += 1
        self.sentences += sum(len(job.sentences) for job in batch)
        groups: dict[Options, list[Job]] = {}
        for job in batch:
            if job.options is None:
                settle([job], partial(self.attention, job.sentences[0]))
            else:
                groups.setdefault(job.options, []).append(job)
        for options, jobs in groups.items():
            settle(jobs, partial(self.translate, options, jobs))

    def translate(self, options: Options, jobs: list[Job]) -> list[dict]:
        sentences = [sentence for job in jobs for sentence in job.sentences]
        decode = dataclasses.replace(self.model.config.decode, beam_size=options.beam_size)
        if options.nbest is None:
            outputs = [one_line(text) for text in self.model.translate(sentences, decode)]
        else:
            nbest = self.model.translate_nbest(sentences, decode)
            outputs = [[hypothesis(*h) for h in best[: options.nbest]] for best in nbest]
        responses, start = [], 0
        for job in jobs:
            end = start + len(job.sentences)
            warnings = input_warnings(self.model, job.sentences)
            responses.append({"translations": outputs[start:end], "warnings": warnings})
            start = end
        return responses

    def attention(self, sentence: str) -> list[dict]:
        return [attention_json(attention_maps(self.model.checkpoint, sentence))]


def hypothesis(score: float, text: str) -> dict:
    return {"translation": one_line(text), "score": score}


def settle(jobs: list[Job], work) -> None:
    """Give each job its result of `work()`, or all of them its exception."""
    try:
        results = work()
    except Exception as error:
        for job in jobs:
            job.future.set_exception(error)
        return
    for job, result in zip(jobs, results, strict=True):
        job.future.set_result(result)


def attention_json(attention: Attention) -> dict:
    maps = [
        {
            "kind": m.kind,
            "layer": m.layer,
            "title": m.title,
            "queries": m.queries,
            "keys": m.keys,
            "weights": m.weights.double().round(decimals=4).tolist(),  # [head][query][key]
        }
        for m in attention.maps
    ]
    return {"translation": attention.translation, "warnings": attention.warnings, "maps": maps}


def json_body(data: dict) -> tuple[str, bytes]:
    return "application/json", json.dumps(data, ensure_ascii=False).encode()


def read_request(body: bytes, fields: tuple[str, ...]) -> dict:
    """The JSON object of a request body: only `fields`, and "text" among them."""
    try:
        request = json.loads(body)
    except ValueError as error:  # not JSON, or not UTF-8
        raise HTTPError(400, f"malformed JSON: {error}") from None
    if not isinstance(request, dict):
        raise HTTPError(400, 'the body must be a JSON object, like {"text": ...}')
    for key in request:
        if key not in fields:
            close = difflib.get_close_matches(key, fields, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise HTTPError(400, f"unknown field '{key}'{hint}; the fields: {', '.join(fields)}")
    if "text" not in request:
        raise HTTPError(400, "the field 'text' is missing")
    return request


def sentences_of(request: dict, limits: ServeConfig) -> list[str]:
    """/translate's "text": a list of sentences."""
    text = request["text"]
    if not isinstance(text, list) or not all(isinstance(sentence, str) for sentence in text):
        raise HTTPError(400, "'text' must be a list of strings (sentences)")
    if len(text) > limits.max_sentences:
        raise HTTPError(
            413,
            f"'text' has {len(text):,} sentences; the limit is {limits.max_sentences:,} "
            "(serve.max_sentences)",
        )
    for number, sentence in enumerate(text, 1):
        check_length(sentence, f"sentence {number}", limits)
    return text


def sentence_of(request: dict, limits: ServeConfig) -> str:
    """/attention's "text": one sentence."""
    text = request["text"]
    if not isinstance(text, str):
        raise HTTPError(400, "'text' must be a string (one sentence)")
    check_length(text, "'text'", limits)
    return text


def check_length(sentence: str, what: str, limits: ServeConfig) -> None:
    if len(sentence) > limits.max_chars:
        raise HTTPError(
            413,
            f"{what} has {len(sentence):,} characters; the limit is {limits.max_chars:,} "
            "(serve.max_chars)",
        )


def beam_field(request: dict, key: str, limits: ServeConfig) -> int | None:
    """beam_size or nbest: absent (None) or a number of beams within the limit."""
    value, most = request.get(key), limits.max_beam_size
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise HTTPError(
            400,
            f"'{key}' must be an integer from 1 to {most} (serve.max_beam_size), "
            f"got {json.dumps(value)}",
        )
    return value


def static_file(name: str) -> tuple[str, bytes]:
    content_type = CONTENT_TYPES[name.rpartition(".")[2]]
    return f"{content_type}; charset=utf-8", files("seq2seq").joinpath("static", name).read_bytes()


def model_info(model: TorchModel, settings: ServeConfig, path: str) -> dict:
    checkpoint = model.checkpoint
    config = checkpoint.config.to_dict()
    del config["serve"]  # as saved at training time; the settings in force are "serve" below
    vocabs = {"source": model.src_vocab, "target": checkpoint.tgt_vocab}
    return {
        "checkpoint": {"path": path, **checkpoint.info},  # the training step, valid scores
        "parameters": checkpoint.model.num_parameters(),
        "device": str(next(checkpoint.model.parameters()).device),
        "vocab": {
            side: {"size": len(vocab), "pieces": vocab.pieces(list(range(len(vocab))))}
            for side, vocab in vocabs.items()
        },
        "config": config,
        "serve": dataclasses.asdict(settings),
    }


class Server(ThreadingHTTPServer):
    """The HTTP server: its routes, the decoder thread, the page's files."""

    daemon_threads = True  # a connection's thread does not keep the process alive
    request_queue_size = 128  # connections waiting to be accepted (the default 5 drops some)

    def __init__(self, model: TorchModel, settings: ServeConfig, path: str):
        self.model, self.settings = model, settings
        self.info = model_info(model, settings, path)
        self.pages = {name: static_file(name) for name in STATIC.values()}
        # path -> method -> (the request body -> content type, response body)
        self.routes = {
            **{path: {"GET": partial(self.page, name)} for path, name in STATIC.items()},
            "/health": {"GET": self.health},
            "/info": {"GET": lambda body: json_body(self.info)},
            "/translate": {"POST": self.translate},
            "/attention": {"POST": self.attention},
        }
        try:
            super().__init__((settings.host, settings.port), Handler)
        except OSError as error:
            where = f"{settings.host}:{settings.port}"
            raise UserError(f"cannot listen on {where}: {error.strerror or error}") from None
        self.decoder = Decoder(model, settings)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/"

    def page(self, name: str, body: bytes) -> tuple[str, bytes]:
        return self.pages[name]

    def health(self, body: bytes) -> tuple[str, bytes]:
        decoder = self.decoder
        counts = {"requests": decoder.requests, "batches": decoder.batches}
        return json_body({"status": "ok", **counts, "sentences": decoder.sentences})

    def translate(self, body: bytes) -> tuple[str, bytes]:
        request = read_request(body, ("text", "beam_size", "nbest"))
        sentences = sentences_of(request, self.settings)
        beam_size = beam_field(request, "beam_size", self.settings)
        nbest = beam_field(request, "nbest", self.settings)
        beam_size = max(beam_size or self.model.config.decode.beam_size, nbest or 1)
        return json_body(self.decoder.submit(Job(sentences, Options(beam_size, nbest))))

    def attention(self, body: bytes) -> tuple[str, bytes]:
        sentence = sentence_of(read_request(body, ("text",)), self.settings)
        return json_body(self.decoder.submit(Job([sentence], None)))

    def handle_error(self, request, client_address) -> None:
        """A connection that broke (the client went away): one line, not a traceback."""
        print(f"warning: connection from {client_address[0]}: {sys.exc_info()[1]}", file=sys.stderr)

    def close(self) -> None:
        self.server_close()
        self.decoder.stop()


class Handler(BaseHTTPRequestHandler):
    """One connection: its requests, one after the other, each answered by a route."""

    protocol_version = "HTTP/1.1"  # keep-alive: many requests on one connection
    disable_nagle_algorithm = True  # send the body at once, not after the headers' ACK
    timeout = 60  # seconds a connection may stay silent before it is closed
    server: Server

    def do_GET(self) -> None:
        self.answer()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_GET  # wrong methods get a 405

    def answer(self) -> None:
        headers = {}
        try:
            body = self.read_body()  # first, so that an error leaves the connection usable
            content_type, data = self.route()(body)
            status = 200
        except Exception as error:
            status, headers = self.error_status(error)
            content_type, data = json_body({"error": str(error)})
        self.send_response(status)
        for name, value in {"Content-Type": content_type, **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def read_body(self) -> bytes:
        if "Transfer-Encoding" in self.headers:
            raise HTTPError(411, "send the body with a Content-Length, not chunked", CLOSE)
        length = self.headers.get("Content-Length", "0")
        if not (length.isascii() and length.isdigit()):
            raise HTTPError(400, f"Content-Length {length!r} is not a number of bytes", CLOSE)
        limit = self.server.settings.max_body_bytes
        if int(length) > limit:
            raise HTTPError(
                413,
                f"the body has {int(length):,} bytes; the limit is {limit:,} "
                "(serve.max_body_bytes)",
                CLOSE,
            )
        try:
            return self.rfile.read(int(length))
        except TimeoutError:
            raise HTTPError(408, "the body did not arrive in time", CLOSE) from None

    def route(self):
        path, routes = urlsplit(self.path).path, self.server.routes
        if path not in routes:
            known = ", ".join(
                f"{method} {p}" for p, methods in routes.items() for method in methods
            )
            raise HTTPError(404, f"no {path} here; there are {known}")
        methods = routes[path]
        if self.command not in methods:
            allowed = ", ".join(methods)
            raise HTTPError(405, f"{path} takes {allowed}, not {self.command}", {"Allow": allowed})
        return methods[self.command]

    def error_status(self, error: Exception) -> tuple[int, dict]:
        if isinstance(error, HTTPError):
            return error.status, error.headers
        if isinstance(error, UserError):  # the request's own mistake: an empty sentence
            return 400, {}
        print(f"error: {self.command} {self.path} failed; the server goes on:", file=sys.stderr)
        traceback.print_exception(error, file=sys.stderr)
        return 500, {}

    def log_message(self, format: str, *args) -> None:
        """No line per request (the base class writes one to stderr)."""


def serve(server: Server) -> None:
    """Answer requests until Ctrl-C or SIGTERM.

    The signal handler only asks the loop to stop (from another thread: `shutdown` waits for
    the loop, which runs in this one); raising from the handler would be caught, and
    ignored, by the server's own error handling if the signal came while it accepted a
    connection."""
    signals = []

    def stop(number: int, frame) -> None:
        signals.append(number)
        threading.Thread(target=server.shutdown, name="shutdown").start()

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, stop)
    try:
        server.serve_forever()
    finally:
        server.close()
    if signals:
        raise Interrupted(f"stopped serving ({signal.Signals(signals[0]).name})", signals[0])


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("seq2seq.serve", __doc__.splitlines()[0])
    add_config_arguments(parser)
    parser.add_argument("--checkpoint", help="model file (default: the config's best.pt)")
    parser.add_argument("--host", help="address to listen on (default: serve.host, 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (default: serve.port, 8000; 0: any free)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    args = parser.parse_intermixed_args(argv)
    overrides = list(args.overrides)
    if args.host is not None:
        overrides.append(f"serve.host={args.host}")
    if args.port is not None:
        overrides.append(f"serve.port={args.port}")
    config = load_config(args.config, overrides)
    if config.serve.threads:
        torch.set_num_threads(config.serve.threads)
    path = args.checkpoint or config.checkpoint_path
    model = TorchModel(load_checkpoint(path, pick_device(args.device)))
    server = Server(model, config.serve, str(path))
    print(f"serving {path} at {server.url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    serve(server)


if __name__ == "__main__":
    run_cli(main)
