"""The translation service's requests and answers, shared by its two APIs (ours in
seq2seq/serve.py, LibreTranslate's in libretranslate.py): answers and errors as JSON,
and a POST's body read within its limits (size, time) and parsed, each mistake an HTTPError
that names it.
"""

import asyncio
import difflib
import json

from starlette.requests import Request
from starlette.responses import Response

from seq2seq.config import ServeConfig

JSON, FORM = "application/json", "application/x-www-form-urlencoded"


class HTTPError(Exception):
    """A request the server will not answer: the status code and what is wrong."""

    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.headers = status, headers or {}


def json_response(data: dict, status: int = 200, headers: dict | None = None) -> Response:
    # A lone surrogate echoed from a request (an unknown field's name) is written as its JSON
    # escape, \\udXXX, rather than failing the answer.
    body = json.dumps(data, ensure_ascii=False).encode("utf-8", "backslashreplace")
    return Response(body, status, headers, media_type="application/json")


def error_response(status: int, message: str, headers: dict | None = None) -> Response:
    return json_response({"error": message}, status, headers)


def media_type_of(request: Request) -> str:
    return request.headers.get("content-type", "").partition(";")[0].strip().lower()


async def receive(request: Request, limits: ServeConfig) -> bytes:
    """The body, within serve.timeout_s (else a 408) and serve.max_body_bytes (413)."""
    try:
        return await asyncio.wait_for(read_body(request, limits), limits.timeout_s)
    except asyncio.TimeoutError:
        raise HTTPError(
            408, f"the body did not arrive within {limits.timeout_s:g} s (serve.timeout_s)"
        ) from None


async def read_body(request: Request, limits: ServeConfig) -> bytes:
    """The body, as it streams in, up to serve.max_body_bytes: the unread rest of a larger
    one is discarded by uvicorn after the 413, so that a client still sending sees it."""
    limit, declared = limits.max_body_bytes, request.headers.get("content-length")
    if declared is not None and int(declared) > limit:  # h11 checked that it is a number
        raise body_too_large(f"{int(declared):,} bytes", limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise body_too_large(f"more than {limit:,} bytes", limit)
    return bytes(body)


def body_too_large(size: str, limit: int) -> HTTPError:
    return HTTPError(413, f"the body has {size}; the limit is {limit:,} (serve.max_body_bytes)")


def json_object(body: bytes, example: str) -> dict:
    """The body as a JSON object (`example` shows one in the error if it is something else)."""
    try:
        data = json.loads(body)
    except ValueError as error:  # not JSON, not UTF-8, or a number of 5,000 digits
        raise HTTPError(400, f"malformed JSON: {error}") from None
    except RecursionError:
        raise HTTPError(400, "malformed JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise HTTPError(400, f"the body must be a JSON object, like {example}")
    return data


def check_names(fields: dict, names: tuple[str, ...]) -> None:
    """Every field one of `names`; else a 400 naming it, and the nearest name for a typo."""
    for key in fields:
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise HTTPError(400, f"unknown field '{key}'{hint}; the fields: {', '.join(names)}")


def check_sentence(sentence: str, what: str, limits: ServeConfig) -> None:
    if len(sentence) > limits.max_chars:
        raise HTTPError(
            413,
            f"{what} has {len(sentence):,} characters; the limit is {limits.max_chars:,} "
            "(serve.max_chars)",
        )
    try:
        sentence.encode("utf-8")
    except UnicodeEncodeError as error:  # JSON's "\ud800": half of a UTF-16 pair
        raise HTTPError(
            400, f"{what} is not valid Unicode: a lone surrogate at character {error.start + 1}"
        ) from None
