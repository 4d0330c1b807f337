"""The translation service's requests and answers, shared by its two APIs (ours in ours.py,
LibreTranslate's in libretranslate.py): answers and errors as JSON, and a POST's body read
once, within its limits (size, time), and parsed, each mistake an HTTPError that names it.

    a POST -> Body(request, settings): its media type at once; read(): the bytes as they
      stream in, the first time one of the APIs asks (over serve.max_body_bytes -> 413,
      slower than serve.timeout_s -> 408), then from memory; json(): parsed once (400)
"""

import asyncio
import difflib
import json

from starlette.requests import Request
from starlette.responses import Response

from seq2seq.config import ServeConfig

JSON, FORM = "application/json", "application/x-www-form-urlencoded"  # the media types
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


def model_field(fields: dict) -> str | None:
    """A request's "model": the name of one of its pair's models (models.py); absent or null:
    None, the pair's default."""
    name = fields.get("model")
    if name is not None and not isinstance(name, str):
        raise HTTPError(400, f"'model' must be a model's name (a string), got {json.dumps(name)}")
    return name


def check_count(count: int, what: str, status: int, settings: ServeConfig) -> None:
    """serve.max_sentences, the one limit on a request's size: its `count` `what` (texts, or
    texts between tags: a sentence each at least; sentences, once split) past it are the
    client's mistake, answered with `status` (ours: 413, LibreTranslate's: 400)."""
    if count > settings.max_sentences:
        raise HTTPError(
            status,
            f"the request holds {count:,} {what}; the limit is {settings.max_sentences:,} "
            "sentences (serve.max_sentences)",
        )


def check_sentence(sentence: str, what: str, settings: ServeConfig) -> None:
    if len(sentence) > settings.max_chars:
        raise HTTPError(
            413,
            f"{what} has {len(sentence):,} characters; the limit is {settings.max_chars:,} "
            "(serve.max_chars)",
        )
    try:
        sentence.encode("utf-8")
    except UnicodeEncodeError as error:  # JSON's "\ud800": half of a UTF-16 pair
        raise HTTPError(
            400, f"{what} is not valid Unicode: a lone surrogate at character {error.start + 1}"
        ) from None
