"""DeepL's API on the translation service's port, so that the tools that speak it (Weblate's
DeepL backend, DeepL's own client libraries given a server_url, CAT-tool plugins) use the
models: its /v2/translate and /v2/languages here, its glossary routes in glossaries.py.

    POST /v2/translate  {"text": "..." | [...], "target_lang": "DE" | "EN-US" | "PT-BR" ...,
                         "source_lang": "EN" (absent: each text's language detected),
                         "tag_handling": "xml" | "html" (the markup kept as it was, Weblate's
                         <x id="N"/> placeholders too, the text between tags translated),
                         "glossary_id": ID (a kept glossary: glossaries.py),
                         "formality": "default" | "prefer_more" | "prefer_less",
                         "show_billed_characters": true,
                         "context", "split_sentences", "preserve_formatting", "ignore_tags",
                         "non_splitting_tags", "splitting_tags", "outline_detection",
                         "tag_handling_version", "model_type" (accepted, not used)}
                        as JSON, or a form with one text
                        -> {"translations": [{"detected_source_language": "EN", "text": ...,
                            "billed_characters": 12 (if asked)}, ...]}
    GET /v2/languages?type=source | target
                        -> [{"language": "EN", "name": "English"
                             (targets: , "supports_formality": false)}, ...]
    POST /v2/document   multipart/form-data: file, target_lang, source_lang (absent:
                        detected), formality, filename -> {"document_id", "document_key"}:
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
import functools
import hashlib

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from seq2seq.service.file_translation import FileTranslation, attachment
from seq2seq.service.libretranslate import Asked, LibreTranslate, marked_up
from seq2seq.serving import api

TRANSLATE_FIELDS = (
    "text", "target_lang", "source_lang", "tag_handling", "glossary_id", "formality",
    "show_billed_characters", "context", "split_sentences", "preserve_formatting",
    "ignore_tags", "non_splitting_tags", "splitting_tags", "outline_detection",
    "tag_handling_version", "model_type", "auth_key",
)  # fmt: skip
FORMALITIES = ("default", "prefer_more", "prefer_less")  # answered; "more", "less": a 400
OPTIONAL = TRANSLATE_FIELDS[2:]  # all but text and target_lang
# The fields' JSON types, each checked (those accepted and not used too); "text", "formality",
# "tag_handling" and the languages are checked by what they mean.
KINDS = {
    "glossary_id": str, "context": str, "tag_handling_version": str, "model_type": str,
    "auth_key": str, "show_billed_characters": bool, "preserve_formatting": bool,
    "outline_detection": bool, "ignore_tags": list, "non_splitting_tags": list,
    "splitting_tags": list,
}  # fmt: skip
SPLITTING = ("0", "1", "nonewlines")  # split_sentences: accepted; every text is split
DOCUMENT_FIELDS = ("file", "target_lang", "source_lang", "formality", "filename", "auth_key")


def deepl_errors(handler):
    """A route's handler whose errors are answered as DeepL answers them: {"message"}."""

    @functools.wraps(handler)
    async def answering(*args) -> Response:
        try:
            return await handler(*args)
        except api.HTTPError as error:
            return api.json_response({"message": str(error)}, error.status, error.headers)

    return answering


class DeepL:
    """DeepL's /v2/translate, /v2/languages and /v2/document routes, over LibreTranslate's
    way to the models and its file translation."""

    def __init__(self, libretranslate: LibreTranslate, files: FileTranslation):
        self.libretranslate, self.files, self.core = libretranslate, files, libretranslate.core

    def routes(self) -> list[Route]:
        return [
            Route("/v2/translate", self.translate, methods=["POST"]),
            Route("/v2/languages", self.languages, methods=["GET"]),
            Route("/v2/document", self.upload, methods=["POST"]),
            Route("/v2/document/{document_id}", self.status, methods=["POST"]),
            Route("/v2/document/{document_id}/result", self.result, methods=["POST"]),
        ]

    @deepl_errors
    @api.answers(api.STATUSES)
    async def translate(self, request: Request) -> Response:
        fields = await api.Body(request, self.core.settings).fields(TRANSLATE_FIELDS)
        key = api.key_given(request, fields)
        limits = self.core.checks.key(key)
        asked = self.asked(fields)
        translations, detected, _ = await self.libretranslate.translated(
            request, key, limits, asked
        )
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
        glossary = fields.get("glossary_id")
        return Asked(texts, False, tags is not None, source, target, 0, None, None, glossary)

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

    @deepl_errors
    async def languages(self, request: Request) -> Response:
        """GET /v2/languages: its type in the query string, or in a form as the body (DeepL's
        Python client sends it so)."""
        body = api.Body(request, self.core.settings)
        fields = await body.fields(("type",)) if body.media_type in api.FORMS else {}
        kind = fields.get("type") or request.query_params.get("type", "source")
        if kind not in ("source", "target"):
            raise api.HTTPError(400, f"'type' is source or target, not {kind!r}")
        models, served = self.core.models, self.core.models.names()
        codes = models.sources if kind == "source" else models.reached
        listed = [{"language": code.upper(), "name": served[code].name} for code in codes]
        if kind == "target":
            listed = [{**language, "supports_formality": False} for language in listed]
        return api.json_response(listed)

    @deepl_errors
    @api.answers(api.STATUSES)
    async def upload(self, request: Request) -> Response:
        self.files.refuse_if_off()
        body = api.Body(request, self.core.settings, "max_file_bytes")
        upload, fields = await body.file_fields(DOCUMENT_FIELDS, required=("target_lang",))
        limits = self.core.checks.key(api.key_given(request, fields))
        source, target = self.pair(fields)
        formality_checked(fields)
        if "filename" in fields:
            upload.filename = fields["filename"]
        stored = await self.files.kept_translation(request, upload, source, target, limits)
        key = stored.partition(".")[0]
        return api.json_response({"document_id": document_id(key), "document_key": key})

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

    @deepl_errors
    @api.answers(api.STATUSES)
    async def status(self, request: Request) -> Response:
        _, id_ = await self.document(request)
        return api.json_response({"document_id": id_, "status": "done"})

    @deepl_errors
    @api.answers(api.STATUSES)
    async def result(self, request: Request) -> Response:
        path, _ = await self.document(request)
        return attachment(path)


def formality_checked(fields: dict) -> None:
    """A request's formality: one of FORMALITIES (absent: default); "more" or "less" a 400."""
    formality = fields.get("formality", "default")
    if formality not in FORMALITIES:
        raise api.HTTPError(
            400, f"'formality' {formality!r}: no model here has a formal register to choose "
            f"(one of {', '.join(FORMALITIES)})",
        )  # fmt: skip


def document_id(key: str) -> str:
    """A kept document's id: its key's hash, which names no file by itself."""
    return hashlib.sha256(key.encode()).hexdigest()[:32].upper()
