"""Our API, and the page that uses it.

    POST /translate  {"text": ["three is three"], "beam_size": 1, "nbest": 2,
                      "placeholders": "off", "source": "en", "target": "de", "model": "tuned"}
                     (all but text optional; placeholders: decode.placeholders; source and
                     target: the first model's pair; model: the name of one of the pair's
                     models, else its first: models.py)
                     -> {"translations": [...], "warnings": [...]}, what translate prints
                     (a text of several sentences: each translated, in the text's spacing)
    POST /attention  {"text": "three is three"} -> the translation, and the attention weights
                     of every layer and head with their tokens (the torch engine only: 501)
    GET  /health, /info (model, vocabularies, config, limits), / (the page, static/)

A request's way (app.py hands /translate's here unless it is LibreTranslate's):

    its key (access.py, 403); Content-Type application/json (else 415); the body (api.py's
      Body: read once, 413, 408) as a JSON object of our fields, each checked (4xx)
    -> the texts split into their sentences (Backend.split; too many in all: 413)
    -> Job(texts, Options(beam_size, nbest)), or Job(one sentence, None) for the attention
    -> Backend.run_job (backend.py) <- the job's Translated (or Attention)
    <- 200 {"translations": ..., "warnings": ...}: translate_answer (attention_answer)
"""

import json
from functools import partial
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from seq2seq.config import ServeConfig
from seq2seq.decoding.attention_maps import Attention
from seq2seq.decoding.engines import Engine, Translated
from seq2seq.decoding.warnings import numbered
from seq2seq.service.access import check_chars
from seq2seq.service.api import (
    JSON,
    Body,
    HTTPError,
    check_count,
    check_names,
    check_sentence,
    json_response,
    model_field,
    placeholders_field,
)
from seq2seq.service.backend import Backend, Wanted
from seq2seq.service.batcher import Job
from seq2seq.service.models import Models
from seq2seq.text.sentences import Texts

STATIC = {"/": "index.html", "/style.css": "style.css", "/app.js": "app.js"}
CONTENT_TYPES = {"html": "text/html", "css": "text/css", "js": "text/javascript"}


class OurApi:
    """Our routes and the page's, over the backend."""

    def __init__(self, backend: Backend):
        self.backend, self.settings = backend, backend.settings
        self.facts = model_info(backend.models.default.engine)  # the first: always loaded
        self.pages = {name: static_file(name) for name in STATIC.values()}

    def page_routes(self) -> list[Route]:
        """The page's files; none with serve.page false (LibreTranslate's --disable-web-ui)."""
        if not self.backend.settings.page:
            return []
        return [
            Route(path, partial(self.page, name), methods=["GET"]) for path, name in STATIC.items()
        ]

    async def page(self, name: str, request: Request) -> Response:
        content_type, body = self.pages[name]
        return Response(body, media_type=content_type)

    async def health(self, request: Request) -> Response:
        """The decoders' counts so far, summed over the models; with serve.translation_cache,
        the cache's entries, hits and misses (texts)."""
        batchers = [model.batcher for model in self.backend.models.all]
        counts = {
            "requests": sum(b.requests for b in batchers),
            "batches": sum(b.batches for b in batchers),
            "sentences": sum(b.sentences for b in batchers),
            "queued": sum(b.queued_sentences() for b in batchers),
        }
        if self.backend.cache.size:
            counts["cache"] = self.backend.cache.figures()
        return json_response({"status": "ok", **counts})

    async def info(self, request: Request) -> Response:
        return json_response(service_info(self.facts, self.backend.models, self.settings))

    async def post_translate(self, request: Request, body: Body) -> Response:
        """POST /translate, ours: `body` may have been read already (app.py)."""
        limits = self.backend.keys.check(request)
        fields = ("text", "beam_size", "nbest", "source", "target", "placeholders", "model")
        data = await read_json(body, fields)
        texts = text_list(data, self.settings)
        check_chars(limits, sum(map(len, texts)), 413)
        wanted = Wanted(
            beam_field(data, "beam_size", self.settings),
            beam_field(data, "nbest", self.settings),
            status=413,
            placeholders=placeholders_field(data),
        )
        route = self.backend.models.route(*self.pair(data), model_field(data))
        translated = await self.backend.translate(request, route, texts, wanted)
        return json_response(translate_answer(translated, ranked=wanted.nbest is not None))

    def pair(self, data: dict) -> tuple[str, str]:
        """The request's "source" and "target" (codes); each absent: the first model's."""
        default = self.backend.models.default
        pair = data.get("source", default.source.code), data.get("target", default.target.code)
        for key, code in zip(("source", "target"), pair, strict=True):
            if not isinstance(code, str):
                raise HTTPError(
                    400, f"'{key}' must be a language code (a string), got {json.dumps(code)}"
                )
        return pair

    async def attention(self, request: Request) -> Response:
        self.backend.keys.check(request)
        data = await read_json(Body(request, self.settings), ("text",))
        sentence = one_sentence(data, self.settings)
        model = self.backend.models.default
        if not model.engine.shows_attention:
            raise HTTPError(501, "/attention needs our torch model (serve --engine auto or torch)")
        attention = await self.backend.run_job(request, model, Job(Texts([sentence]), None))
        return json_response(attention_answer(attention))


# The answers: what the decoder thread gave, as our JSON.


def translate_answer(translated: Translated, ranked: bool) -> dict:
    """/translate's answer: each text's translation (or, `ranked`, its n best, each with its
    score), and the warnings of all, "line N" naming the Nth text."""
    translations = translated.translations
    if ranked:
        translations = [[{"translation": t, "score": s} for s, t in best] for best in translations]
    return {"translations": translations, "warnings": numbered(translated.warnings)}


def attention_answer(attention: Attention) -> dict:
    """/attention's answer: the translation, its warnings, and each map with its weights
    rounded to 4 decimals ([head][query][key])."""
    maps = [
        {
            "kind": m.kind,
            "layer": m.layer,
            "title": m.title,
            "queries": m.queries,
            "keys": m.keys,
            "weights": m.weights.double().round(decimals=4).tolist(),
        }
        for m in attention.maps
    ]
    return {"translation": attention.translation, "warnings": attention.warnings, "maps": maps}


# The checks of a request's JSON: each raises an HTTPError naming the mistake.


async def read_json(body: Body, fields: tuple[str, ...]) -> dict:
    """The JSON object of a POST's body: only `fields`, and "text" among them."""
    if body.media_type != JSON:
        raise HTTPError(
            415, f"send the body as JSON (Content-Type: application/json), not {body.media_type!r}"
        )
    data = await body.json_object('{"text": ...}')
    check_names(data, fields)
    if "text" not in data:
        raise HTTPError(400, "the field 'text' is missing")
    return data


def text_list(data: dict, settings: ServeConfig) -> list[str]:
    """/translate's "text": a list of texts, a sentence or several each."""
    text = data["text"]
    if not isinstance(text, list) or not all(isinstance(sentence, str) for sentence in text):
        raise HTTPError(400, "'text' must be a list of strings (sentences)")
    check_count(len(text), "texts", 413, settings)
    for number, sentence in enumerate(text, 1):
        check_sentence(sentence, f"sentence {number}", settings)
    return text


def one_sentence(data: dict, settings: ServeConfig) -> str:
    """/attention's "text": one sentence."""
    text = data["text"]
    if not isinstance(text, str):
        raise HTTPError(400, "'text' must be a string (one sentence)")
    check_sentence(text, "'text'", settings)
    return text


def beam_field(data: dict, key: str, settings: ServeConfig) -> int | None:
    """beam_size or nbest: absent (None) or a number of beams within the limit."""
    value, most = data.get(key), settings.max_beam_size
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
    return f"{content_type}; charset=utf-8", files("seq2seq.service").joinpath(
        "static", name
    ).read_bytes()


# The settings a client needs to know (its limits), of those in force; not where the files
# are, nor how the service is deployed.
CLIENT_SETTINGS = (
    "max_sentences", "max_chars", "max_body_bytes", "max_beam_size", "timeout_s",
    "requests_per_minute", "suggestions", "suggestions_per_hour",
)  # fmt: skip


def service_info(facts: dict, models: Models, settings: ServeConfig) -> dict:
    """/info: the first model's `facts` (the page's), the settings a client needs, every model
    (its name, pair, file and origin; whether its pair's default; loaded now or not), and the
    pairs the service reaches through pivots."""
    listed = [
        {"name": m.name, "source": m.source.code, "target": m.target.code, "path": m.path,
         **m.about, "default": models.by_pair[m.source.code, m.target.code] is m,
         "weights_mib": round(m.weights_bytes / 2**20, 1), "loaded": m.engine is not None}
        for m in models.all
    ]  # fmt: skip
    serve = {name: getattr(settings, name) for name in CLIENT_SETTINGS}
    serve["api_key_needed"] = bool(settings.api_keys)
    return {**facts, "serve": serve, "models": listed, "pivoted": models.pivoted()}


def model_info(engine: Engine) -> dict:
    vocabs = {"source": engine.src_vocab, "target": engine.tgt_vocab}
    info = engine.facts()  # engine, device, config, checkpoint (step, valid scores, example)
    info["example"] = info["checkpoint"].get("example", "")  # what the page shows first
    info["attention"] = engine.shows_attention  # whether POST /attention answers
    info["vocab"] = {
        side: {"size": len(vocab), "pieces": vocab.all_pieces()} for side, vocab in vocabs.items()
    }
    return info
