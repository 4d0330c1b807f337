"""The service's API described in OpenAPI 3.1, served at GET /openapi.json.

    the settings in force (limits, keys), the languages and the models' names (app.py)
      -> description(): every route, its request body and its answers, the limits in force
         as the schemas' bounds (maxItems: serve.max_sentences, maximum: max_beam_size, ...)
      -> GET /openapi.json, built once; with serve.url_prefix, the paths are the routes' own
         and `servers: [{"url": "/translate-api"}]` puts the prefix in front of each

tests/service/test_openapi_fuzz.py holds the server to it: a schemathesis fuzz of every route from
this description (no 5xx, each answer as described, each 4xx a JSON error), and the routes
described are the app's routes.
"""

from typing import NamedTuple

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from seq2seq.config import ServeConfig
from seq2seq.service.deepl import FORMALITIES, INCLUDES, NEEDS, OPTIONAL, RESOURCES
from seq2seq.serving.api import FORM, JSON, TSV, json_response
from seq2seq.serving.confidences import INSTEAD


class Choices(NamedTuple):
    """What a request may name: every source, every target the service reaches, every
    model's name."""

    sources: list[str]
    targets: list[str]
    models: list[str]


ERRORS = {
    "400": "a mistake in the request, named (LibreTranslate's too: a text too long, too many "
    "texts or sentences, a language pair the model does not translate)",
    "403": "no API key, or not one of serve.api_keys; ours: its characters of the month used",
    "408": "the body did not arrive within serve.timeout_s",
    "413": "too large: the body (serve.max_body_bytes) or, in our API, a text, the texts' "
    "sentences (serve.max_sentences) or their characters (the API key's max_chars)",
    "415": "a body neither JSON nor, where LibreTranslate's API takes one, a form",
    "429": "over serve.requests_per_minute for this client, or the API key's own limit: "
    "Retry-After says when to try again",
    "500": "a failure while decoding, or keeping glossaries",
    "503": "the decoder's queue is full (Retry-After), or the service is stopping",
}


def route(settings: ServeConfig, choices: Choices, keys: bool) -> Route:
    """GET /openapi.json: the description, with these settings, choices and keys (or none)."""
    body = json_response(description(settings, choices, keys)).body

    async def answer(request: Request) -> Response:
        return Response(body, media_type=JSON)

    return Route("/openapi.json", answer, methods=["GET"])


def description(settings: ServeConfig, choices: Choices, keys: bool) -> dict:
    """The API as served with these settings and choices, with or without API keys (one
    literal, over 50 lines: the whole API reads as one document)."""
    # With keys: ours in the header; LibreTranslate's there or in their api_key field.
    header, header_or_field = [{"bearer": []}], [{"bearer": []}, {}]
    if not keys:
        header = header_or_field = None
    prefix = settings.url_prefix  # the routes' paths follow it: servers names it
    return {
        "openapi": "3.1.0",
        **({"servers": [{"url": prefix}]} if prefix else {}),
        "info": {
            "title": "seq2seq translation service",
            "version": "1",
            "description": "Our API (text, beam_size, nbest) and LibreTranslate's (q, source, "
            "target, ...) on one port: see the README's 'A translation service'.",
        },
        "paths": {
            **(PAGE if settings.page else {}),
            "/health": get("the service is up; what it has decoded", {"type": "object"}),
            "/info": get("the model, its vocabularies, its config, the settings", OBJECT),
            "/openapi.json": get("this description", OBJECT),
            "/languages": get("LibreTranslate's: the model's languages", LANGUAGES),
            "/frontend/settings": get("LibreTranslate's: what its page reads first", FRONTEND),
            "/translate": post(
                "a translation: ours ({text}) or LibreTranslate's ({q, source, target})",
                {
                    JSON: {
                        "schema": {
                            "oneOf": [
                                ours(settings, choices),
                                libretranslate_request(settings, choices, list_q=True),
                            ]
                        }
                    },
                    FORM: {"schema": libretranslate_request(settings, choices)},
                },
                {"oneOf": [TRANSLATIONS, LIBRETRANSLATE_ANSWER]},
                header_or_field,
            ),
            "/attention": post(
                "one sentence's translation and the attention weights (the torch engine)",
                {JSON: {"schema": attention_request(settings)}},
                ATTENTION,
                header,
                extra={"501": "the engine is not torch"},
            ),
            "/detect": post(
                "LibreTranslate's: the text's language, among the service's source languages",
                {media_type: {"schema": detect_request(settings)} for media_type in (JSON, FORM)},
                DETECTIONS,
                header_or_field,
            ),
            "/suggest": post(
                "LibreTranslate's: a better translation s of q, kept to fine-tune the model on",
                {
                    media_type: {"schema": suggest_request(settings, choices)}
                    for media_type in (JSON, FORM)
                },
                strict({"success": {"const": True}}),
                header_or_field,
                extra={
                    "400": "a mistake in the request, or a suggestion refused, saying why: "
                    "empty, too long, a copy of q, in the wrong language",
                    "403": "suggestions are off (serve.suggestions), or a key is needed",
                    "429": "past serve.suggestions_per_hour from one address or one API key, "
                    "or a rate of every request's (Retry-After says when to try again)",
                },
            ),
            "/translate_file": post(
                "LibreTranslate's: a document translated (.docx, .odt, .epub, ...), kept to "
                "download for serve.files_keep_minutes",
                {"multipart/form-data": {"schema": file_request(choices)}},
                strict({"translatedFileUrl": STRING, "confidence": REPORT}),
                header_or_field,
                extra={
                    "403": "file translation is off (serve.files), or a key is needed",
                    "413": "the file (serve.max_file_bytes), its text (serve.max_file_chars) "
                    "or what it unpacks to is too large",
                    "507": "no room on the disk to keep the translated file",
                },
            ),
            "/download_file/{name}": {
                "get": {
                    "summary": "LibreTranslate's: a translated document, by the name its "
                    "translatedFileUrl gave",
                    "parameters": [
                        {"name": "name", "in": "path", "required": True, "schema": STRING}
                    ],
                    "responses": {
                        "200": {
                            "description": "the file",
                            "content": {"application/octet-stream": {"schema": {"type": "string"}}},
                        },
                        "403": error("file translation is off (serve.files)"),
                        "404": error("no such file, or kept past serve.files_keep_minutes"),
                    },
                }
            },
            **in_deepl_shape(glossary_paths(header)),
            **deepl_paths(settings, header),
            **({"/metrics": metrics(settings)} if settings.metrics else {}),
        },  # fmt: skip
        "components": {
            "schemas": {"Error": ERROR, "DeepLError": DEEPL_ERROR},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def page(media_type: str) -> dict:
    return {"get": {"responses": {"200": {"description": "the page", "content": {
        media_type: {"schema": {"type": "string"}}
    }}}}}  # fmt: skip


def get(summary: str, schema: dict) -> dict:
    return {"get": {"summary": summary, "responses": {"200": answer(schema)}}}


def metrics(settings: ServeConfig) -> dict:
    """GET /metrics (serve.metrics): Prometheus' text format; with serve.metrics_auth_token,
    only for that bearer token."""
    operation = {
        "summary": "the service's figures in Prometheus' text format (prometheus.py)",
        "responses": {"200": {"description": "the figures", "content": {
            "text/plain": {"schema": STRING}
        }}},
    }  # fmt: skip
    if settings.metrics_auth_token:
        operation["security"] = [{"bearer": []}]
        operation["responses"]["401"] = error("not serve.metrics_auth_token's bearer token")
    return {"get": operation}


def post(
    summary: str, content: dict, schema: dict, security: list | None, extra=None, ok="200"
) -> dict:
    """`security`: None without keys; else how a key is given. `ok`: the status of an answer."""
    errors = {**ERRORS, **(extra or {})}
    operation = {
        "summary": summary,
        "requestBody": {"required": True, "content": content},
        "responses": {ok: answer(schema)}
        | {status: error(description) for status, description in errors.items()},
    }
    if security is not None:
        operation["security"] = security
    return {"post": operation}


def answer(schema: dict) -> dict:
    return {"description": "the answer", "content": {JSON: {"schema": schema}}}


def error(description: str) -> dict:
    schema = {"$ref": "#/components/schemas/Error"}
    return {"description": description, "content": {JSON: {"schema": schema}}}


def strict(properties: dict, optional: tuple[str, ...] = ()) -> dict:
    """An object of these properties only, all required but the `optional` ones."""
    required = [name for name in properties if name not in optional]
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def sentence(settings: ServeConfig) -> dict:
    return {"type": "string", "maxLength": settings.max_chars}


def beams(settings: ServeConfig) -> dict:
    """beam_size or nbest; null is as if absent."""
    return {"type": ["integer", "null"], "minimum": 1, "maximum": settings.max_beam_size}


PLACEHOLDERS = {"enum": ["protect", "off", None]}  # decode.placeholders; null: the model's
WITHHOLDING = {  # what an answer withholds (api.withholding_field); null: serve's, source
    "min_confidence": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
    "withheld_as": {"enum": [*INSTEAD, None]},
}
FORM_CONFIDENCE = {"type": "string", "pattern": r"^(0(\.[0-9]+)?|1(\.0+)?)$"}  # a form's
# a kept glossary's id, or its entries inline (glossaries.py); null: none
GLOSSARY = {"oneOf": [
    {"type": "string"}, {"type": "object", "additionalProperties": {"type": "string"}},
    {"type": "null"},
]}  # fmt: skip


def model(choices: Choices) -> dict:
    """A model's name (one of the pair's); null: the pair's default."""
    return {"enum": [*choices.models, None]}


def ours(settings: ServeConfig, choices: Choices) -> dict:
    text = {"type": "array", "items": sentence(settings), "maxItems": settings.max_sentences}
    properties = {"text": text, "beam_size": beams(settings), "nbest": beams(settings)}
    properties |= {"source": {"enum": choices.sources}, "target": {"enum": choices.targets}}
    properties |= {"placeholders": PLACEHOLDERS, "model": model(choices), "glossary": GLOSSARY}
    properties |= {"sentences": {"type": ["boolean", "null"]}, **WITHHOLDING}
    return strict(properties, optional=tuple(name for name in properties if name != "text"))


def attention_request(settings: ServeConfig) -> dict:
    return strict({"text": {**sentence(settings), "pattern": r"\S"}})


def libretranslate_request(settings: ServeConfig, choices: Choices, list_q=False):
    text = {**sentence(settings), "minLength": 1}  # in a list, a text may be empty
    texts = {"type": "array", "items": sentence(settings), "minItems": 1}
    texts["maxItems"] = settings.max_sentences
    properties = {
        "q": {"oneOf": [text, texts]} if list_q else text,
        "source": {"enum": ["auto", *choices.sources]},
        "target": {"enum": choices.targets},
        "format": {"enum": ["text", "html"]},
        "alternatives": {"type": "integer", "minimum": 0, "maximum": settings.max_beam_size - 1},
        "api_key": {"type": "string"},
        "apiKey": {"type": "string"},  # api_key, as LibreTranslate's npm client names it
        "placeholders": PLACEHOLDERS,
        "model": model(choices),
        "glossary": GLOSSARY if list_q else STRING,  # a form's: an id
        **WITHHOLDING,
        **({} if list_q else {"min_confidence": FORM_CONFIDENCE}),
    }
    optional = ("format", "alternatives", "api_key", "apiKey", "placeholders", "model")
    return strict(properties, optional=(*optional, "glossary", *WITHHOLDING))


def glossary_paths(security: list | None) -> dict:
    """DeepL's glossary routes (glossaries.py); `security`: how a key is given, or None."""
    create = strict(
        {"name": STRING, "source_lang": STRING, "target_lang": STRING, "entries": STRING,
         "entries_format": {"enum": ["tsv", "csv", "tbx"]}, "api_key": STRING},
        optional=("entries_format", "api_key"),
    )  # fmt: skip
    created = post(
        "DeepL's: a glossary kept, its entries (TSV, CSV; ours: TBX) checked whole first",
        {media_type: {"schema": create} for media_type in (JSON, FORM)},
        GLOSSARY_INFO,
        security,
        ok="201",
    )
    listed = strict({"glossaries": {"type": "array", "items": GLOSSARY_INFO}})
    pair = strict({"source_lang": STRING, "target_lang": STRING})
    pairs = strict({"supported_languages": {"type": "array", "items": pair}})
    tsv = {"description": "the entries", "content": {TSV: {"schema": STRING}}}
    return {
        "/v2/glossaries": {**created, **kept("the glossaries kept", answer(listed), security)},
        "/v2/glossaries/{id}": {
            **kept("a glossary's facts", answer(GLOSSARY_INFO), security, by_id=True),
            **kept("a glossary deleted", {"description": "deleted"}, security, True, "delete"),
        },
        "/v2/glossaries/{id}/entries": kept("a glossary's entries", tsv, security, by_id=True),
        "/v2/glossary-language-pairs": kept("the pairs of glossaries", answer(pairs), security),
        **multilingual_paths(security),
    }


def multilingual_paths(security: list | None) -> dict:
    """DeepL's /v3 glossary routes (glossaries.py): glossaries of dictionaries, editable."""
    dictionary = strict(
        {"source_lang": STRING, "target_lang": STRING, "entries": STRING,
         "entries_format": {"enum": ["tsv", "csv", "tbx"]}},
        optional=("entries_format",),
    )  # fmt: skip
    dictionaries = {"type": "array", "items": dictionary, "minItems": 1}
    body = strict({"name": STRING, "dictionaries": dictionaries})
    edits = strict({"name": STRING, "dictionaries": dictionaries}, ("name", "dictionaries"))
    listed = strict({"glossaries": {"type": "array", "items": MULTILINGUAL_INFO}})
    pair = [{"name": name, "in": "query", "required": True, "schema": STRING}
            for name in ("source_lang", "target_lang")]  # fmt: skip
    entries = strict({"dictionaries": {"type": "array", "items": strict(
        {"source_lang": STRING, "target_lang": STRING, "entries": STRING,
         "entries_format": {"enum": ["tsv"]}}
    )}})  # fmt: skip
    counted = strict({"source_lang": STRING, "target_lang": STRING, "entry_count": NUMBER})
    by_id = {"name": "id", "in": "path", "required": True, "schema": STRING}
    created = post("DeepL's: a glossary of dictionaries kept, each checked whole first",
                   {JSON: {"schema": body}}, MULTILINGUAL_INFO, security, ok="201")  # fmt: skip
    patched = post("DeepL's: a glossary renamed, its dictionaries' entries added",
                   {JSON: {"schema": edits}}, MULTILINGUAL_INFO, security)["post"]  # fmt: skip
    put = post("DeepL's: a dictionary replaced, or added", {JSON: {"schema": dictionary}},
               counted, security)["post"]  # fmt: skip
    for operation in (patched, put):
        operation["parameters"] = [by_id]
        operation["responses"]["404"] = error("no glossary of that id (of this API key's)")
    read = kept("a dictionary's entries", answer(entries), security, by_id=True)
    dropped = kept("a dictionary deleted", {"description": "deleted"}, security, True, "delete")
    for operation in (read["get"], dropped["delete"]):
        operation["parameters"] += pair
        operation["responses"]["400"] = error("a pair no model of the service translates")
    return {
        "/v3/glossaries": {**created, **kept("the glossaries kept", answer(listed), security)},
        "/v3/glossaries/{id}": {
            **kept("a glossary's facts", answer(MULTILINGUAL_INFO), security, by_id=True),
            "patch": patched,
            **kept("a glossary deleted", {"description": "deleted"}, security, True, "delete"),
        },
        "/v3/glossaries/{id}/entries": read,
        "/v3/glossaries/{id}/dictionaries": {"put": put, **dropped},
    }


def deepl_paths(settings: ServeConfig, security: list | None) -> dict:
    """DeepL's /v2/translate, /v2/languages, /v3/languages, /v2/usage and /v2/document
    (deepl.py), its errors {"message"}."""
    text = sentence(settings)
    many = {"type": "array", "items": text, "minItems": 1}
    request = strict(
        {"text": {"oneOf": [text, many]}, "target_lang": STRING, "source_lang": STRING,
         "tag_handling": {"enum": ["xml", "html"]}, "glossary_id": STRING,
         "formality": {"enum": list(FORMALITIES)}, "show_billed_characters": BOOLEAN,
         "context": STRING, "split_sentences": {"enum": ["0", "1", "nonewlines"]},
         "preserve_formatting": BOOLEAN, "ignore_tags": STRINGS, "non_splitting_tags": STRINGS,
         "splitting_tags": STRINGS, "outline_detection": BOOLEAN,
         "tag_handling_version": STRING, "model_type": STRING, "auth_key": STRING,
         "glossary_ids": {**STRINGS, "maxItems": 1}, "custom_instructions": STRINGS},
        optional=OPTIONAL,
    )  # fmt: skip
    translated = strict(
        {"detected_source_language": STRING, "text": STRING, "billed_characters": NUMBER},
        optional=("billed_characters",),
    )
    answer_ = strict({"translations": {"type": "array", "items": translated}})
    translate = post("DeepL's: texts translated", {JSON: {"schema": request}}, answer_, security,
                     QUOTA)  # fmt: skip
    language = strict(
        {"language": STRING, "name": STRING, "supports_formality": BOOLEAN},
        optional=("supports_formality",),
    )
    kind = {"name": "type", "in": "query", "schema": {"enum": ["source", "target"]}}
    languages = get("DeepL's: the languages translated from (source) or into (target)",
                    {"type": "array", "items": language})  # fmt: skip
    languages["get"]["parameters"] = [kind]
    languages["get"]["responses"]["400"] = error("a type neither source nor target")
    usage = get("DeepL's: the characters this key sent this month, and its quota",
                strict({"character_count": NUMBER, "character_limit": NUMBER}))  # fmt: skip
    usage["get"]["responses"]["403"] = error(ERRORS["403"])
    paths = {"/v2/translate": translate, "/v2/languages": languages, "/v2/usage": usage,
             **v3_languages_paths(), **document_paths(security)}  # fmt: skip
    return in_deepl_shape(paths)


def in_deepl_shape(paths: dict) -> dict:
    """`paths` with each refusal in DeepL's shape, {"message"} (api.py's deepl_errors; a
    failure of the service's own, a 500, is its {"error"})."""
    for path in paths.values():
        for operation in path.values():
            for status, response in operation["responses"].items():
                if status[0] == "4":
                    response["content"] = {JSON: {"schema": DEEPL_ERROR_REF}}
    return paths


def v3_languages_paths() -> dict:
    """DeepL's GET /v3/languages?resource= and /v3/languages/resources (deepl.py)."""
    stable = {"enum": ["stable"]}  # all here: no beta, early_access
    language = strict(
        {"lang": STRING, "name": STRING, "usable_as_source": BOOLEAN, "usable_as_target": BOOLEAN,
         "status": stable, "features": {"type": "object",
                                        "additionalProperties": strict({"status": stable})}}
    )  # fmt: skip
    summary = "DeepL's /v3: a resource's languages, usable as a source, a target or both"
    languages = get(summary, {"type": "array", "items": language})
    resource = {"name": "resource", "in": "query", "required": True,
                "schema": {"enum": list(RESOURCES)}}  # fmt: skip
    include = {"name": "include", "in": "query", "schema": {"enum": list(INCLUDES)},
               "description": "repeatable; accepted, not used: all here is stable"}  # fmt: skip
    languages["get"]["parameters"] = [resource, include]
    languages["get"]["responses"]["400"] = error(
        f"no resource, or not one of {', '.join(RESOURCES)}; an include not one of "
        f"{', '.join(INCLUDES)}"
    )
    feature = strict({"name": STRING, **dict.fromkeys(NEEDS, {"const": True})}, optional=NEEDS)
    listed = strict({"name": {"enum": list(RESOURCES)},
                     "features": {"type": "array", "items": feature}})  # fmt: skip
    resources = get("DeepL's /v3: each resource served and its features",
                    {"type": "array", "items": listed})  # fmt: skip
    return {"/v3/languages": languages, "/v3/languages/resources": resources}


def document_paths(security: list | None) -> dict:
    """DeepL's /v2/document routes (deepl.py): upload, status, result."""
    files = {
        "403": "file translation is off (serve.files), or a key is needed",
        "404": "no document of that id and document_key, or kept past serve.files_keep_minutes",
    }
    uploaded = {**files, **QUOTA}
    upload = strict(
        {"file": {"type": "string", "contentMediaType": "application/octet-stream"},
         "target_lang": STRING, "source_lang": STRING, "formality": {"enum": list(FORMALITIES)},
         "filename": STRING, "glossary_id": STRING, "output_format": STRING, "auth_key": STRING},
        optional=("source_lang", "formality", "filename", "glossary_id", "output_format",
                  "auth_key"),
    )  # fmt: skip
    handle = strict({"document_id": STRING, "document_key": STRING})
    keyed = {JSON: {"schema": strict({"document_key": STRING, "auth_key": STRING}, ("auth_key",))}}
    done = strict({"document_id": STRING, "status": {"enum": ["done"]}})
    form = {"multipart/form-data": {"schema": upload}}
    document = post("DeepL's: a document translated, kept", form, handle, security, uploaded)
    polled = post("DeepL's: a document's status", keyed, done, security, files)
    result = post("DeepL's: the translated document", keyed, STRING, security, files)
    result["post"]["responses"]["200"]["content"] = {"application/octet-stream": {"schema": STRING}}
    by_id = [{"name": "document_id", "in": "path", "required": True, "schema": STRING}]
    for operation in (polled, result):
        operation["post"]["parameters"] = by_id
    return {"/v2/document": document, "/v2/document/{document_id}": polled,
            "/v2/document/{document_id}/result": result}  # fmt: skip


def kept(summary: str, ok: dict, security, by_id=False, method="get") -> dict:
    """A DeepL glossary route of `method` other than POST; `by_id`: of a glossary, by its id."""
    statuses = {"200" if method == "get" else "204": ok}
    statuses |= {status: error(ERRORS[status]) for status in ("403", "429", "500")}
    operation = {"summary": f"DeepL's: {summary}", "responses": statuses}
    if by_id:
        operation["parameters"] = [{"name": "id", "in": "path", "required": True, "schema": STRING}]
        statuses["404"] = error("no glossary of that id (of this API key's)")
    if security is not None:
        operation["security"] = security
    return {method: operation}


def detect_request(settings: ServeConfig) -> dict:
    q = {**sentence(settings), "minLength": 1}
    return strict({"q": q, "api_key": {"type": "string"}}, optional=("api_key",))


def suggest_request(settings: ServeConfig, choices: Choices) -> dict:
    text = {"type": "string", "minLength": 1, "maxLength": settings.suggestion_chars}
    properties = {"q": text, "s": text, "source": {"enum": choices.sources}}
    properties |= {"target": {"enum": choices.targets}, "api_key": {"type": "string"}}
    return strict(properties, optional=("api_key",))


def file_request(choices: Choices) -> dict:
    properties = {"file": {"type": "string", "contentMediaType": "application/octet-stream"}}
    properties |= {"source": {"enum": ["auto", *choices.sources]}}
    properties |= {"target": {"enum": choices.targets}, "api_key": {"type": "string"}}
    properties |= {"min_confidence": FORM_CONFIDENCE, "withheld_as": {"enum": [*INSTEAD]}}
    return strict(properties, optional=("api_key", *WITHHOLDING))


PAGE = {"/": page("text/html"), "/style.css": page("text/css"), "/app.js": page("text/javascript")}
OBJECT = {"type": "object"}
STRING, NUMBER = {"type": "string"}, {"type": "number"}
STRINGS = {"type": "array", "items": STRING}
ERROR = strict({"error": STRING})
DEEPL_ERROR = strict({"message": STRING})
DEEPL_ERROR_REF = {"$ref": "#/components/schemas/DeepLError"}
QUOTA = {"456": "the key's characters of the month are used (python -m seq2seq.keys)"}
HYPOTHESES = {"type": "array", "items": strict({"translation": STRING, "score": NUMBER})}
EACH = {"type": "array", "items": {"oneOf": [STRING, HYPOTHESES]}}  # a translation, or n-best
BOOLEAN = {"type": "boolean"}
BOOLEANS = {"type": "array", "items": BOOLEAN}
SIMILARITIES = {"type": "array", "items": {"oneOf": [NUMBER, {"type": "null"}]}}
CONFIDENCE = {"oneOf": [{**NUMBER, "minimum": 0, "maximum": 1}, {"type": "null"}]}  # null: unknown
CONFIDENCES = {"type": "array", "items": CONFIDENCE}
SENTENCES = {"type": "array", "items": {"type": "array", "items": strict(
    {"source": STRING, "translation": STRING, "confidence": CONFIDENCE}
)}}  # fmt: skip
NUMBERS = {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}
TRANSLATIONS = strict(  # memory: each text's from it or not; fuzzy: each repaired by a match's
    {"translations": EACH, "warnings": STRINGS, "confidence": CONFIDENCES,
     "sentences": SENTENCES, "withheld": NUMBERS, "memory": BOOLEANS, "fuzzy": SIMILARITIES},
    optional=("sentences", "withheld", "memory", "fuzzy"),
)  # fmt: skip
DETECTION = strict({"confidence": NUMBER, "language": STRING})
GLOSSARY_INFO = strict(
    {"glossary_id": STRING, "name": STRING, "ready": {"type": "boolean"}, "source_lang": STRING,
     "target_lang": STRING, "creation_time": STRING, "entry_count": {"type": "integer"}}
)  # fmt: skip
MULTILINGUAL_INFO = strict(
    {"glossary_id": STRING, "name": STRING, "creation_time": STRING, "dictionaries": {
        "type": "array", "items": strict(
            {"source_lang": STRING, "target_lang": STRING, "entry_count": {"type": "integer"}}
        )}}
)  # fmt: skip
DETECTIONS = {"type": "array", "items": DETECTION}
LIBRETRANSLATE_ANSWER = strict(
    {
        "translatedText": {"oneOf": [STRING, STRINGS]},
        "alternatives": {"anyOf": [STRINGS, {"type": "array", "items": STRINGS}]},
        "detectedLanguage": {"anyOf": [DETECTION, DETECTIONS]},
        "confidence": {"oneOf": [CONFIDENCE, CONFIDENCES]},  # ours
        "withheld": {"oneOf": [BOOLEAN, BOOLEANS]},  # ours, with a min_confidence in force
        "fromMemory": {"oneOf": [BOOLEAN, BOOLEANS]},  # ours, with serve.memory
    },
    optional=("alternatives", "detectedLanguage", "withheld", "fromMemory"),
)
REPORT = {"oneOf": [{"type": "null"}, strict({  # file_translation.py's confidence_report
    "min_confidence": NUMBER, "below": {"type": "integer"}, "least_sure": {"type": "array",
    "items": strict({"segment": {"type": "integer"}, "confidence": NUMBER, "text": STRING})},
})]}  # fmt: skip
LANGUAGES = {"type": "array", "items": strict({"code": STRING, "name": STRING, "targets": STRINGS})}
NAMED = strict({"code": STRING, "name": STRING})
FRONTEND = strict(
    {
        "charLimit": {"type": "integer"},
        "frontendTimeout": {"type": "integer"},
        "apiKeys": {"type": "boolean"},
        "keyRequired": {"type": "boolean"},
        "suggestions": {"type": "boolean"},
        "filesTranslation": {"type": "boolean"},
        "supportedFilesFormat": STRINGS,
        "language": strict({"source": NAMED, "target": NAMED}),
    }
)
ATTENTION = strict({"translation": STRING, "warnings": STRINGS, "maps": {"type": "array"}})
