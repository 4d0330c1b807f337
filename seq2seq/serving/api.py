"""The translation service's edge, shared by its two APIs (ours in ours.py, LibreTranslate's
in libretranslate.py and the modules beside it): a POST's body read once, within its limits
(size, time), and parsed, as JSON or a form; its fields; the key it presents; and the
answers, errors included, as JSON, each refusal of the service with its API's status.

    a POST -> Body(request, settings): its media type at once; read(): the bytes as they
      stream in, the first time one of the APIs asks (over serve.max_body_bytes -> 413,
      slower than serve.timeout_s -> 408), then from memory; json(): parsed once (400);
      fields(names): LibreTranslate's, a JSON object or a form (either encoding: 400
      naming a mistake, 415 for another media type); file_fields: a document's multipart form
    a route's refusal (refusals.py: the service's own terms) -> @answers(STATUSES) or
      @answers(LIBRETRANSLATE), around each route: the HTTPError of that API's status

Where a request puts its key (key_given): the header `Authorization: Bearer KEY` (or DeepL's
`DeepL-Auth-Key KEY`), on every POST; or, on LibreTranslate's requests, their `api_key` field
(a form's: also the query string's), as LibreTranslate's clients send it; on DeepL's, its
`auth_key`. GET requests (the page, /health, /info,
/languages, /openapi.json) need none, so the page is for keyless use: with keys set, its
translations get the 403's error.
"""

import asyncio
import contextlib
import difflib
import functools
import json
from urllib.parse import parse_qsl

from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request
from starlette.responses import Response

from seq2seq.config import ServeConfig
from seq2seq.serving.confidences import INSTEAD, Withholding
from seq2seq.serving.refusals import (
    Busy,
    Forbidden,
    Invalid,
    NoRoom,
    OverLimit,
    QuotaUsed,
    Refused,
    Slowdown,
    Stopping,
    Unwanted,
)
from seq2seq.support.errors import UserError

JSON, FORM = "application/json", "application/x-www-form-urlencoded"  # the media types
TSV = "text/tab-separated-values"  # DeepL's glossary entries (glossaries.py)
FORMS = (FORM, "multipart/form-data")  # the two encodings of a form
# A request's work on its text (splitting, HTML, detection) on fewer characters than this runs
# on the event loop: under a millisecond (about 1 us a character on a 2-core Xeon), less than a
# hand-over to a worker thread and back costs the request. More runs in a worker thread: up to
# tens of milliseconds for the largest request, which would hold every other client.
INLINE_CHARS = 1_000


class HTTPError(Exception):
    """A request the server will not answer: the status code and what is wrong."""

    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.headers = status, headers or {}


# Each refusal's status (refusals.py), in our API; LibreTranslate's answers every limit passed
# with a 400, as LibreTranslate does; DeepL's a quota used with its own 456.
STATUSES = {
    Invalid: 400, Unwanted: 400, Forbidden: 403, QuotaUsed: 403, OverLimit: 413,
    Slowdown: 429, Busy: 503, Stopping: 503, NoRoom: 507,
}  # fmt: skip
LIBRETRANSLATE, DEEPL = {**STATUSES, OverLimit: 400}, {**STATUSES, QuotaUsed: 456}


def answers(statuses: dict[type, int]):
    """A route's handler whose refusals are answered with `statuses`' HTTPErrors: Slowdown's
    and Busy's with Retry-After, Stopping's with Connection: close."""

    def wrap(handler):
        @functools.wraps(handler)
        async def answering(*args):
            try:
                return await handler(*args)
            except Refused as refused:
                headers = {}
                if isinstance(refused, (Slowdown, Busy)):
                    headers["Retry-After"] = str(refused.wait_s)
                if isinstance(refused, Stopping):
                    headers["Connection"] = "close"
                raise HTTPError(statuses[type(refused)], str(refused), headers) from None

        return answering

    return wrap


def deepl_errors(handler):
    """A route's handler whose errors (an HTTPError; a UserError: a 400) are answered as
    DeepL answers them: {"message"} (DeepL's routes: deepl.py, glossaries.py)."""

    @functools.wraps(handler)
    async def answering(*args) -> Response:
        try:
            return await handler(*args)
        except HTTPError as error:
            return json_response({"message": str(error)}, error.status, error.headers)
        except UserError as error:  # a glossary's fault
            return json_response({"message": str(error)}, 400)

    return answering


def json_response(data: dict, status: int = 200, headers: dict | None = None) -> Response:
    # A lone surrogate echoed from a request (an unknown field's name) is written as its JSON
    # escape, \\udXXX, rather than failing the answer.
    body = json.dumps(data, ensure_ascii=False).encode("utf-8", "backslashreplace")
    return Response(body, status, headers, media_type=JSON)


def error_response(status: int, message: str, headers: dict | None = None) -> Response:
    return json_response({"error": message}, status, headers)


def client_gone(*args) -> Response:
    """The answer to a client that hung up (an exception handler's arguments ignored)."""
    return error_response(499, "the client went away")  # nobody reads it


async def off_the_loop(chars: int, function, *args):
    """function(*args), for a request's work on `chars` characters: in a worker thread past
    INLINE_CHARS, else here, on the event loop."""
    if chars > INLINE_CHARS:
        return await asyncio.to_thread(function, *args)
    return function(*args)


class Body:
    """A POST's body, read from the client once, by whichever API asks first."""

    def __init__(self, request: Request, settings: ServeConfig, limit: str = "max_body_bytes"):
        self.request, self.settings, self.limit = request, settings, limit  # its option's name
        self.media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        self.bytes: bytes | None = None  # until read
        self.parsed, self.data = False, None  # its JSON, once parsed

    async def read(self) -> bytes:
        """The bytes: from the client the first time (read_body), then from memory."""
        if self.bytes is None:
            self.bytes = await read_body(self.request, self.settings, self.limit)
        return self.bytes

    async def json(self):
        """The body's JSON value (a 400 if it is not JSON)."""
        if not self.parsed:
            self.data, self.parsed = parse_json(await self.read()), True
        return self.data

    async def json_object(self, example: str) -> dict:
        """The body as a JSON object (`example` shows one in the error if it is something
        else)."""
        data = await self.json()
        if not isinstance(data, dict):
            raise HTTPError(400, f"the body must be a JSON object, like {example}")
        return data

    async def fields(self, names: tuple[str, ...], repeated: tuple[str, ...] = ()) -> dict:
        """A request's fields, `names` only: a JSON object, or a form's (each a string, either
        encoding; `api_key` may also be in the query string; those `repeated`, as DeepL's
        `text`, a list of each value given, once or more)."""
        if self.media_type not in (JSON, *FORMS):
            raise HTTPError(
                415, f"send the body as JSON or as a form ({FORM}), not {self.media_type!r}"
            )
        if self.media_type == JSON:
            fields = await self.json_object('{"q": ...}')
        else:
            data = await self.read()
            pairs = form_pairs(data) if self.media_type == FORM else await self.multipart(data)
            fields = {name: [] for name, _ in pairs if name in repeated}
            for name, value in pairs:
                if name in repeated:
                    fields[name].append(value)
                elif name in fields:
                    raise HTTPError(400, f"malformed form: the field '{name}' is given twice")
                else:
                    fields[name] = value
            self.key_in_query(fields)
        check_names(fields, names)
        return fields

    async def file_fields(
        self, names: tuple[str, ...], required: tuple[str, ...] = ()
    ) -> tuple[UploadFile, dict]:
        """A document's request: its file and its other fields, `names` only, those
        `required` strings (a multipart form, one file)."""
        if self.media_type != "multipart/form-data":
            raise HTTPError(400, "Invalid request: missing file parameter (multipart/form-data)")
        fields = dict(await self.multipart(await self.read(), max_files=1))
        check_names(fields, names)
        upload = fields.pop("file", None)
        if not isinstance(upload, UploadFile):
            raise HTTPError(400, "Invalid request: missing file parameter")
        self.key_in_query(fields)
        for name in required:
            text_field(fields, name)
        return upload, fields

    def key_in_query(self, fields: dict) -> None:
        """A form's api_key may be in the query string instead, as LibreTranslate takes it."""
        query = self.request.query_params
        if "api_key" in query and "api_key" not in fields:
            fields["api_key"] = query["api_key"]

    async def multipart(self, body: bytes, max_files: int = 0) -> list[tuple]:
        """A multipart/form-data body's (name, value) pairs (Starlette's parser,
        python-multipart, on the body already read); a file's value its UploadFile, up to
        `max_files` of them."""

        async def chunks():
            yield body

        parser = MultiPartParser(self.request.headers, chunks(), max_files=max_files)
        try:
            form = await parser.parse()
        except MultiPartException as error:  # what Starlette's request.form() says, as JSON
            raise HTTPError(400, error.message) from None
        return list(form.multi_items())


async def read_body(request: Request, settings: ServeConfig, limit: str) -> bytes:
    """The body, within serve.timeout_s (else a 408) and the option `limit` of serve, bytes
    (413): max_body_bytes, or a document's max_file_bytes."""
    try:
        return await asyncio.wait_for(stream_body(request, settings, limit), settings.timeout_s)
    except asyncio.TimeoutError:
        raise HTTPError(
            408, f"the body did not arrive within {settings.timeout_s:g} s (serve.timeout_s)"
        ) from None


async def stream_body(request: Request, settings: ServeConfig, limit: str) -> bytes:
    """The body, as it streams in, up to serve.`limit` bytes: the unread rest of a larger
    one is discarded by uvicorn after the 413, so that a client still sending sees it."""
    most, declared = getattr(settings, limit), request.headers.get("content-length")
    if declared is not None and int(declared) > most:  # h11 checked that it is a number
        raise body_too_large(f"{int(declared):,} bytes", most, limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > most:
            raise body_too_large(f"more than {most:,} bytes", most, limit)
    return bytes(body)


def body_too_large(size: str, most: int, limit: str) -> HTTPError:
    return HTTPError(413, f"the body has {size}; the limit is {most:,} (serve.{limit})")


def form_pairs(body: bytes) -> list[tuple[str, str]]:
    """An application/x-www-form-urlencoded body's (name, value) pairs."""
    try:
        return parse_qsl(body.decode("ascii"), keep_blank_values=True, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise HTTPError(400, "malformed form: not UTF-8 text, percent-encoded") from None


def parse_json(body: bytes):
    try:
        return json.loads(body)
    except ValueError as error:  # not JSON, not UTF-8, or a number of 5,000 digits
        raise HTTPError(400, f"malformed JSON: {error}") from None
    except RecursionError:
        raise HTTPError(400, "malformed JSON: nested too deeply") from None


def check_names(fields: dict, names: tuple[str, ...]) -> None:
    """Every field one of `names`; else a 400 naming it, and the nearest name for a typo."""
    for key in fields:
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise HTTPError(400, f"unknown field '{key}'{hint}; the fields: {', '.join(names)}")


def placeholders_field(fields: dict) -> str | None:
    """A request's "placeholders": protect | off (decode.placeholders); absent or null: None,
    each model's own."""
    value = fields.get("placeholders")
    if value not in (None, "protect", "off"):
        raise HTTPError(
            400, f'\'placeholders\' must be "protect" or "off", got {json.dumps(value)}'
        )
    return value


def withholding_field(fields: dict, settings: ServeConfig) -> Withholding:
    """What a request's answer withholds (confidences.py): its "min_confidence", a number
    from 0 to 1 (a form's as text; absent or null: serve.min_confidence), and its
    "withheld_as", source | empty (absent or null: source)."""
    least, instead = fields.get("min_confidence"), fields.get("withheld_as")
    number = least
    if isinstance(least, str):  # a form's
        with contextlib.suppress(ValueError):
            number = float(least)
    if least is None:
        number = settings.min_confidence
    elif isinstance(number, bool) or not isinstance(number, int | float) or not 0 <= number <= 1:
        raise HTTPError(
            400, f"'min_confidence' must be a number from 0 to 1, got {json.dumps(least)}"
        )
    if instead not in (None, *INSTEAD):
        choices = " or ".join(f'"{choice}"' for choice in INSTEAD)
        raise HTTPError(400, f"'withheld_as' must be {choices}, got {json.dumps(instead)}")
    return Withholding(number, instead or INSTEAD[0])


def model_field(fields: dict) -> str | None:
    """A request's "model": the name of one of its pair's models (models.py); absent or null:
    None, the pair's default."""
    name = fields.get("model")
    if name is not None and not isinstance(name, str):
        raise HTTPError(400, f"'model' must be a model's name (a string), got {json.dumps(name)}")
    return name


def text_field(fields: dict, key: str) -> str:
    """A field that must be a non-empty string: LibreTranslate's q, s, source, target."""
    value = fields.get(key)
    if not value:
        raise HTTPError(400, f"Invalid request: missing {key} parameter")
    if not isinstance(value, str):
        raise HTTPError(400, f"'{key}' must be a string, got {json.dumps(value)}")
    return value


def bearer(request: Request) -> str | None:
    """The key of an `Authorization: Bearer KEY` header, or DeepL's clients' `Authorization:
    DeepL-Auth-Key KEY`, if there is one."""
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    return key.strip() if scheme.lower() in ("bearer", "deepl-auth-key") else None


KEY_FIELDS = ("api_key", "apiKey", "auth_key")  # LibreTranslate's, its npm client's, DeepL's


def key_given(request: Request, fields: dict | None = None) -> str | None:
    """The key a request presents: its `fields`' api_key (LibreTranslate's), apiKey (as
    LibreTranslate's npm client, libretranslate 1.0.1, names it; LibreTranslate ignores that
    one) or auth_key (DeepL's, deprecated there); else its Authorization header's."""
    fields = fields or {}
    for name in KEY_FIELDS:
        if name in fields and not isinstance(fields[name], str):
            raise HTTPError(400, f"'{name}' must be a string, got {json.dumps(fields[name])}")
    return next((fields[name] for name in KEY_FIELDS if fields.get(name)), None) or bearer(request)
