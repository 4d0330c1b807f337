"""Our API, and the page that uses it.

    POST /translate  {"text": ["three is three"], "beam_size": 1, "nbest": 2,
                      "placeholders": "off", "source": "en", "target": "de", "model": "tuned",
                      "glossary": "ID" | {"Layer": "Ebene"}, "sentences": true,
                      "min_confidence": 0.5, "withheld_as": "source" | "empty"}
                     (all but text optional; placeholders: decode.placeholders; source and
                     target: the first model's pair; model: the name of one of the pair's
                     models, else its first: models.py; glossary: a kept glossary's id, or
                     its entries, the terms to follow: glossaries.py; min_confidence: else
                     serve.min_confidence, withheld_as: else source: api.withholding_field)
                     -> {"translations": [...], "warnings": [...], "confidence": [...]}, what
                     translate prints (a text of several sentences: each translated, in the
                     text's spacing), and each text's confidence (0 to 1, from its
                     sentences'; null: not known: serving/confidences.py); with sentences,
                     "sentences": each text's [{"source", "translation", "confidence"}, ...];
                     with a min_confidence in force, "withheld": each text's sentences
                     given back untranslated (or empty), their numbers from 0; with
                     serve.memory, "memory": [true | false, ...], each text's answered from
                     the memory or not (core.py)
    POST /attention  {"text": "three is three"} -> the translation, and the attention weights
                     of every layer and head with their tokens (the torch engine only: 501)
    GET  /health, /info (model, vocabularies, config, limits), / (the page, static/)

app.py hands /translate's here unless it is LibreTranslate's; a request's whole way, route to
answer, is docs/architecture.md's.
"""

import json
from functools import partial
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from seq2seq.config import ServeConfig
from seq2seq.decoding.attention_maps import Attention
from seq2seq.decoding.engines import Engine
from seq2seq.decoding.warnings import numbered
from seq2seq.service.glossaries import Glossaries
from seq2seq.serving.api import (
    JSON,
    STATUSES,
    Body,
    HTTPError,
    answers,
    bearer,
    check_names,
    json_response,
    model_field,
    placeholders_field,
    withholding_field,
)
from seq2seq.serving.batcher import Job, Options
from seq2seq.serving.checks import Checks
from seq2seq.serving.confidences import Sentences, rounded
from seq2seq.serving.core import Answer, Core
from seq2seq.serving.models import Models
from seq2seq.text.sentences import Texts

STATIC = {"/": "index.html", "/style.css": "style.css", "/app.js": "app.js"}
CONTENT_TYPES = {"html": "text/html", "css": "text/css", "js": "text/javascript"}


class OurApi:
    """Our routes and the page's, over the core (core.py)."""

    def __init__(self, core: Core, glossaries: Glossaries):
        self.core, self.settings, self.checks = core, core.settings, core.checks
        self.glossaries = glossaries
        self.facts, self.facts_of = self.first_facts()
        self.pages = {name: static_file(name) for name in STATIC.values()}

    def page_routes(self) -> list[Route]:
        """The page's files; none with serve.page false (LibreTranslate's --disable-web-ui)."""
        if not self.settings.page:
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
        batchers = [model.batcher for model in self.core.models.all]
        counts = {
            "requests": sum(b.requests for b in batchers),
            "batches": sum(b.batches for b in batchers),
            "sentences": sum(b.sentences for b in batchers),
            "queued": sum(b.queued_sentences() for b in batchers),
        }
        if self.core.cache.size:
            counts["cache"] = self.core.cache.figures()
        return json_response({"status": "ok", **counts})

    async def info(self, request: Request) -> Response:
        if self.facts_of != self.core.models.default.version:  # swapped since: versions.py
            self.facts, self.facts_of = self.first_facts()
        info = service_info(self.facts, self.core.models, self.settings)
        if self.core.improvements:
            info["improvement"] = self.core.improvements.state()
        return json_response(info)

    def first_facts(self) -> tuple[dict, str | None]:
        """model_info of the first model (always loaded), and the version they are of."""
        default = self.core.models.default
        return model_info(default.engine), default.version

    @answers(STATUSES)
    async def post_translate(self, request: Request, body: Body) -> Response:
        """POST /translate, ours: `body` may have been read already (app.py)."""
        key = bearer(request)
        account = self.checks.key(key)
        fields = ("text", "beam_size", "nbest", "source", "target", "placeholders", "model",
                  "glossary", "sentences", "min_confidence", "withheld_as")  # fmt: skip
        data = await read_json(body, fields)
        texts = text_list(data, self.checks)
        await self.checks.charge(account, sum(map(len, texts)))
        beam_size, nbest = (beam_field(data, name, self.checks) for name in ("beam_size", "nbest"))
        placeholders, pair = placeholders_field(data), self.pair(data)
        chain = self.core.models.chain(*pair, model_field(data))
        terms = await self.glossaries.terms(key, data.get("glossary"), chain, pair)
        options = Options(beam_size, nbest, placeholders, terms)
        bound, sentences = withholding_field(data, self.settings), flag(data, "sentences")
        translated = await self.core.translate(request, chain, texts, options, bound=bound)
        return json_response(translate_answer(translated, options.nbest is not None, sentences))

    def pair(self, data: dict) -> tuple[str, str]:
        """The request's "source" and "target" (codes); each absent: the first model's."""
        default = self.core.models.default
        pair = data.get("source", default.source.code), data.get("target", default.target.code)
        for key, code in zip(("source", "target"), pair, strict=True):
            if not isinstance(code, str):
                raise HTTPError(
                    400, f"'{key}' must be a language code (a string), got {json.dumps(code)}"
                )
        return pair

    @answers(STATUSES)
    async def attention(self, request: Request) -> Response:
        self.checks.key(bearer(request))
        data = await read_json(Body(request, self.settings), ("text",))
        sentence = one_sentence(data, self.checks)
        model = self.core.models.default
        if not model.engine.shows_attention:
            raise HTTPError(501, "/attention needs our torch model (serve --engine auto or torch)")
        attention = await self.core.run_job(request, model, Job(Texts([sentence]), None))
        return json_response(attention_answer(attention))


# The answers: what the decoder thread gave, as our JSON.


def translate_answer(translated: Answer, ranked: bool, sentences: bool = False) -> dict:
    """/translate's answer: each text's translation (or, `ranked`, its n best, each with its
    score), the warnings of all, "line N" naming the Nth text, and each text's confidence
    (its best translation's); with `sentences`, each text's sentences; with a bound in
    force, those withheld; with serve.memory, whether each came from the memory."""
    translations = translated.translations
    if ranked:
        translations = [[{"translation": t, "score": s} for s, t in best] for best in translations]
    answer = {"translations": translations, "warnings": numbered(translated.warnings)}
    answer["confidence"] = [rounded(each.confidence) for each in translated.sentences]
    if sentences:
        answer["sentences"] = [sentence_list(each) for each in translated.sentences]
    if translated.withheld is not None:
        answer["withheld"] = translated.withheld
    if translated.remembered is not None:
        answer["memory"] = translated.remembered
    if translated.fuzzy is not None and any(score is not None for score in translated.fuzzy):
        answer["fuzzy"] = translated.fuzzy
    return answer


def sentence_list(sentences: Sentences) -> list[dict]:
    """A text's sentences as our answer gives them: each one's source, translation (as given:
    a withheld one's source, or empty) and confidence."""
    return [
        {"source": source, "translation": line, "confidence": rounded(sure)}
        for source, line, sure in zip(
            sentences.split.sentences, sentences.lines, sentences.sure, strict=True
        )
    ]


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


def text_list(data: dict, checks: Checks) -> list[str]:
    """/translate's "text": a list of texts, a sentence or several each."""
    text = data["text"]
    if not isinstance(text, list) or not all(isinstance(sentence, str) for sentence in text):
        raise HTTPError(400, "'text' must be a list of strings (sentences)")
    checks.texts(text, lambda number: f"sentence {number}")
    return text


def one_sentence(data: dict, checks: Checks) -> str:
    """/attention's "text": one sentence."""
    text = data["text"]
    if not isinstance(text, str):
        raise HTTPError(400, "'text' must be a string (one sentence)")
    checks.text(text, "'text'")
    return text


def flag(data: dict, key: str) -> bool:
    """A field that is true or false (absent or null: false)."""
    value = data.get(key)
    if value is not None and not isinstance(value, bool):
        raise HTTPError(400, f"'{key}' must be true or false, got {json.dumps(value)}")
    return bool(value)


def beam_field(data: dict, key: str, checks: Checks) -> int | None:
    """beam_size or nbest: absent (None) or a number of beams within the limit."""
    value = data.get(key)
    return None if value is None else checks.beams(value, key)


def static_file(name: str) -> tuple[str, bytes]:
    content_type = CONTENT_TYPES[name.rpartition(".")[2]]
    return f"{content_type}; charset=utf-8", files("seq2seq.service").joinpath(
        "static", name
    ).read_bytes()


# The settings a client needs to know (its limits), of those in force; not where the files
# are, nor how the service is deployed.
CLIENT_SETTINGS = (
    "max_sentences", "max_chars", "max_body_bytes", "max_beam_size", "timeout_s",
    "requests_per_minute", "suggestions", "suggestions_per_hour", "suggestion_chars",
)  # fmt: skip


def service_info(facts: dict, models: Models, settings: ServeConfig) -> dict:
    """/info: the first model's `facts` (the page's), the settings a client needs, every model
    (its name, pair, file served and origin; the version of its experiment, if it follows
    them: versions.py; whether its pair's default; loaded now or not), and the pairs the
    service reaches through pivots."""
    listed = [
        {"name": m.name, "source": m.source.code, "target": m.target.code, "path": m.served,
         **m.about, **({"version": m.version} if m.versions else {}),
         "default": models.by_pair[m.source.code, m.target.code] is m,
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
