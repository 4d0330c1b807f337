"""DeepL's API on the translation service's port, so that the tools that speak it (Weblate's
DeepL backend, DeepL's own client libraries given a server_url, CAT-tool plugins) use the
models: its /v2/translate, /v2/languages and /v3/languages here, its glossary routes in
glossaries.py.

    POST /v2/translate  {"text": "..." | [...], "target_lang": "DE" | "EN-US" | "PT-BR" ...,
                         "source_lang": "EN" (absent: each text's language detected),
                         "tag_handling": "xml" | "html" (the markup kept as it was, Weblate's
                         <x id="N"/> placeholders too, the text between tags translated),
                         "glossary_id": ID (a kept glossary: glossaries.py),
                         "formality": "default" | "prefer_more" | "prefer_less",
                         "show_billed_characters": true,
                         "split_sentences": "0" (each text whole) | "1" | "nonewlines",
                         "context", "preserve_formatting", "ignore_tags",
                         "non_splitting_tags", "splitting_tags", "outline_detection",
                         "tag_handling_version", "model_type", "custom_instructions"
                         (accepted, not used), "glossary_ids": [ID] (one)}
                        as JSON, or a form (text once or more; a boolean 1, 0, true or
                        false; a list's tags repeated or comma-separated)
                        -> {"translations": [{"detected_source_language": "EN", "text": ...,
                            "billed_characters": 12 (if asked)}, ...]}
    GET /v2/languages?type=source | target
                        -> [{"language": "EN", "name": "English"
                             (targets: , "supports_formality": false)}, ...]
    GET /v3/languages?resource=translate_text | translate_document | glossary
                        (&include=beta | external: accepted, everything here is stable)
                        -> [{"lang": "en" (BCP 47's case: en-US, zh-Hans), "name": "English",
                             "usable_as_source": true, "usable_as_target": false,
                             "status": "stable", "features": {"tag_handling": {"status":
                             "stable"}, ...}}, ...]: each language of the resource, usable as
                             a source, a target or both, with what it has (v3_languages);
                             another resource (DeepL's voice, write, style_rules) a 400
    GET /v3/languages/resources -> [{"name": "translate_text", "features": [{"name":
                             "glossary", "needs_source_support": true,
                             "needs_target_support": true}, ...]}, ...]: RESOURCES
    GET /v2/usage       -> {"character_count": the characters the key sent to translate this
                            month (keystore.py: a keys database's keys; else 0),
                            "character_limit": its chars_per_month}; past it, a request to
                            translate is refused (here: a 456, DeepL's status)
    POST /v2/document   multipart/form-data: file, target_lang, source_lang (absent:
                        detected), formality, filename, glossary_id (its source_lang named),
                        output_format (its own: a document comes back in its format)
                        -> {"document_id", "document_key"}:
                        translated at once, as LibreTranslate's /translate_file translates
                        it (file_translation.py), and kept as long (serve.files)
    POST /v2/document/{document_id}         {"document_key"} -> {"document_id", "status":
                                             "done"}
    POST /v2/document/{document_id}/result  {"document_key"} -> the translated document
    (document_key: the random part of the kept file's name, which only its uploader is
    given; document_id: its hash, which names no file by itself; either unknown: a 404)

A DeepL language code is one of the service's (in any case), or a variant of one: EN-US and
EN-GB are en, PT-BR pt, ZH-HANS zh. Formality "more" or "less" is a 400: no model here has a
formal register to choose. The way to the models is LibreTranslate's route's
(LibreTranslate.translated: detection, the markup, each source's chain, the glossary, the
memory), the answer DeepL's. The key: `Authorization: DeepL-Auth-Key KEY` or `auth_key`
(api.py's key_given); every error as DeepL gives it, {"message": "..."}, with its status.
"""

import asyncio
import hashlib
from pathlib import PurePosixPath

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from seq2seq.service.file_translation import MODELS_OWN, FileTranslation, attachment
from seq2seq.service.libretranslate import Asked, LibreTranslate, marked_up
from seq2seq.serving import api
from seq2seq.serving.batcher import Options
from seq2seq.serving.confidences import Withholding

TRANSLATE_FIELDS = (
    "text", "target_lang", "source_lang", "tag_handling", "glossary_id", "formality",
    "show_billed_characters", "context", "split_sentences", "preserve_formatting",
    "ignore_tags", "non_splitting_tags", "splitting_tags", "outline_detection",
    "tag_handling_version", "model_type", "auth_key", "glossary_ids", "custom_instructions",
)  # fmt: skip
FORMALITIES = ("default", "prefer_more", "prefer_less")  # answered; "more", "less": a 400
OPTIONAL = TRANSLATE_FIELDS[2:]  # all but text and target_lang
# The fields' JSON types, each checked (those accepted and not used too); "text", "formality",
# "tag_handling" and the languages are checked by what they mean.
KINDS = {
    "glossary_id": str, "context": str, "tag_handling_version": str, "model_type": str,
    "auth_key": str, "show_billed_characters": bool, "preserve_formatting": bool,
    "outline_detection": bool, "ignore_tags": list, "non_splitting_tags": list,
    "splitting_tags": list, "glossary_ids": list, "custom_instructions": list,
}  # fmt: skip
LISTS = tuple(name for name, kind in KINDS.items() if kind is list)
# In a form: text given once or more, each list's tags repeated or comma-separated, and a
# boolean one of these.
REPEATED, BOOLEANS = ("text", *LISTS), {"0": False, "1": True, "false": False, "true": True}
# split_sentences: 0 each text translated whole; 1 and nonewlines split into its sentences
# (serve.split_sentences), a line break ending one wherever the splitter says
SPLITTING = ("0", "1", "nonewlines")
NO_QUOTA = 1_000_000_000_000  # DeepL's character_limit of an account without one
DOCUMENT_FIELDS = ("file", "target_lang", "source_lang", "formality", "filename",
                   "glossary_id", "output_format", "auth_key")  # fmt: skip
# DeepL's /v3 resources served here (not its voice, write, style_rules), each with the features
# some language of it has here, and whether a pair's source, its target must have one
# (DeepL's needs_source_support, needs_target_support): DeepL.v3_languages says which have.
RESOURCES = {
    "translate_text": {
        "tag_handling": (True, True), "glossary": (True, True), "auto_detection": (True, False),
    },
    "translate_document": {"glossary": (True, True), "auto_detection": (True, False)},
    "glossary": {},
}  # fmt: skip
NEEDS = ("needs_source_support", "needs_target_support")
INCLUDES = ("beta", "external")  # /v3/languages' include: accepted; all here is stable
STABLE = {"status": "stable"}


class DeepL:
    """DeepL's /v2/translate, /v2/languages, /v3/languages and /v2/document routes, over
    LibreTranslate's way to the models and its file translation."""

    def __init__(self, libretranslate: LibreTranslate, files: FileTranslation):
        self.libretranslate, self.files, self.core = libretranslate, files, libretranslate.core

    def routes(self) -> list[Route]:
        return [
            Route("/v2/translate", self.translate, methods=["POST"]),
            Route("/v2/languages", self.languages, methods=["GET"]),
            Route("/v3/languages", self.v3_languages, methods=["GET"]),
            Route("/v3/languages/resources", self.v3_resources, methods=["GET"]),
            Route("/v2/usage", self.usage, methods=["GET"]),
            Route("/v2/document", self.upload, methods=["POST"]),
            Route("/v2/document/{document_id}", self.status, methods=["POST"]),
            Route("/v2/document/{document_id}/result", self.result, methods=["POST"]),
        ]

    @api.deepl_errors
    @api.answers(api.DEEPL)
    async def translate(self, request: Request) -> Response:
        body = api.Body(request, self.core.settings)
        fields = await body.fields(TRANSLATE_FIELDS, REPEATED)
        if body.media_type in api.FORMS:
            fields = form_typed(fields)
        key = api.key_given(request, fields)
        account = self.core.checks.key(key)
        asked = self.asked(fields)
        given = await self.libretranslate.translated(request, key, account, asked)
        translations, detected = given.translations, given.detected
        if asked.html:
            translations = marked_up(translations, asked)
        named = [{"language": asked.source}] * len(asked.texts)  # source_lang given: no detection
        sources = [language["language"] for language in detected or named]
        billed = fields.get("show_billed_characters", False)
        answer = []
        for text, translation, source in zip(asked.texts, translations, sources, strict=True):
            one = {"detected_source_language": source.upper(), "text": translation}
            answer.append({**one, "billed_characters": len(text)} if billed else one)
        return api.json_response({"translations": answer})

    def asked(self, fields: dict) -> Asked:
        """The request's fields as LibreTranslate's route asks (each checked: a 400 naming
        the mistake)."""
        for name, kind in KINDS.items():
            value = fields.get(name, kind())
            if (
                not isinstance(value, kind)
                or kind is list
                and not all(isinstance(item, str) for item in value)
            ):
                what = {str: "a string", bool: "true or false", list: "a list of strings"}
                raise api.HTTPError(400, f"'{name}' must be {what[kind]}")
        if fields.get("split_sentences", "1") not in SPLITTING:
            raise api.HTTPError(400, f"'split_sentences' is one of {', '.join(SPLITTING)}")
        text = fields.get("text")
        texts = [text] if isinstance(text, str) else text
        if not texts or not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise api.HTTPError(400, "'text' must be a text or a list of texts, not empty")
        self.core.checks.texts(texts, lambda number: f"text {number} of 'text'")
        tags = fields.get("tag_handling")
        if tags not in (None, "xml", "html"):
            raise api.HTTPError(400, f"'tag_handling' is xml or html, not {tags!r}")
        formality_checked(fields)
        api.text_field(fields, "target_lang")  # given, a string
        source, target = self.pair(fields)
        glossary, split = glossary_of(fields), fields.get("split_sentences", "1") != "0"
        ignored = tuple(fields.get("ignore_tags", ()))
        bound = Withholding(self.core.settings.min_confidence)  # DeepL's have no field
        return Asked(
            texts, False, tags is not None, source, target, 0, None, None, glossary, bound,
            split, ignored,
        )  # fmt: skip

    def pair(self, fields: dict) -> tuple[str, str]:
        """A request's source_lang ("auto" if absent) and target_lang, in the service's codes."""
        served, source = self.core.models.names(), fields.get("source_lang")
        target = self.code(fields["target_lang"], served, "target_lang")
        return "auto" if source is None else self.code(source, served, "source_lang"), target

    @staticmethod
    def code(asked, served: dict, name: str) -> str:
        """A DeepL language code (`name`'s) as the service's: itself in any case, else the
        language of its variant (EN-US: en); else a 400 naming those served."""
        if not isinstance(asked, str):
            raise api.HTTPError(400, f"'{name}' must be a language code")
        codes = {code.lower(): code for code in served}
        for candidate in (asked.lower(), asked.lower().split("-")[0]):
            if candidate in codes:
                return codes[candidate]
        names = ", ".join(code.upper() for code in served)
        raise api.HTTPError(
            400, f"Value for '{name}' not supported: {asked} (this service: {names})"
        )

    @api.deepl_errors
    async def languages(self, request: Request) -> Response:
        """GET /v2/languages: its type in the query string, or in a form as the body (DeepL's
        Python client sends it so)."""
        body = api.Body(request, self.core.settings)
        fields = await body.fields(("type",)) if body.media_type in api.FORMS else {}
        kind = fields.get("type") or request.query_params.get("type", "source")
        if kind not in ("source", "target"):
            raise api.HTTPError(400, f"'type' is source or target, not {kind!r}")
        models = self.core.models
        codes = models.sources if kind == "source" else models.reached
        listed = [{"language": code.upper(), "name": name} for code, name in self.named(codes)]
        if kind == "target":
            listed = [{**language, "supports_formality": False} for language in listed]
        return api.json_response(listed)

    def named(self, codes) -> list[tuple[str, str]]:
        """Each of `codes` (the service's, in their order) with its language's name: what
        /v2/languages and /v3/languages list, each with the codes in its own case."""
        served = self.core.models.names()
        return [(code, served[code].name) for code in codes]

    @api.deepl_errors
    async def v3_languages(self, request: Request) -> Response:
        """GET /v3/languages?resource=: the resource's languages (v3_sources_targets), each
        with its features: those of RESOURCES[resource] it has here (v3_features)."""
        resource = resource_asked(request.query_params)
        sources, targets = self.v3_sources_targets(resource)
        features, has_one = self.v3_features(resource), sources | targets
        listed = [
            {"lang": bcp47(code), "name": name, "usable_as_source": code in sources,
             "usable_as_target": code in targets, "status": "stable",
             "features": {feature: STABLE for feature, has in features.items() if code in has}}
            for code, name in self.named(c for c in self.core.models.names() if c in has_one)
        ]  # fmt: skip
        return api.json_response(listed)

    def v3_sources_targets(self, resource: str) -> tuple[set[str], set[str]]:
        """A /v3 resource's languages usable as a source, as a target. Text and documents:
        the models' sources, every language they reach (through pivots too), as /v2/languages
        lists them; none for documents while serve.files is off (/v2/document: a 403).
        Glossaries: the languages of the pairs a model translates directly, as
        /v2/glossary-language-pairs lists them, since a glossary is only followed by a direct
        model (glossaries.py); which pairs exactly, that route says (/v3 lists languages: a
        source and a target each of some pair are not always a pair)."""
        models = self.core.models
        if resource == "glossary":
            return {pair[0] for pair in models.by_pair}, {pair[1] for pair in models.by_pair}
        if resource == "translate_document" and not self.core.settings.files:
            return set(), set()
        return set(models.sources), set(models.reached)

    def v3_features(self, resource: str) -> dict[str, set[str]]:
        """The languages that have each of a /v3 resource's features here (RESOURCES):
        tag_handling: all (/v2/translate's tag_handling keeps the markup of any pair);
        glossary: each language of a pair a model translates directly (a glossary through a
        pivot is a 400); auto_detection: every source where a text without source_lang is
        translated (one source language, or a detector among several: languages.py).
        formality: none, no model here has a formal register (/v2/translate's "more" and
        "less" are a 400); a document's markup is kept without tag_handling: documents have
        glossary and auto_detection."""
        models, languages = self.core.models, self.libretranslate.languages
        detects = len(models.sources) == 1 or languages.detector is not None
        has = {
            "tag_handling": set(models.names()),
            "glossary": {code for pair in models.by_pair for code in pair},
            "auto_detection": set(models.sources) if detects else set(),
        }
        return {feature: has[feature] for feature in RESOURCES[resource]}

    @api.deepl_errors
    async def v3_resources(self, request: Request) -> Response:
        """GET /v3/languages/resources: each resource served, with its features (RESOURCES)."""
        listed = [
            {"name": resource, "features": [
                {"name": feature, **{n: True for n, on in zip(NEEDS, needs, strict=True) if on}}
                for feature, needs in features.items()
            ]}
            for resource, features in RESOURCES.items()
        ]  # fmt: skip
        return api.json_response(listed)

    @api.deepl_errors
    @api.answers(api.DEEPL)
    async def usage(self, request: Request) -> Response:
        """The characters the request's key sent this month, and its quota (none: DeepL's
        figure for none, NO_QUOTA)."""
        account = self.core.checks.key(api.key_given(request))
        used = await asyncio.to_thread(self.core.checks.keys.used, account.digest)
        quota = account.limits.chars_per_month or NO_QUOTA
        return api.json_response({"character_count": used, "character_limit": quota})

    @api.deepl_errors
    @api.answers(api.DEEPL)
    async def upload(self, request: Request) -> Response:
        self.files.refuse_if_off()
        body = api.Body(request, self.core.settings, "max_file_bytes")
        upload, fields = await body.file_fields(DOCUMENT_FIELDS, required=("target_lang",))
        key = api.key_given(request, fields)
        account = self.core.checks.key(key)
        source, target = self.pair(fields)
        formality_checked(fields)
        if "filename" in fields:
            upload.filename = fields["filename"]
        own_format(fields.get("output_format"), upload.filename or "")
        options = await self.document_options(key, fields.get("glossary_id"), source, target)
        bound = Withholding(self.core.settings.min_confidence)  # DeepL's have no field
        stored, _ = await self.files.kept_translation(
            request, upload, source, target, account, bound, options
        )
        key = stored.partition(".")[0]
        return api.json_response({"document_id": document_id(key), "document_key": key})

    async def document_options(self, key: str | None, glossary, source: str, target: str):
        """How a document is decoded: each model's own way, following the terms of the
        glossary `glossary` (None: none; its source language named, as DeepL asks)."""
        if glossary is None:
            return MODELS_OWN
        if source == "auto":
            raise api.HTTPError(400, "a glossary needs the document's source_lang")
        chain = self.core.models.chain(source, target, itself=True)
        terms = await self.libretranslate.glossaries.terms(key, glossary, chain, (source, target))
        return Options(terms=terms)

    async def document(self, request: Request):
        """The kept translation a status or result request names (its key checked first),
        and its id; else a 404."""
        self.files.refuse_if_off()
        fields = await api.Body(request, self.core.settings).fields(("document_key", "auth_key"))
        self.core.checks.key(api.key_given(request, fields))
        key, id_ = fields.get("document_key"), request.path_params["document_id"]
        kept = self.files.kept.by_key
        path = await asyncio.to_thread(kept, key) if isinstance(key, str) else None
        if path is None or document_id(key) != id_:
            minutes = self.core.settings.files_keep_minutes
            raise api.HTTPError(
                404, f"no document {id_} of that document_key: each is kept {minutes:g} minutes"
            )
        return path, id_

    @api.deepl_errors
    @api.answers(api.DEEPL)
    async def status(self, request: Request) -> Response:
        _, id_ = await self.document(request)
        return api.json_response({"document_id": id_, "status": "done"})

    @api.deepl_errors
    @api.answers(api.DEEPL)
    async def result(self, request: Request) -> Response:
        path, _ = await self.document(request)
        return attachment(path)


def form_typed(fields: dict) -> dict:
    """A form's fields as JSON would give them (a boolean's "1", "0", "true" or "false"; a
    list's tags), so that one check serves both bodies."""
    typed = dict(fields)
    for name in fields.keys() & KINDS.keys():
        if KINDS[name] is bool:
            typed[name] = BOOLEANS.get(fields[name].lower(), fields[name])
        elif KINDS[name] is list:
            typed[name] = [tag for value in fields[name] for tag in value.split(",") if tag]
    return typed


def glossary_of(fields: dict) -> str | None:
    """A request's glossary: its glossary_id, or its glossary_ids (DeepL's newer field) of
    one; more than one: a 400 (a text follows one glossary here)."""
    ids = [*([fields["glossary_id"]] if "glossary_id" in fields else []),
           *fields.get("glossary_ids", [])]  # fmt: skip
    if len(ids) > 1:
        raise api.HTTPError(400, f"one glossary a request here, not {len(ids)} (glossary_ids)")
    return ids[0] if ids else None


def own_format(asked, filename: str) -> None:
    """A document's output_format (None: not asked): its own (a document is given back in
    the format it came in), else a 400."""
    own = PurePosixPath(filename).suffix.lower().removeprefix(".")
    if asked is not None and (not isinstance(asked, str) or asked.lower() != own):
        raise api.HTTPError(
            400, f"'output_format' {asked!r}: a document is given back in its own format, {own}"
        )


def formality_checked(fields: dict) -> None:
    """A request's formality: one of FORMALITIES (absent: default); "more" or "less" a 400."""
    formality = fields.get("formality", "default")
    if formality not in FORMALITIES:
        raise api.HTTPError(
            400, f"'formality' {formality!r}: target language {fields.get('target_lang')} does "
            "not support formality: no model here has a formal register to choose (one of "
            f"{', '.join(FORMALITIES)})",
        )  # fmt: skip


def resource_asked(query) -> str:
    """A /v3/languages request's resource, one of RESOURCES, and its include (each one of
    INCLUDES, not used); else a 400 naming them."""
    resource = query.get("resource")
    if resource not in RESOURCES:
        why = "missing" if resource is None else f"not supported: {resource}"
        raise api.HTTPError(
            400, f"'resource' {why} (this service: {', '.join(RESOURCES)}; DeepL's voice, "
            "write and style_rules are not served here)",
        )  # fmt: skip
    if unknown := [value for value in query.getlist("include") if value not in INCLUDES]:
        raise api.HTTPError(400, f"'include' is beta or external, not {unknown[0]!r}")
    return resource


def bcp47(code: str) -> str:
    """A service's language code as DeepL's /v3 writes one, in BCP 47's case: the language
    lower case, a script title case (zh-Hans), a region upper case (en-US, pt-BR, es-419)."""
    first, *rest = code.split("-")
    cased = [
        part.title() if len(part) == 4 and part.isalpha()
        else part.upper() if len(part) == 2 or len(part) == 3 and part.isdigit()
        else part.lower()
        for part in rest
    ]  # fmt: skip
    return "-".join([first.lower(), *cased])


def document_id(key: str) -> str:
    """A kept document's id: its key's hash, which names no file by itself."""
    return hashlib.sha256(key.encode()).hexdigest()[:32].upper()
