"""LibreTranslate's API on the translation service's port, so that its clients (libretranslatepy,
apps with a "LibreTranslate URL" setting) can use the model.

    POST /translate  {"q": "three is three" | [...], "source": "en" | "auto", "target": ...,
                      "format": "text" | "html", "alternatives": 2, "api_key": "...",
                      "placeholders": "protect" | "off" (ours: decode.placeholders),
                      "model": "tuned" (ours: one of the pair's models by name, else its
                      first; LibreTranslate's clients send none)}
                     as JSON, or as a form (application/x-www-form-urlencoded, q a string)
                     -> {"translatedText": str | [str], "alternatives": [...] | [[...]],
                         "detectedLanguage": {"confidence", "language"} | [...]}
    POST /detect     {"q": "..."} (JSON or a form) -> [{"confidence": 0..100, "language"}]
    POST /suggest    {"q": text, "s": its better translation, "source", "target", "api_key"}
                     (JSON or a form) -> {"success": true}, kept (text/suggestions.py) before
                     the answer; 403 unless serve.suggestions; 429 past
                     serve.suggestions_per_hour from one client
    GET  /languages  -> [{"code", "name", "targets": [...]}]: every language of the models
                     (service/models.py), with the targets it reaches
    GET  /frontend/settings -> {"charLimit", "suggestions", "language": {"source", "target"},
                     "filesTranslation", "supportedFilesFormat", ...}: what LibreTranslate's
                     page reads at start-up
    (POST /translate_file and GET /download_file: files.py)

A request's way (app.py asks `fields` whether a /translate request is LibreTranslate's):

    fields: a form, or a JSON object with "q" -> LibreTranslate's; else None, and ours.py
      answers it (from the same Body: api.py, read once)
    post_translate: its key (access.py, 403)
    -> asked: its fields checked (400 naming the mistake) -> Asked
    -> parts, in a worker thread past api.INLINE_CHARS characters (HTML parsing and detection
       take milliseconds on a large request: off the event loop, they hold no other client;
       a small one's cost less than the hand-over): what it translates, each
       text or (format html) each of its text nodes (markup.py), no more than
       serve.max_sentences; source "auto": each text's language detected (candidates)
    -> by source language, translated: each group through its pair's route (models.py: its
       "model" if named; a pair the service lacks: a 400 naming those it has) ->
       Backend.translate (backend.py), as for ours; a group already in the target language
       is itself, as Argos Translate translates a language into itself
    -> libretranslate_answer, in a worker thread too past INLINE_CHARS: LibreTranslate's
       shape, each text's translation formatted as LibreTranslate formats it (formatted);
       format html: put back into its markup
    <- 200 {"translatedText": ...}, or {"error": "..."}: 400, 403, 429 (access.py), 500

The languages are each model's (service/models.py). Detection: with one source language, that
one, with as confidence the share of the text's words its vocabulary knows (0 to 100, as
LibreTranslate's); with several, seq2seq/documents/detection.py's.
"""

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import NamedTuple
from urllib.parse import parse_qsl

from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request
from starlette.responses import Response

from seq2seq.config import ServeConfig
from seq2seq.documents import markup, reading
from seq2seq.documents.detection import Detector
from seq2seq.service.access import Buckets, check_chars
from seq2seq.service.api import (
    FORM,
    FORMS,
    JSON,
    Body,
    HTTPError,
    check_count,
    check_names,
    check_sentence,
    json_response,
    model_field,
    off_the_loop,
    placeholders_field,
)
from seq2seq.service.backend import Backend, Wanted
from seq2seq.service.models import Model
from seq2seq.support.errors import UserError
from seq2seq.text.suggestions import Suggestions

TRANSLATE_FIELDS = (
    "q", "source", "target", "format", "alternatives", "api_key", "apiKey", "placeholders",
    "model",
)  # fmt: skip
DETECT_FIELDS = ("q", "api_key")
SUGGEST_FIELDS = ("q", "s", "source", "target", "api_key")


class LibreTranslate:
    """The routes of LibreTranslate's API, over the backend."""

    def __init__(self, backend: Backend):
        self.backend, self.settings, self.keys = backend, backend.settings, backend.keys
        self.models = backend.models
        on = self.settings.suggestions
        self.suggestions = Suggestions(Path(self.settings.suggestions_file)) if on else None
        self.suggesters = Buckets(self.settings.suggestions_per_hour, 3600)  # by client address
        for option in ("frontend_source", "frontend_target"):
            code, known = getattr(self.settings, option), [*self.models.names(), "auto"]
            if code and code not in known[: None if option == "frontend_source" else -1]:
                raise UserError(f"serve.{option}: {code!r} is not a language of the service's "
                                f"models ({', '.join(self.models.names())})")  # fmt: skip
        self.detector, self.no_detector = None, ""
        if len(self.models.sources) > 1:
            try:
                self.detector = Detector(self.models.sources)
            except UserError as error:  # the extra is missing; a language it does not know
                self.no_detector = str(error)

    @property
    def frontend_languages(self) -> dict:
        """The languages LibreTranslate's page starts with: serve.frontend_source and
        frontend_target, else the first model's (the source: auto where the service detects,
        as LibreTranslate's page starts)."""
        names, default = self.models.names(), self.models.default
        auto = {"code": "auto", "name": "Auto Detect"}
        source = self.settings.frontend_source or default.source.code
        if not self.settings.frontend_source and self.detector is not None:
            source = "auto"
        target = self.settings.frontend_target or default.target.code
        named = {code: {"code": code, "name": names[code].name} for code in names}
        return {"source": auto if source == "auto" else named[source], "target": named[target]}

    async def list_languages(self, request: Request) -> Response:
        return json_response(self.models.languages())

    async def frontend_settings(self, request: Request) -> Response:
        """GET /frontend/settings: what LibreTranslate's own page, and clients that read it
        first, need to know of the service, in LibreTranslate 1.9's fields."""
        return json_response({
            "charLimit": self.settings.max_chars,  # a text's, as the page sends one
            "frontendTimeout": self.settings.frontend_timeout_ms,
            "apiKeys": bool(self.keys),
            "keyRequired": bool(self.keys) and self.keys.required,
            "suggestions": self.settings.suggestions,
            "filesTranslation": self.settings.files,
            "supportedFilesFormat": list(reading.FORMATS) if self.settings.files else [],
            "language": self.frontend_languages,
        })  # fmt: skip

    async def detect(self, request: Request) -> Response:
        fields = await read_fields(request, Body(request, self.settings), DETECT_FIELDS)
        self.keys.check(request, api_key(fields))
        q = fields.get("q")
        if not q or not isinstance(q, str):
            raise HTTPError(400, "Invalid request: missing q parameter (a string)")
        check_text(q, "'q'", self.settings)
        return json_response(self.candidates(q))

    async def suggest(self, request: Request) -> Response:
        """POST /suggest: `s`, a better translation of `q` from `source` to `target`, kept in
        serve.suggestions_file (text/suggestions.py) before the answer."""
        if self.suggestions is None:
            raise HTTPError(403, "Suggestions are disabled on this server.")
        fields = await read_fields(request, Body(request, self.settings), SUGGEST_FIELDS)
        self.keys.check(request, api_key(fields))
        q, s = text_field(fields, "q"), text_field(fields, "s")
        for text, name in ((q, "'q'"), (s, "'s'")):
            check_text(text, name, self.settings)
        source, target = text_field(fields, "source"), text_field(fields, "target")
        self.models.route(source, target)  # a pair the service lacks: a 400 naming its pairs
        if wait := self.suggesters.take(request.client.host if request.client else ""):
            most = f"{self.settings.suggestions_per_hour} suggestions an hour at most"
            message = f"Slowdown: {most} (serve.suggestions_per_hour); try again in {wait} s"
            raise HTTPError(429, message, {"Retry-After": str(wait)})
        await asyncio.to_thread(self.suggestions.add, q, s, source, target)  # synced to disk
        return json_response({"success": True})

    def candidates(self, text: str) -> list[dict]:
        """The text's likely source languages, best first, with their confidence (0 to 100):
        the detector's (seq2seq/documents/detection.py) among the service's source languages;
        with one, that one, its confidence the share of the words its vocabulary knows."""
        if len(self.models.sources) == 1:
            vocab = self.models.default.engine.src_vocab
            words = vocab.normalize(text).split()
            known = 1 - len(vocab.unknown(text)) / len(words) if words else 0.0
            return [{"confidence": round(100 * known, 1), "language": self.models.sources[0]}]
        if self.detector is None:
            raise HTTPError(501, f"no language detection here: {self.no_detector}")
        ranked = self.detector.detect(text)[:3]  # as many as LibreTranslate gives
        return [{"confidence": confidence, "language": code} for code, confidence in ranked]

    def detected(self, text: str) -> dict:
        return self.candidates(text)[0]

    async def fields(self, request: Request, body: Body) -> dict | None:
        """A /translate request's fields if it is LibreTranslate's (a form, or a JSON object
        with "q"), else None: ours.py's, which finds `body` read if it is JSON."""
        if body.media_type in FORMS:
            return await read_fields(request, body, TRANSLATE_FIELDS)
        if body.media_type != JSON:
            return None  # ours.py's 415
        await body.read()  # too large or too slow: the 413 or 408, for either API
        try:
            data = await body.json()
        except HTTPError:
            return None  # malformed: ours.py says what is wrong
        if not (isinstance(data, dict) and "q" in data):
            return None
        check_names(data, TRANSLATE_FIELDS)
        return data

    async def post_translate(self, request: Request, fields: dict) -> Response:
        """POST /translate, LibreTranslate's: its `fields` (see `fields`)."""
        limits = self.keys.check(request, api_key(fields))
        asked = self.asked(fields)
        chars = sum(map(len, asked.texts))
        check_chars(limits, chars, 400)
        parts, detected = await off_the_loop(chars, self.parts, asked)  # parsing, detecting
        groups = by_source(parts)
        routes = {s: self.route(s, asked.target, asked.model) for s in groups}  # any 400 first
        translations: list = [None] * len(parts)
        for source, numbers in groups.items():
            texts = [parts[number].text for number in numbers]
            translated = await self.translated(request, texts, routes[source], asked)
            for number, translation in zip(numbers, translated, strict=True):
                translations[number] = translation
        answer = await off_the_loop(chars, libretranslate_answer, translations, asked, detected)
        return json_response(answer)

    def asked(self, fields: dict) -> "Asked":
        """The request's fields, checked (400 naming the mistake)."""
        texts = q_texts(fields.get("q"), self.settings)
        source, target = text_field(fields, "source"), text_field(fields, "target")
        text_format = fields.get("format", "text")
        if text_format not in ("text", "html"):
            raise HTTPError(400, f"{json.dumps(text_format)} format is not supported: text or html")
        return Asked(
            texts, isinstance(fields["q"], str), text_format == "html", source, target,
            self.alternatives(fields.get("alternatives", 0)), model_field(fields),
            placeholders_field(fields),
        )  # fmt: skip

    def parts(self, asked: "Asked") -> tuple[list["Part"], list[dict] | None]:
        """What the request translates: each text, or (format html) each of its text nodes,
        with its source language; and source auto's detected language of each text (else
        None)."""
        nodes = [markup.texts(text) if asked.html else [text] for text in asked.texts]
        check_count(sum(map(len, nodes)), asked.what, 400, self.settings)
        detected = None
        sources = [asked.source] * len(nodes)
        if asked.source == "auto":
            detected = [self.detected(text) for text in asked.texts]
            sources = [language["language"] for language in detected]
        parts = [Part(n, s) for ns, s in zip(nodes, sources, strict=True) for n in ns]
        return parts, detected

    def route(self, source: str, target: str, model: str | None = None) -> list[Model] | None:
        """The models from `source` to `target` (models.py's route; `model` if named); None
        where the source is the target, a language of the service: its texts are given back
        as they are, as LibreTranslate does."""
        if source == target and source in self.models.names():
            return None
        return self.models.route(source, target, model)

    async def translated(
        self, request: Request, texts: list[str], route: list[Model] | None, asked: "Asked"
    ) -> list:
        """Texts of one source language through their `route` (None: each itself)."""
        if route is None:
            return unchanged(texts, asked.nbest)
        wanted = Wanted(None, asked.nbest, 400, asked.placeholders)
        return (await self.backend.translate(request, route, texts, wanted)).translations

    def alternatives(self, value) -> int:
        """LibreTranslate's alternatives: how many translations beside the best."""
        most = self.settings.max_beam_size - 1
        if isinstance(value, str) and value.isdigit():  # a form's
            value = int(value)
        if type(value) is int and 0 <= value <= most:  # not a bool
            return value
        limit = f"from 0 to {most} (serve.max_beam_size - 1)"
        raise HTTPError(400, f"'alternatives' must be an integer {limit}, got {json.dumps(value)}")


def unchanged(texts: list[str], nbest: int | None) -> list:
    """Texts already in the target language as Argos Translate's identity translation gives
    them: each itself, its one hypothesis (`nbest`: as (score, text) lists)."""
    return [[(0.0, text)] for text in texts] if nbest else list(texts)


class Part(NamedTuple):
    """A text to translate (a text of q, or one of its text nodes) and its source language."""

    text: str
    source: str


def by_source(parts: list[Part]) -> dict[str, list[int]]:
    """The parts' numbers by source language: each language's translated together."""
    groups: dict[str, list[int]] = {}
    for number, part in enumerate(parts):
        groups.setdefault(part.source, []).append(number)
    return groups


@dataclasses.dataclass(frozen=True)
class Asked:
    """A LibreTranslate /translate request, checked: what to translate, and how to answer."""

    texts: list[str]  # q's
    one: bool  # q was a text, not a list: so is each field of the answer
    html: bool  # format html: the texts' text nodes are translated, the markup kept
    source: str  # a language code, or "auto"
    target: str
    alternatives: int  # how many translations beside the best
    model: str | None  # the name of one of the pair's models; None: its first
    placeholders: str | None  # protect | off; None: each model's decode.placeholders

    @property
    def nbest(self) -> int | None:
        """How many hypotheses each text needs (None: the best only, as text)."""
        return self.alternatives + 1 if self.alternatives and not self.html else None

    @property
    def what(self) -> str:
        return "texts between tags (format html)" if self.html else "texts"


def libretranslate_answer(translations: list, asked: Asked, detected: list | None) -> dict:
    """The translations of the request's parts (Asked.nbest: each its n best (score, text),
    best first) as LibreTranslate's answer: format html, each text's markup with its text
    nodes' translations (no alternatives); else each text's, formatted as LibreTranslate
    formats it, and its alternatives; `detected`: source auto's language of each text."""
    others = [[] for _ in translations]
    if asked.nbest:
        others = [[text for _, text in best[1:]] for best in translations]
        translations = [best[0][1] for best in translations]
    texts = asked.texts
    if asked.html:
        pieces = iter(translations)
        translations = [markup.put_back(text, pieces) for text in texts]
        others = [[] for _ in texts]
    else:
        translations = [formatted(s, t) for s, t in zip(texts, translations, strict=True)]
        others = [
            [t for t in dict.fromkeys(formatted(s, t) for t in alts) if t not in (main, "")]
            for s, alts, main in zip(texts, others, translations, strict=True)
        ]
    shaped = {"translatedText": translations}
    if asked.alternatives:
        shaped["alternatives"] = others
    if detected is not None:
        shaped["detectedLanguage"] = detected
    return {key: value[0] for key, value in shaped.items()} if asked.one else shaped


PUNCTUATION = "!?.,;。"  # the marks a translation's end is made to match


def formatted(source: str, translation: str) -> str:
    """A translation as LibreTranslate's API gives it (libretranslate/language.py): ending in
    the source's final punctuation mark, or in none if the source ends in none; a one-word
    source's translation that is one word many times, that word; in the source's case: all
    lower or all upper, else its first letter's. An empty source: ""; no translation: the
    source."""
    source = source.strip()
    if not source or not translation:
        return source
    end = source[-1] if source[-1] in PUNCTUATION else ""
    if translation[-1] in PUNCTUATION and translation[-1] != end:
        translation = translation[:-1]
    if end and not translation.endswith(end):
        translation += end
    words = translation.split()
    if len(source) < 20 and " " not in source and len(words) > 1:
        counts = [words.count(word) for word in set(words)]
        if max(counts) >= 2 * len(counts):  # the "salad" of some models
            translation = words[0]
    if not translation:
        return source
    if source.islower() or source.isupper():
        return translation.lower() if source.islower() else translation.upper()
    if source[0].islower() or source[0].isupper():
        first = translation[0].lower() if source[0].islower() else translation[0].upper()
        return first + translation[1:]
    return translation


async def read_fields(request: Request, body: Body, names: tuple[str, ...]) -> dict:
    """A LibreTranslate request's fields: a JSON object, or a form's (each a string, either
    encoding; `api_key` may also be in the query string, as LibreTranslate takes it)."""
    media_type = body.media_type
    if media_type not in (JSON, *FORMS):
        raise HTTPError(415, f"send the body as JSON or as a form ({FORM}), not {media_type!r}")
    if media_type == JSON:
        fields = await body.json_object('{"q": ...}')
    else:
        data = await body.read()
        pairs = form_pairs(data) if media_type == FORM else await multipart_pairs(request, data)
        fields = dict(pairs)
        if len(fields) < len(pairs):
            raise HTTPError(400, "malformed form: a field is given twice")
        key_in_query(request, fields)
    check_names(fields, names)
    return fields


def key_in_query(request: Request, fields: dict) -> None:
    """A form's api_key may be in the query string instead, as LibreTranslate takes it."""
    if "api_key" in request.query_params and "api_key" not in fields:
        fields["api_key"] = request.query_params["api_key"]


async def multipart_pairs(request: Request, body: bytes, max_files: int = 0) -> list[tuple]:
    """A multipart/form-data body's (name, value) pairs (Starlette's parser, python-multipart,
    on the body already read); a file's value its UploadFile, up to `max_files` of them."""

    async def chunks():
        yield body

    try:
        form = await MultiPartParser(request.headers, chunks(), max_files=max_files).parse()
    except MultiPartException as error:  # what Starlette's request.form() says, as JSON
        raise HTTPError(400, error.message) from None
    return list(form.multi_items())


def form_pairs(body: bytes) -> list[tuple[str, str]]:
    """An application/x-www-form-urlencoded body's (name, value) pairs."""
    try:
        return parse_qsl(body.decode("ascii"), keep_blank_values=True, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise HTTPError(400, "malformed form: not UTF-8 text, percent-encoded") from None


def api_key(fields: dict) -> str | None:
    """The request's key: its api_key, or its apiKey as LibreTranslate's npm client
    (libretranslate 1.0.1) names it (LibreTranslate ignores that one)."""
    for name in ("api_key", "apiKey"):
        if name in fields and not isinstance(fields[name], str):
            raise HTTPError(400, f"'{name}' must be a string, got {json.dumps(fields[name])}")
    return fields.get("api_key") or fields.get("apiKey") or None


def text_field(fields: dict, key: str) -> str:
    value = fields.get(key)
    if not value:
        raise HTTPError(400, f"Invalid request: missing {key} parameter")
    if not isinstance(value, str):
        raise HTTPError(400, f"'{key}' must be a string, got {json.dumps(value)}")
    return value


def q_texts(q, settings: ServeConfig) -> list[str]:
    """q: a text, or a non-empty list of texts, within the limits."""
    if not q:
        raise HTTPError(400, "Invalid request: missing q parameter")
    texts = [q] if isinstance(q, str) else q
    if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
        raise HTTPError(400, "'q' must be a string or a list of strings")
    check_count(len(texts), "texts", 400, settings)
    for number, text in enumerate(texts, 1):
        check_text(text, "'q'" if isinstance(q, str) else f"text {number} of 'q'", settings)
    return texts


def check_text(text: str, what: str, settings: ServeConfig) -> None:
    """Our API's checks of a sentence (api.py); its 413 (too long) is LibreTranslate's 400."""
    try:
        check_sentence(text, what, settings)
    except HTTPError as error:
        raise HTTPError(400, str(error)) from None
