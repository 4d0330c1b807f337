"""The service's figures at GET /metrics, in Prometheus' text format (serve.metrics; off: no
route, a 404, and nothing below is installed), through the official client, prometheus_client.

    install (app.py's build_app): the route, and Measure before the guards
    every request -> Measure (the first middleware, so that what the guards refuse counts too)
      -> ... -> the answer's status
      -> Metrics.request_done: seq2seq_http_requests_total {route, pair, status} (the pair
         that core.py translated, "" if none), seq2seq_http_request_duration_seconds
         {route}, seq2seq_http_errors_total {route, status} (4xx and 5xx); a path that is not
         a route's counts as "other"; the route as the app names it, without serve.url_prefix
         (/translate-api/health counts as /health, and /health outside the prefix as "other")
      -> Metrics.request_said: what the route left in the request's scope: the texts core.py
         answered from the memory (REMEMBERED) -> seq2seq_memory_answers_total {pair}; the
         confidence of each sentence the models translated for it (CONFIDENCES; the memory's
         answers aside, those cached counted again) -> seq2seq_sentence_confidence {pair} (a
         histogram, buckets of 0.1; none not known); why suggest.py refused a suggestion
         (REFUSED) -> seq2seq_suggestions_refused_total {reason} (checks.py's REASONS, each
         there from the start, at 0, with serve.suggestions)
    each batch (batcher.py's on_batch, one call a batch, on its decoder thread)
      -> Metrics.batch_done: seq2seq_batch_sentences {pair, model} (a histogram),
         seq2seq_decoder_busy_seconds_total {pair, model}, seq2seq_bare_translations_total
         {pair, model} (texts answered with no letter or digit: bare_answers; a job's texts
         are its sentences, core.py's), then refresh()
    refresh(), after each batch and at each scrape: the gauges seq2seq_queue_sentences
      {pair, model} (sentences waiting), seq2seq_models_loaded {pair, model, engine} and,
      with serve.limits_storage, seq2seq_limits_storage_up (shared_limits.py)
    GET /metrics -> Metrics.answer: serve.metrics_auth_token set and not the request's
      `Authorization: Bearer TOKEN` -> 401 (LibreTranslate's answer); else the figures

With serve.workers > 1, serve.py's supervise makes a fresh folder (shared_between_workers:
PROMETHEUS_MULTIPROC_DIR, which the workers inherit) before it starts them and removes it at
the end: each worker writes its figures there, the worker that answers a scrape reads them
all (prometheus_client's multiprocess mode), and a dead worker's gauges are dropped when it is
replaced (forget); its counts stay in the totals. The gauges are summed over live workers.
"""

import contextlib
import hmac
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from seq2seq.config import ServeConfig
from seq2seq.service.suggest import REFUSED
from seq2seq.serving.api import HTTPError, bearer
from seq2seq.serving.batcher import Batcher, Job
from seq2seq.serving.checks import REASONS
from seq2seq.serving.core import CONFIDENCES, PAIR, REMEMBERED
from seq2seq.serving.models import Models
from seq2seq.serving.shared_limits import SharedLimits
from seq2seq.text.placeholders import bare

SHARED = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's: where each process writes its figures


class SizedFiles(multiprocess.MultiProcessCollector):
    """prometheus_client's collector of the workers' files, less those a worker has created
    and not yet sized: an empty file would fail the whole scrape (a 500), and holds no figure
    yet (prometheus/client_python issue #1199)."""

    def collect(self):
        files = []
        for path in Path(self._path).glob("*.db"):
            with contextlib.suppress(OSError):  # gone since the listing: a worker replaced
                if path.stat().st_size:
                    files.append(str(path))
        return self.merge(files, accumulate=True)


class Metrics:
    """The service's metrics: the requests' (request_done), the decoders' (batch_done,
    refresh), and the answer to GET /metrics."""

    def __init__(self, models: Models, settings: ServeConfig):
        self.models, self.token = models, settings.metrics_auth_token
        self.registry = CollectorRegistry()
        if SHARED in os.environ:  # several workers: each one's figures are read from the folder
            SizedFiles(self.registry)
        self.declare(None if SHARED in os.environ else self.registry, settings.max_batch_sentences)
        for reason in REASONS if settings.suggestions else ():
            self.refused.labels(reason)
        for model in models.all if settings.memory else ():
            self.remembered.labels(model.pair)
        self.engines: dict[Batcher, str] = {}  # each model's engine, once it has been loaded
        self.answered: dict[tuple, tuple] = {}  # (route, pair, status) -> its series
        self.owners = {model.batcher: model for model in models.all}
        storage = settings.limits_storage
        self.limits_storage = SharedLimits.at(storage) if storage else None
        for batcher in self.owners:
            batcher.on_batch = self.batch_done
        self.refresh()

    def declare(self, into: CollectorRegistry | None, most: int) -> None:
        """The metrics, in the registry `into` (None: the workers' shared folder); batches of
        `most` sentences at most (serve.max_batch_sentences)."""
        by_model = ["pair", "model"]
        self.requests = Counter(
            "seq2seq_http_requests",
            "HTTP requests answered, by route, language pair and status",
            ["route", "pair", "status"],
            registry=into,
        )
        self.latency = Histogram(
            "seq2seq_http_request_duration_seconds",
            "Time from a request's arrival to its answer",
            ["route"],
            registry=into,
        )
        self.errors = Counter(
            "seq2seq_http_errors",
            "HTTP requests answered with a 4xx or 5xx, by route and status",
            ["route", "status"],
            registry=into,
        )
        self.batches = Histogram(
            "seq2seq_batch_sentences",
            "Sentences in each batch a decoder decoded",
            by_model,
            registry=into,
            buckets=[2**i for i in range((most - 1).bit_length() + 1)],
        )
        self.busy = Counter(
            "seq2seq_decoder_busy_seconds",
            "Seconds the decoder threads spent decoding batches",
            by_model,
            registry=into,
        )
        self.bare = Counter(
            "seq2seq_bare_translations",
            "Texts translated to no letter or digit, empty or their placeables alone (the "
            "engines' rule keeps it at 0)",
            by_model,
            registry=into,
        )
        self.refused = Counter(
            "seq2seq_suggestions_refused",
            "Suggestions refused (POST /suggest), by why: empty, too_long, copy, wrong_language, "
            "flooding",
            ["reason"],
            registry=into,
        )
        self.remembered = Counter(
            "seq2seq_memory_answers",
            "Texts answered from the translation memory (serve.memory), by language pair",
            ["pair"],
            registry=into,
        )
        self.confidences = Histogram(
            "seq2seq_sentence_confidence",
            "The confidence (0 to 1: the chance it is acceptable) of each sentence the models "
            "translated, by language pair",
            ["pair"],
            registry=into,
            buckets=[tenth / 10 for tenth in range(1, 11)],
        )
        self.queued = Gauge(
            "seq2seq_queue_sentences",
            "Sentences waiting for a decoder",
            by_model,
            registry=into,
            multiprocess_mode="livesum",
        )
        self.loaded = Gauge(
            "seq2seq_models_loaded",
            "Models loaded (with several workers: in how many)",
            [*by_model, "engine"],
            registry=into,
            multiprocess_mode="livesum",
        )
        self.storage_up = Gauge(
            "seq2seq_limits_storage_up",
            "1 while serve.limits_storage answers, 0 while each instance counts its clients' "
            "limits alone (with several workers: in how many it answers)",
            registry=into,
            multiprocess_mode="livesum",
        )

    def request_done(self, route: str, pair: str, status: int, seconds: float) -> None:
        """(The event loop.) One answered request counted; its labels' series are looked up
        once (labels() costs microseconds), and there are few: routes, pairs, statuses."""
        key = route, pair, status
        if key not in self.answered:
            error = self.errors.labels(route, status) if status >= 400 else None
            self.answered[key] = self.requests.labels(*key), self.latency.labels(route), error
        requests, latency, error = self.answered[key]
        requests.inc()
        latency.observe(seconds)
        if error is not None:
            error.inc()

    def request_said(self, scope: dict) -> None:
        """(The event loop.) What the request's route left in its scope to count: the texts
        answered from the memory, the sentences' confidences, a suggestion's refusal."""
        if scope.get(REMEMBERED):
            self.remembered.labels(scope.get(PAIR, "")).inc(scope[REMEMBERED])
        for pair, confidences in scope.get(CONFIDENCES, {}).items():
            histogram = self.confidences.labels(pair)
            for confidence in confidences:
                histogram.observe(confidence)
        if REFUSED in scope:
            self.refused.labels(scope[REFUSED]).inc()

    def batch_done(self, batcher: Batcher, batch: list[Job], seconds: float) -> None:
        """(A decoder thread, after each batch.) Its size and time, and the gauges."""
        model = self.owners[batcher]
        self.batches.labels(model.pair, model.name).observe(sum(len(j.sentences) for j in batch))
        self.busy.labels(model.pair, model.name).inc(seconds)
        self.bare.labels(model.pair, model.name).inc(bare_answers(batch))
        self.refresh()

    def refresh(self) -> None:
        """The gauges as they are now: each model's waiting sentences, whether it is loaded
        (labelled with its engine, once it has been), whether serve.limits_storage answers."""
        if self.limits_storage is not None:
            self.storage_up.set(self.limits_storage.up)
        for model in self.models.all:
            self.queued.labels(model.pair, model.name).set(model.batcher.queued_sentences())
            engine = model.engine
            if engine is not None and model.batcher not in self.engines:
                self.engines[model.batcher] = engine.facts()["engine"]
            if model.batcher in self.engines:
                labels = model.pair, model.name, self.engines[model.batcher]
                self.loaded.labels(*labels).set(engine is not None)

    async def answer(self, request: Request) -> Response:
        """GET /metrics: with serve.metrics_auth_token, only for `Authorization: Bearer TOKEN`
        (else a 401, as LibreTranslate's --metrics-auth-token)."""
        given = (bearer(request) or "").encode()
        if self.token and not hmac.compare_digest(given, self.token.encode()):
            raise HTTPError(
                401,
                "Unauthorized: GET /metrics needs the header Authorization: "
                "Bearer TOKEN (serve.metrics_auth_token)",
                {"WWW-Authenticate": "Bearer"},
            )
        self.refresh()
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


class Measure:
    """Middleware: each request's route (its path past `prefix` if one of `routes`, else
    "other"), pair, status and time, to Metrics.request_done once it is answered (no answer
    sent, an exception: 500, the status app.py's on_failure gives it), and its scope to
    Metrics.request_said."""

    def __init__(self, app, metrics: Metrics, routes: set[str], prefix: str = ""):
        self.app, self.metrics, self.routes, self.prefix = app, metrics, routes, prefix

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start, status = time.perf_counter(), 500

        async def send_status(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            path = scope["path"]
            if self.prefix:  # serve.url_prefix: a route's path is past it
                path = path[len(self.prefix) :] if path.startswith(self.prefix + "/") else ""
            route = path if path in self.routes else "other"
            seconds = time.perf_counter() - start
            self.metrics.request_done(route, scope.get(PAIR, ""), status, seconds)
            self.metrics.request_said(scope)


def bare_answers(batch: list[Job]) -> int:
    """How many texts of a batch's answered jobs have a bare translation (text/placeholders.py:
    no letter or digit where the text has one), the best of an n-best."""
    count = 0
    for job in batch:
        future = job.future
        if job.options is None or not future.done() or future.cancelled() or future.exception():
            continue
        for one, answer in zip(job.texts.splits, future.result().translations, strict=True):
            best = (answer[0][1] if answer else "") if job.options.nbest else answer
            count += bare(one.join(one.sentences), best)
    return count


def install(routes: list[BaseRoute], models: Models, settings: ServeConfig) -> list[Middleware]:
    """(app.py.) With serve.metrics, GET /metrics added to the app's `routes`, and Measure,
    the middleware to put before its guards (outermost), so that what they refuse counts too;
    without, nothing (no route, no middleware, nothing measured)."""
    if not settings.metrics:
        return []
    figures = Metrics(models, settings)
    routes.append(Route("/metrics", figures.answer, methods=["GET"]))
    paths = {route.path for route in routes}
    return [Middleware(Measure, metrics=figures, routes=paths, prefix=settings.url_prefix)]


@contextlib.contextmanager
def shared_between_workers(metrics: bool) -> Iterator[None]:
    """(serve.py's supervise, with serve.metrics.) A fresh folder for the workers' figures as
    PROMETHEUS_MULTIPROC_DIR while they run (the workers it starts inherit it), removed after."""
    if not metrics:
        yield
        return
    before = os.environ.get(SHARED)
    with tempfile.TemporaryDirectory(prefix="seq2seq-metrics-") as folder:
        os.environ[SHARED] = folder
        try:
            yield
        finally:
            if before is None:
                del os.environ[SHARED]
            else:
                os.environ[SHARED] = before


def forget(pid: int) -> None:
    """A dead worker's gauges dropped from the shared figures (its counts stay in the totals);
    nothing without them (serve.metrics off)."""
    if SHARED in os.environ:
        multiprocess.mark_process_dead(pid)
