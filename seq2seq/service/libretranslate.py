"""LibreTranslate's POST /translate on the translation service's port, so that its clients
(libretranslatepy, apps with a "LibreTranslate URL" setting) can use the model; its other
routes beside it: languages.py (/languages, /frontend/settings, /detect), suggest.py
(/suggest), file_translation.py (/translate_file, /download_file).

    POST /translate  {"q": "three is three" | [...], "source": "en" | "auto", "target": ...,
                      "format": "text" | "html", "alternatives": 2, "api_key": "...",
                      "placeholders": "protect" | "off" (ours: decode.placeholders),
                      "model": "tuned" (ours: one of the pair's models by name, else its
                      first; LibreTranslate's clients send none),
                      "glossary": "ID" | {"Layer": "Ebene"} (ours: a kept glossary's id, a
                      form's only, or its entries inline; source not "auto": glossaries.py),
                      "min_confidence": 0.5, "withheld_as": "source" | "empty" (ours:
                      api.withholding_field)}
                     as JSON, or as a form (application/x-www-form-urlencoded, q a string)
                     -> {"translatedText": str | [str], "alternatives": [...] | [[...]],
                         "detectedLanguage": {"confidence", "language"} | [...],
                         "confidence": number | null | [...] (ours: each text's, from its
                         sentences', all its text nodes' with format html; null: not known:
                         serving/confidences.py),
                         "withheld": bool | [bool] (ours, with a min_confidence in force:
                         whether a sentence of the text was given back untranslated),
                         "fromMemory": bool | [bool] (ours, with serve.memory: each text's
                         answered from the memory, all its text nodes with format html)}

What it translates: each text or (format html) each of its text nodes (markup.py), in a
worker thread past api.INLINE_CHARS characters, as is the answer's shaping; source "auto":
each text's language detected (languages.py); by source language, each group through its
pair's chain (models.py; a group already in the target language is itself, as Argos
Translate translates a language into itself); each text's translation formatted as
LibreTranslate formats it (formatted). A request's whole way, route to answer, is
docs/architecture.md's.
"""

import json
from typing import NamedTuple

from starlette.requests import Request
from starlette.responses import Response

from seq2seq.documents import markup
from seq2seq.service.glossaries import Glossaries, Terms
from seq2seq.service.languages import Languages
from seq2seq.serving.api import (
    FORMS,
    JSON,
    LIBRETRANSLATE,
    Body,
    HTTPError,
    answers,
    check_names,
    json_response,
    key_given,
    model_field,
    off_the_loop,
    placeholders_field,
    text_field,
    withholding_field,
)
from seq2seq.serving.batcher import Options
from seq2seq.serving.checks import Checks
from seq2seq.serving.confidences import Withholding, combined, rounded
from seq2seq.serving.core import Core

TRANSLATE_FIELDS = (
    "q", "source", "target", "format", "alternatives", "api_key", "apiKey", "placeholders",
    "model", "glossary", "min_confidence", "withheld_as",
)  # fmt: skip


class LibreTranslate:
    """LibreTranslate's /translate, over the core (core.py) and its languages (languages.py)."""

    def __init__(self, core: Core, languages: Languages, glossaries: Glossaries):
        self.core, self.languages, self.settings = core, languages, core.settings
        self.glossaries = glossaries

    async def fields(self, body: Body) -> dict | None:
        """A /translate request's fields if it is LibreTranslate's (a form, or a JSON object
        with "q"), else None: ours.py's, which finds `body` read if it is JSON."""
        if body.media_type in FORMS:
            return await body.fields(TRANSLATE_FIELDS)
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

    @answers(LIBRETRANSLATE)
    async def post_translate(self, request: Request, fields: dict) -> Response:
        """POST /translate, LibreTranslate's: its `fields` (see `fields`)."""
        key = key_given(request, fields)
        account = self.core.checks.key(key)
        asked = asked_of(fields, self.core.checks)
        given = await self.translated(request, key, account, asked)
        answer = await off_the_loop(asked.chars, libretranslate_answer, given, asked)
        return json_response(answer)

    async def translated(self, request: Request, key: str | None, account, asked: "Asked"):
        """The request's Given: `asked` of the key `key` (checks.py's `account`); DeepL's
        /v2/translate's too (deepl.py)."""
        chars = asked.chars
        await self.core.checks.charge(account, chars)
        parts, detected = await off_the_loop(chars, self.parts, asked)  # parsing, detecting
        groups = by_source(parts)
        chain = self.core.models.chain  # each group's first: a pair lacking, before decoding
        chains = {s: chain(s, asked.target, asked.model, itself=True) for s in groups}
        options = asked.options(await self.terms(key, asked, chains))
        each: list = [None] * len(parts)  # (translation, from memory, Sentences, withheld)
        for source, numbers in groups.items():
            texts = [parts[number].text for number in numbers]
            translated = await self.core.translate(
                request, chains[source], texts, options, bound=asked.bound
            )
            flags = translated.remembered or [False] * len(numbers)
            held = translated.withheld or [[]] * len(numbers)
            answers = zip(translated.translations, flags, translated.sentences, held, strict=True)
            for number, answer in zip(numbers, answers, strict=True):
                each[number] = answer
        return given(parts, each, detected, asked, self.core.memory is not None)

    async def terms(self, key: str | None, asked: "Asked", chains: dict) -> Terms:
        """The entries of the request's glossary (none: ()); a glossary needs its source
        language named (DeepL's rule too), so its texts have one chain."""
        if asked.glossary is None:
            return ()
        if asked.source == "auto":
            raise HTTPError(400, 'a glossary needs the source language: not "auto"')
        pair = asked.source, asked.target
        return await self.glossaries.terms(key, asked.glossary, chains[asked.source], pair)

    def parts(self, asked: "Asked") -> tuple[list["Part"], list[dict] | None]:
        """What the request translates: each text, or (format html) each of its text nodes,
        with its source language; and source auto's detected language of each text (else
        None)."""
        nodes = [
            markup.texts(text, asked.ignored) if asked.html else [text] for text in asked.texts
        ]
        self.core.checks.sentences(sum(map(len, nodes)), asked.what)
        detected = None
        sources = [asked.source] * len(nodes)
        if asked.source == "auto":
            detected = [self.languages.detected(text) for text in asked.texts]
            sources = [language["language"] for language in detected]
        parts = [
            Part(n, s, of)
            for of, (ns, s) in enumerate(zip(nodes, sources, strict=True))
            for n in ns
        ]
        return parts, detected


class Given(NamedTuple):
    """What LibreTranslate's /translate gives (DeepL's too): each part's translation, and
    for each text of q its source language detected (source auto; else None), whether it
    came from the memory (serve.memory; else None), its confidence (from its parts':
    confidences.combined; None: not known) and whether a sentence of it was withheld (a
    bound in force; else None)."""

    translations: list  # each part's, or (Asked.nbest) its n best (score, text), best first
    detected: list[dict] | None
    memory: list[bool] | None
    confidence: list[float | None]
    withheld: list[bool] | None


def given(parts: list["Part"], each: list, detected, asked: "Asked", memory: bool) -> Given:
    """The Given of the request's `parts`, `each` part's (translation, from memory,
    Sentences, withheld)."""
    columns = [list(column) for column in zip(*each, strict=True)] or [[], [], [], []]
    translations, flags, sentences, held = columns
    count = len(asked.texts)
    remembered = [bool(f) and all(f) for f in by_text(parts, flags, count)] if memory else None
    each_sure = by_text(parts, [s.confidence for s in sentences], count)
    sure = list(map(combined, each_sure, by_text(parts, [part.text for part in parts], count)))
    withheld = [any(h) for h in by_text(parts, held, count)] if asked.bound.least else None
    return Given(translations, detected, remembered, sure, withheld)


class Part(NamedTuple):
    """A text to translate (a text of q, or one of its text nodes), its source language, and
    the number of q's text it is (of)."""

    text: str
    source: str
    of: int


def by_text(parts: list[Part], each: list, count: int) -> list[list]:
    """`each` (a value per part) as a list per text of q (`count` of them), its parts'."""
    grouped: list[list] = [[] for _ in range(count)]
    for part, value in zip(parts, each, strict=True):
        grouped[part.of].append(value)
    return grouped


def by_source(parts: list[Part]) -> dict[str, list[int]]:
    """The parts' numbers by source language: each language's translated together."""
    groups: dict[str, list[int]] = {}
    for number, part in enumerate(parts):
        groups.setdefault(part.source, []).append(number)
    return groups


class Asked(NamedTuple):
    """A LibreTranslate /translate request, checked: what to translate, and how to answer."""

    texts: list[str]  # q's
    one: bool  # q was a text, not a list: so is each field of the answer
    html: bool  # format html: the texts' text nodes are translated, the markup kept
    source: str  # a language code, or "auto"
    target: str
    alternatives: int  # how many translations beside the best
    model: str | None  # the name of one of the pair's models; None: its first
    placeholders: str | None  # protect | off; None: each model's decode.placeholders
    glossary: str | dict | None  # a kept glossary's id or its entries (glossaries.py), or none
    bound: Withholding  # what its answer withholds (api.withholding_field)
    split: bool = True  # each text split into its sentences; False: each whole (DeepL's)
    ignored: tuple[str, ...] = ()  # html: the elements whose content is kept (DeepL's ignore_tags)

    @property
    def nbest(self) -> int | None:
        """How many hypotheses each text needs (None: the best only, as text)."""
        return self.alternatives + 1 if self.alternatives and not self.html else None

    @property
    def chars(self) -> int:
        return sum(map(len, self.texts))

    @property
    def what(self) -> str:
        return "texts between tags (format html)" if self.html else "texts"

    def options(self, terms: Terms) -> Options:
        """How its texts are decoded, following `terms` (its glossary's entries)."""
        return Options(None, self.nbest, self.placeholders, terms, self.split)


def asked_of(fields: dict, checks: Checks) -> Asked:
    """A LibreTranslate /translate request's fields, each checked (a 400 naming the mistake;
    `checks`: its texts, its alternatives)."""
    q = fields.get("q")
    if not q:
        raise HTTPError(400, "Invalid request: missing q parameter")
    texts = [q] if isinstance(q, str) else q
    if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
        raise HTTPError(400, "'q' must be a string or a list of strings")
    checks.texts(texts, lambda number: "'q'" if isinstance(q, str) else f"text {number} of 'q'")
    source, target = text_field(fields, "source"), text_field(fields, "target")
    text_format = fields.get("format", "text")
    if text_format not in ("text", "html"):
        raise HTTPError(400, f"{json.dumps(text_format)} format is not supported: text or html")
    alternatives = fields.get("alternatives", 0)
    if isinstance(alternatives, str) and alternatives.isdigit():  # a form's
        alternatives = int(alternatives)
    return Asked(
        texts, isinstance(q, str), text_format == "html", source, target,
        checks.beams(alternatives, "alternatives", spare=1), model_field(fields),
        placeholders_field(fields), fields.get("glossary"),
        withholding_field(fields, checks.settings),
    )  # fmt: skip


def libretranslate_answer(given: Given, asked: Asked) -> dict:
    """The Given translations of the request's parts (Asked.nbest: each its n best (score,
    text), best first) as LibreTranslate's answer: format html, each text's markup with its
    text nodes' translations (no alternatives); else each text's, formatted as LibreTranslate
    formats it (but one from the memory, or with a sentence withheld: as it was given), and
    its alternatives; source auto's language of each text; each text's confidence; whether
    it had a sentence withheld, and (serve.memory) whether it came from the memory."""
    translations = given.translations
    others = [[] for _ in translations]
    if asked.nbest:
        others = [[text for _, text in best[1:]] for best in translations]
        translations = [best[0][1] for best in translations]
    texts = asked.texts
    if asked.html:
        translations = marked_up(translations, asked)
        others = [[] for _ in texts]
    else:
        none = [False] * len(texts)  # as given: from the memory, or with a sentence withheld
        kept = [m or w for m, w in zip(given.memory or none, given.withheld or none, strict=True)]
        translations = [
            t if k else formatted(s, t) for s, t, k in zip(texts, translations, kept, strict=True)
        ]
        others = [
            [t for t in dict.fromkeys(formatted(s, t) for t in alts) if t not in (main, "")]
            for s, alts, main in zip(texts, others, translations, strict=True)
        ]
    shaped = {"translatedText": translations}
    if asked.alternatives:
        shaped["alternatives"] = others
    if given.detected is not None:
        shaped["detectedLanguage"] = given.detected
    shaped["confidence"] = [rounded(sure) for sure in given.confidence]
    if given.withheld is not None:
        shaped["withheld"] = given.withheld
    if given.memory is not None:
        shaped["fromMemory"] = given.memory
    return {key: value[0] for key, value in shaped.items()} if asked.one else shaped


def marked_up(translations: list[str], asked: Asked) -> list[str]:
    """Each text's markup with its text nodes' `translations` in place (format html)."""
    pieces = iter(translations)
    return [markup.put_back(text, pieces, asked.ignored) for text in asked.texts]


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
