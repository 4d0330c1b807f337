"""A translation service: the trained model, loaded once, answering HTTP, and a page to try it.

    python -m seq2seq.serve [--config FILE] [--checkpoint PATH] [--host H] [--port P] [key=value]
    python -m seq2seq.serve --engine ctranslate2 --model DIR   (seq2seq/exports/)

    POST /translate  {"text": ["three is three"], "beam_size": 1, "nbest": 2}  (both optional)
                     -> {"translations": [...], "warnings": [...]}, what translate prints
    POST /attention  {"text": "three is three"} -> the translation, and the attention weights
                     of every layer and head with their tokens (the torch engine only: 501)
    GET  /health, /info (model, vocabularies, config, limits), / (the page, seq2seq/service/static/)
    LibreTranslate's API too: POST /translate {"q": ...} or a form, POST /detect, GET /languages
    (seq2seq/service/libretranslate.py); GET /openapi.json (openapi.py there); keys and
    the rate limit of POSTs: access.py there

A request's way through the server:

    uvicorn (HTTP/1.1 parsed by h11, strictly)   Connection, below: a request's headers must
      arrive within serve.timeout_s; over serve.max_client_connections from one address
      -> 503; over serve.max_connections, a connection waiting for its request is closed
      (none: 503)
    Starlette: Guard (a Host not ours -> 400; a POST from another origin's page -> 403),
      CORS (serve.cors_origins), RateLimit (429), the route (else 404 / 405)
    the route, async                    POSTs: Content-Type application/json (else 415), the
      body read as it streams in (over serve.max_body_bytes -> 413, the rest discarded by
      uvicorn; slower than serve.timeout_s -> 408), the JSON and its fields checked (4xx)
      -> Job(sentences, options) -> Batcher.submit (service/batcher.py; its queue full -> 503
         with Retry-After), then waits for the job's future or the client's hang-up (which
         cancels the job: it is dropped unless its batch has started)
    <- 200 {"translations": ..., "warnings": ...}

So concurrent small requests share a batch, and each gets what `python -m seq2seq.translate`
gives for its sentences. Every answer is JSON, errors too ({"error": "..."} naming the
mistake; uvicorn's own 503 over the connection limit is its plain text): a mistake is a 4xx,
a failure while decoding a 500 (its traceback on stderr), and the server goes on. The limits
and the address come from the config's `serve` section; it listens on 127.0.0.1 (this machine
only) unless told otherwise. Ctrl-C or SIGTERM stops accepting connections, answers every
request already received (new ones on open connections get a 503), then exits.
"""

import asyncio
import json
import logging
import math
import resource
import signal
import socket
import sys
import time
from collections import Counter
from functools import partial
from importlib.resources import files
from urllib.parse import urlsplit

try:
    import h11
    import uvicorn
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.middleware.cors import CORSMiddleware
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import Response
    from starlette.routing import Route
    from uvicorn.protocols.http.h11_impl import H11Protocol
except ImportError as missing:  # one line, not a traceback
    sys.exit(f'error: the service needs {missing.name}: pip install -e ".[serve]"')

import torch

from seq2seq.config import ServeConfig, add_config_arguments, load_config
from seq2seq.decoding.engines import Engine, add_engine_arguments, load_engine
from seq2seq.service import access, libretranslate, openapi
from seq2seq.service.api import (
    JSON,
    HTTPError,
    check_names,
    check_sentence,
    error_response,
    json_object,
    json_response,
    media_type_of,
    receive,
)
from seq2seq.service.batcher import Batcher, Job, Options, QueueFull, Stopping
from seq2seq.support.errors import Interrupted, UserError, command_parser, run_cli

STATIC = {"/": "index.html", "/style.css": "style.css", "/app.js": "app.js"}
CONTENT_TYPES = {"html": "text/html", "css": "text/css", "js": "text/javascript"}
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


# The checks of a request's JSON: each raises an HTTPError naming the mistake.


async def read_json(request: Request, fields: tuple[str, ...], limits: ServeConfig) -> dict:
    """The JSON object of a POST's body: only `fields`, and "text" among them."""
    media_type = media_type_of(request)
    if media_type != JSON:
        raise HTTPError(
            415, f"send the body as JSON (Content-Type: application/json), not {media_type!r}"
        )
    data = json_object(await receive(request, limits), '{"text": ...}')
    check_names(data, fields)
    if "text" not in data:
        raise HTTPError(400, "the field 'text' is missing")
    return data


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
        check_sentence(sentence, f"sentence {number}", limits)
    return text


def sentence_of(request: dict, limits: ServeConfig) -> str:
    """/attention's "text": one sentence."""
    text = request["text"]
    if not isinstance(text, str):
        raise HTTPError(400, "'text' must be a string (one sentence)")
    check_sentence(text, "'text'", limits)
    return text


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


class Service:
    """The routes' side: the model, its settings, the decoder thread, the page's files."""

    def __init__(self, engine: Engine, settings: ServeConfig, batcher: Batcher):
        self.engine, self.settings, self.batcher = engine, settings, batcher
        self.info = model_info(engine, settings)
        self.pages = {name: static_file(name) for name in STATIC.values()}
        self.keys = access.ApiKeys.load(settings.api_keys)
        access.warn_if_open(settings, self.keys)
        self.libretranslate = libretranslate.LibreTranslate(self)
        self.openapi = openapi.route(settings, self.libretranslate)
        self.middleware = [Middleware(access.RateLimit, settings=settings)]

    def routes(self) -> list[Route]:
        return [
            *(
                Route(path, partial(self.page, name), methods=["GET"])
                for path, name in STATIC.items()
            ),
            Route("/health", self.health, methods=["GET"]),
            Route("/info", self.model_info, methods=["GET"]),
            Route("/translate", self.translate, methods=["POST"]),
            Route("/attention", self.attention, methods=["POST"]),
            *self.libretranslate.routes(),
            self.openapi,
        ]

    async def page(self, name: str, request: Request) -> Response:
        content_type, body = self.pages[name]
        return Response(body, media_type=content_type)

    async def health(self, request: Request) -> Response:
        batcher = self.batcher
        counts = {"requests": batcher.requests, "batches": batcher.batches}
        counts |= {"sentences": batcher.sentences, "queued": batcher.queued_sentences()}
        return json_response({"status": "ok", **counts})

    async def model_info(self, request: Request) -> Response:
        return json_response(self.info)

    async def translate(self, request: Request) -> Response:
        request, fields = await self.libretranslate.sort(request)
        if fields is not None:  # LibreTranslate's request: seq2seq/service/libretranslate.py
            return await self.libretranslate.translate(request, fields)
        self.keys.check(request)
        data = await read_json(request, ("text", "beam_size", "nbest"), self.settings)
        sentences = sentences_of(data, self.settings)
        beam_size = beam_field(data, "beam_size", self.settings)
        nbest = beam_field(data, "nbest", self.settings)
        beam_size = max(beam_size or self.engine.config.decode.beam_size, nbest or 1)
        return await self.decode(request, Job(sentences, Options(beam_size, nbest)))

    async def attention(self, request: Request) -> Response:
        self.keys.check(request)
        data = await read_json(request, ("text",), self.settings)
        sentence = sentence_of(data, self.settings)
        if not self.engine.shows_attention:
            raise HTTPError(501, "/attention needs the torch engine (serve --engine torch)")
        return await self.decode(request, Job([sentence], None))

    async def decode(self, request: Request, job: Job) -> Response:
        """The job's answer from the decoder thread; if the client hangs up first, the job is
        cancelled (dropped unless its batch has started) and nobody reads the answer."""
        job.client = request.client.host if request.client else ""  # its line in the queue
        try:
            answer = asyncio.wrap_future(self.batcher.submit(job))
        except QueueFull as error:
            raise HTTPError(503, str(error), {"Retry-After": "1"}) from None
        except Stopping as error:
            raise HTTPError(503, str(error), {"Connection": "close"}) from None
        gone = asyncio.ensure_future(hang_up(request))
        await asyncio.wait({answer, gone}, return_when=asyncio.FIRST_COMPLETED)
        gone.cancel()
        if not answer.done():
            answer.cancel()  # and the job with it, if it still waits
            return client_gone()
        if isinstance(answer.exception(), Stopping):  # still waiting at serve.drain_s
            raise HTTPError(503, str(answer.exception()), {"Connection": "close"})
        return json_response(answer.result())


def client_gone(*args) -> Response:
    return error_response(499, "the client went away")  # nobody reads it


async def hang_up(request: Request) -> None:
    """Returns when the client disconnects (the body was read: nothing else can come)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def static_file(name: str) -> tuple[str, bytes]:
    content_type = CONTENT_TYPES[name.rpartition(".")[2]]
    return f"{content_type}; charset=utf-8", files("seq2seq.service").joinpath(
        "static", name
    ).read_bytes()


# The settings a client needs to know (its limits), of those in force; not where the files
# are, nor how the service is deployed.
CLIENT_SETTINGS = (
    "max_sentences", "max_chars", "max_body_bytes", "max_beam_size", "timeout_s",
    "requests_per_minute",
)  # fmt: skip


def model_info(engine: Engine, settings: ServeConfig) -> dict:
    config = engine.config.to_dict()
    del config["serve"]  # as saved at training time; the settings in force are "serve" below
    vocabs = {"source": engine.src_vocab, "target": engine.tgt_vocab}
    info = engine.facts()  # engine, device, checkpoint (training step, valid scores, example)
    info["example"] = info["checkpoint"].get("example", "")  # what the page shows first
    info["vocab"] = {
        side: {"size": len(vocab), "pieces": vocab.all_pieces()} for side, vocab in vocabs.items()
    }
    serve = {name: getattr(settings, name) for name in CLIENT_SETTINGS}
    serve["api_key_needed"] = bool(settings.api_keys)
    return {**info, "config": config, "serve": serve}


# Errors, all as JSON: the routes' HTTPError, Starlette's 404 and 405, a failure (500, its
# traceback logged by uvicorn, which then closes the connection).


async def on_http_error(request: Request, error: HTTPError) -> Response:
    return error_response(error.status, str(error), error.headers)


async def on_user_error(request: Request, error: UserError) -> Response:
    return error_response(400, str(error))  # the request's own mistake: an empty sentence


async def on_starlette_error(request: Request, error: HTTPException) -> Response:
    path, method = request.url.path, request.method
    if error.status_code == 404:
        known = ", ".join(
            f"{m} {route.path}"
            for route in request.app.routes
            for m in sorted(route.methods)
            if m != "HEAD"
        )
        return error_response(404, f"no {path} here; there are {known}")
    if error.status_code == 405:
        allowed = ", ".join(sorted(error.headers["Allow"].split(", ")))  # a set's order
        return error_response(405, f"{path} takes {allowed}, not {method}", {"Allow": allowed})
    return error_response(error.status_code, error.detail, error.headers)


async def on_failure(request: Request, error: Exception) -> Response:
    return error_response(500, f"{type(error).__name__}: {error}")


# On every answer: no content-type guessing; the page's scripts, styles and requests from
# this service only, and no other site may frame it.
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"content-security-policy", b"default-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
     b"form-action 'none'"),
]  # fmt: skip


class Guard:
    """Before any route: a request whose Host is not this service is refused, so that a web
    page on another name that resolves here (DNS rebinding) cannot read or spend it; so is a
    POST that a page of another origin sends (a form: browsers send those without asking),
    unless serve.cors_origins allows that origin. Every answer gets SECURITY_HEADERS."""

    def __init__(self, app, settings: ServeConfig):
        self.app, self.settings = app, settings

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        host = headers.get(b"host", b"").decode("latin-1")
        origin = headers.get(b"origin", b"").decode("latin-1")
        if not self.allowed(scope):
            message = (
                f"Host {host!r} is not served here: use this service's address or localhost, "
                "or add the name to serve.allowed_hosts"
            )
            return await error_response(400, message)(scope, receive, send)
        if scope["method"] == "POST" and origin and not self.same_or_allowed(origin, host):
            message = (
                f"a request from a page of {origin} is refused: allow it in serve.cors_origins"
            )
            return await error_response(403, message)(scope, receive, send)

        async def send_securely(message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message["headers"], *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, send_securely)

    def same_or_allowed(self, origin: str, host: str) -> bool:
        """Whether a page of `origin` may POST: the service's own page, or one allowed."""
        allowed = self.settings.cors_origins
        return (
            urlsplit(origin).netloc.lower() == host.lower() or origin in allowed or "*" in allowed
        )

    def allowed(self, scope) -> bool:
        host = dict(scope["headers"]).get(b"host", b"").decode("latin-1").lower()
        name = host[1:].partition("]")[0] if host.startswith("[") else host.partition(":")[0]
        ours = {*LOCAL_HOSTS, self.settings.host, scope["server"][0], *self.settings.allowed_hosts}
        return name in ours or "*" in ours


def cross_origin(settings: ServeConfig) -> list[Middleware]:
    """CORS headers for the pages of serve.cors_origins (Starlette's middleware: preflight
    OPTIONS requests included), if any."""
    if not settings.cors_origins:
        return []
    return [
        Middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )
    ]


def build_app(service: Service) -> Starlette:
    app = Starlette(
        routes=service.routes(),
        middleware=[
            Middleware(Guard, settings=service.settings),
            *cross_origin(service.settings),
            *service.middleware,
        ],
        exception_handlers={
            HTTPError: on_http_error,
            UserError: on_user_error,
            HTTPException: on_starlette_error,
            ClientDisconnect: client_gone,
            Exception: on_failure,
        },
    )
    app.router.redirect_slashes = False  # /health/ is a 404, not a redirect
    return app


class Connection(H11Protocol):
    """uvicorn's HTTP/1.1 connection, with a deadline and JSON for its own 400.

    uvicorn closes a keep-alive connection that stays silent for timeout_keep_alive seconds,
    but each byte restarts that wait, and a new connection has none: a client that sends
    its headers a byte at a time would hold the connection for ever. Here each request's
    headers must arrive within timeout_keep_alive (serve.timeout_s) of the connection's
    opening or of the previous answer; the body has its own deadline (read_json)."""

    deadline: asyncio.TimerHandle | None = None  # set while waiting for a request's headers
    most, most_per_client = 256, 64  # serve.max_connections, max_client_connections

    @classmethod
    def limited(cls, settings: ServeConfig) -> type["Connection"]:
        """This class, with the limits of `settings` (uvicorn makes one per connection)."""
        limits = {
            "most": settings.max_connections,
            "most_per_client": settings.max_client_connections,
        }
        return type(cls.__name__, (cls,), limits)

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        mine = [c for c in self.connections if c.address == self.address]
        if len(mine) > self.most_per_client:
            self.refuse("too many connections from your address (serve.max_client_connections)")
        elif len(self.connections) > self.most and not self.make_room():
            self.refuse("too many connections: try again in a moment")
        else:
            self.start_deadline()

    @property
    def address(self) -> str:
        return self.client[0] if self.client else ""

    def make_room(self) -> bool:
        """Over serve.max_connections: close a connection still waiting for its request, of
        the client that holds the most connections, the one waiting longest, so that a
        well-formed client always gets in; False if every other connection is busy with a
        request."""
        waiting = [c for c in self.connections if c is not self and c.deadline is not None]
        if not waiting:
            return False
        held = Counter(c.address for c in self.connections)
        victim = max(waiting, key=lambda c: (held[c.address], -c.deadline.when()))
        victim.stop_deadline()
        victim.transport.close()
        self.connections.discard(victim)  # now, not when its loss is noticed
        return True

    def refuse(self, why: str) -> None:
        """One connection too many: a 503 at once, before any request (h11 cannot answer
        one that has not come, so the bytes are written here), and the connection closed, so
        that open connections, and the files they hold, stay within serve.max_connections."""
        body = json.dumps({"error": why}).encode()
        head = (
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nretry-after: 1\r\nconnection: close\r\n\r\n"
        )
        self.transport.write(head.encode() + body)
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.cycle is not None and not self.cycle.response_complete:
            self.stop_deadline()  # a request's headers are in

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.cycle.response_complete:  # no pipelined request started
            self.start_deadline()

    def connection_lost(self, exc) -> None:
        super().connection_lost(exc)
        self.stop_deadline()

    def start_deadline(self) -> None:
        self.stop_deadline()
        if not self.transport.is_closing():
            self.deadline = self.loop.call_later(self.timeout_keep_alive, self.transport.close)

    def stop_deadline(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def send_400_response(self, msg: str) -> None:
        """A request that is not HTTP/1.1 (h11 refused it): the connection is closed."""
        body = json.dumps({"error": f"not a valid HTTP/1.1 request ({msg})"}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=body),
        ):
            self.transport.write(self.conn.send(event))
        self.transport.write(self.conn.send(h11.EndOfMessage()))
        self.transport.close()


class Server(uvicorn.Server):
    """uvicorn serving the app on a socket bound beforehand; its shutdown first drains the
    decoder: no more waiting for batch windows, new jobs get a 503, and so do those still
    waiting serve.drain_s later."""

    def __init__(self, engine: Engine, settings: ServeConfig):
        allow_files(settings.max_connections + SPARE_FILES)
        self.socket = listen(settings.host, settings.port)
        self.settings = settings
        self.batcher = Batcher(engine, settings)
        app = build_app(Service(engine, settings, self.batcher))
        super().__init__(
            uvicorn.Config(
                app,
                http=Connection.limited(settings),  # h11, strict
                loop="asyncio",
                lifespan="off",
                # uvicorn's own 503 comes at this many connections: one more than
                # Connection ever keeps, so that it is Connection's rules that apply
                limit_concurrency=settings.max_connections + 1,
                proxy_headers=bool(settings.trusted_proxies),  # X-Forwarded-For, from these only
                forwarded_allow_ips=settings.trusted_proxies,
                timeout_keep_alive=settings.timeout_s,
                log_config=None,  # uvicorn's warnings: one line each on stderr
                access_log=False,
                server_header=False,
            )
        )

    @property
    def url(self) -> str:
        host, port = self.socket.getsockname()[:2]
        return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"

    def serve_forever(self) -> None:
        """Until should_exit is set, or SIGINT or SIGTERM comes (in the main thread)."""
        self.run(sockets=[self.socket])

    async def startup(self, sockets=None) -> None:
        asyncio.get_running_loop().set_exception_handler(OutOfFiles())
        await super().startup(sockets)

    async def shutdown(self, sockets=None) -> None:
        self.batcher.drain(within_s=self.settings.drain_s)
        await super().shutdown(sockets)

    def close(self) -> None:
        self.batcher.stop(wait=not self.force_exit)  # a second signal: the batch is left
        self.socket.close()


SPARE_FILES = 64  # files the process needs besides its connections: the model, torch, logs


def allow_files(needed: int) -> None:
    """Let the process open `needed` files (raising its soft limit up to the hard one), or
    say in one line why it cannot: a server out of files stops accepting connections."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise UserError(
            f"serve.max_connections needs about {needed} open files and this process may open "
            f"{hard} (ulimit -n): lower serve.max_connections or raise the limit"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


class OutOfFiles:
    """The event loop's error handler. Should the process run out of files all the same (they
    are used by something else), asyncio stops accepting for a second, but (Python 3.11) only
    after trying again once per connection that may wait (uvicorn's backlog, 2,048), with a
    traceback each: here that is one line at most every 10 s. Other errors go to asyncio's
    own handler."""

    def __init__(self, every_s: float = 10.0):
        self.every_s, self.last = every_s, -math.inf

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        if context.get("message") != "socket.accept() out of system resource":
            loop.default_exception_handler(context)
        elif time.monotonic() - self.last >= self.every_s:
            self.last = time.monotonic()
            print(
                f"warning: out of files ({context['exception'].strerror}): new connections "
                "wait; lower serve.max_connections or raise the file limit (ulimit -n)",
                file=sys.stderr,
                flush=True,
            )


def listen(host: str, port: int) -> socket.socket:
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as error:
        raise UserError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    sock.listen(2048)  # from now on, connections wait to be accepted (uvicorn's backlog)
    return sock


def serve(server: Server) -> None:
    """Answer requests until Ctrl-C or SIGTERM. uvicorn handles the signal (a graceful
    shutdown), then raises it again once done, with the handlers it found: these note it."""
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
    add_engine_arguments(parser)
    parser.add_argument("--host", help="address to listen on (default: serve.host, 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (default: serve.port, 8000; 0: any free)")
    args = parser.parse_intermixed_args(argv)
    overrides = list(args.overrides)
    if args.host is not None:
        overrides.append(f"serve.host={args.host}")
    if args.port is not None:
        overrides.append(f"serve.port={args.port}")
    config = load_config(args.config, overrides)
    if config.serve.threads:
        torch.set_num_threads(config.serve.threads)
    engine = load_engine(  # by default the best checkpoint of the config with its overrides
        config, args.checkpoint, args.engine, args.model, args.device, args.compute_type
    )
    path = (
        args.model
        if args.engine == "ctranslate2"
        else str(args.checkpoint or config.checkpoint_path)
    )
    server = Server(engine, config.serve)
    logging.getLogger("uvicorn").addHandler(one_line_log())
    print(f"serving {path} at {server.url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    serve(server)


def one_line_log() -> logging.Handler:
    """uvicorn's warnings (a malformed request, the connection limit) as `warning: ...`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    return handler


if __name__ == "__main__":
    run_cli(main)
