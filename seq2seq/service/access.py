"""Who may use the translation service, and how often: the Host and Origin guard, CORS, API
keys with their limits, and a per-client rate limit.

    serve.api_keys: a file, env:NAME, or a keys database (.db: keystore.py, each key with its
      own limits, managed by `python -m seq2seq.keys`)  ->  ApiKeys.load (at start-up; a
      database is read again when it changes, so that keys added or removed count at once)
    every request
      Guard, before anything: a Host not this service's -> 400 (DNS rebinding); a POST from a
        page of another origin -> 403, unless serve.cors_origins allows it; every answer gets
        SECURITY_HEADERS
      then CORS: Starlette's middleware for the pages of serve.cors_origins (cross_origin)
    a POST request (/translate, /attention, /detect, /suggest)
      RateLimit, before any route: the client's address (the connection's; the one
        X-Forwarded-For names only from serve.trusted_proxies) has a bucket of
        serve.requests_per_minute tokens, refilled at that rate (and one of requests_per_hour,
        one of requests_per_day, where set); a POST takes one of each, and one that finds
        none gets 429 {"error": "Slowdown: ..."} with Retry-After
      the route: ApiKeys.check(the key it was given) -> 403 unless it is one of the keys
        (looked up by its SHA-256); a key over its own requests a minute -> 429; its limits,
        for the route to hold its texts to (check_chars); no keys: anyone may

Where a request puts its key: the header `Authorization: Bearer KEY`, on every POST; or, on
LibreTranslate's requests (libretranslate.py), their `api_key` field, as LibreTranslate's
clients send it. GET requests (the page, /health, /info, /languages, /openapi.json) need none,
so the page is for keyless use: with keys set, its translations get the 403's error.
"""

import ipaddress
import math
import os
import sys
import time
from collections import OrderedDict
from pathlib import Path
from urllib.parse import urlsplit

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request

from seq2seq.config import ServeConfig
from seq2seq.service.api import HTTPError, error_response
from seq2seq.service.keystore import KeyLimits, KeyStore, digest
from seq2seq.support.errors import UserError

LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")

# On every answer: no content-type guessing; the page's scripts, styles and requests from
# this service only, and no other site may frame it.
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"content-security-policy", b"default-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
     b"form-action 'none'"),
]  # fmt: skip


class Guard:
    """Before any route: a request whose Host is not this service is refused, so that a web
    page on another name that resolves here (DNS rebinding) cannot read or spend it; so is a
    POST that a page of another origin sends (a form: browsers send those without asking),
    unless serve.cors_origins allows that origin. Every answer gets SECURITY_HEADERS."""

    def __init__(self, app, settings: ServeConfig):
        self.app, self.settings = app, settings

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        host = headers.get(b"host", b"").decode("latin-1")
        origin = headers.get(b"origin", b"").decode("latin-1")
        if not self.allowed(scope):
            message = (
                f"Host {host!r} is not served here: use this service's address or localhost, "
                "or add the name to serve.allowed_hosts"
            )
            return await error_response(400, message)(scope, receive, send)
        if scope["method"] == "POST" and origin and not self.same_or_allowed(origin, host):
            message = (
                f"a request from a page of {origin} is refused: allow it in serve.cors_origins"
            )
            return await error_response(403, message)(scope, receive, send)

        async def send_securely(message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message["headers"], *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, send_securely)

    def same_or_allowed(self, origin: str, host: str) -> bool:
        """Whether a page of `origin` may POST: the service's own page, or one allowed."""
        allowed = self.settings.cors_origins
        return (
            urlsplit(origin).netloc.lower() == host.lower() or origin in allowed or "*" in allowed
        )

    def allowed(self, scope) -> bool:
        host = dict(scope["headers"]).get(b"host", b"").decode("latin-1").lower()
        name = host[1:].partition("]")[0] if host.startswith("[") else host.partition(":")[0]
        ours = {*LOCAL_HOSTS, self.settings.host, scope["server"][0], *self.settings.allowed_hosts}
        return name in ours or "*" in ours


def cross_origin(settings: ServeConfig) -> list[Middleware]:
    """CORS headers for the pages of serve.cors_origins (Starlette's middleware: preflight
    OPTIONS requests included), if any."""
    if not settings.cors_origins:
        return []
    return [
        Middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )
    ]


class ApiKeys:
    """The keys a request may present, by their SHA-256, each with its limits; none (and no
    keys database): the service is open to all."""

    clock = staticmethod(time.monotonic)
    look_every_s = 1.0  # how often a keys database's file is looked at for a change

    required, link = True, ""  # serve.keys_required, serve.api_key_link: build_app's

    def __init__(self, keys: list[str], store: Path | None = None):
        self.keys = {digest(key): KeyLimits() for key in keys}
        self.store, self.changed, self.looked = store, None, -math.inf
        self.buckets: dict[str, Buckets] = {}  # each key's own rate limit, by its digest

    @classmethod
    def load(cls, where: str) -> "ApiKeys":
        """The keys that serve.api_keys names: "" (none), a keys database (.db), a file of keys
        one a line, or env:NAME."""
        if not where:
            return cls([])
        if where.endswith(".db"):
            KeyStore(Path(where)).close()  # there, and a keys database: else a UserError now
            keys = cls([], Path(where))
            keys.refresh()
            return keys
        if where.startswith("env:"):
            name = where.removeprefix("env:")
            text, origin = os.environ.get(name, ""), f"the environment variable {name}"
        else:
            try:
                text, origin = Path(where).read_text(encoding="utf-8"), where
            except (OSError, UnicodeDecodeError) as error:
                raise UserError(f"cannot read the API keys (serve.api_keys): {error}") from None
        keys = text.replace(",", " ").split()
        if not keys:
            raise UserError(f"no API keys in {origin} (serve.api_keys)")
        if not all(key.isascii() and key.isprintable() for key in keys):
            raise UserError(f"{origin}: API keys are printable ASCII (serve.api_keys)")
        return cls(keys)

    def refresh(self) -> None:
        """A keys database's keys read again if its file changed (looked at most once every
        look_every_s seconds)."""
        if self.store is None or (now := self.clock()) - self.looked < self.look_every_s:
            return
        self.looked = now
        changed = self.store.stat().st_mtime_ns if self.store.exists() else None
        if changed is None:  # removed: no key is valid
            self.keys, self.changed = {}, None
        elif changed != self.changed:
            store = KeyStore(self.store)
            self.keys, self.changed = store.limits(), changed
            store.close()

    def __bool__(self) -> bool:
        return bool(self.keys) or self.store is not None

    def check(self, request: Request, field: str | None = None) -> KeyLimits:
        """The limits of the request's key (`field`, LibreTranslate's api_key, else the
        Authorization header's): a 403 unless keys are off, it is one of them, or none is
        given where keys are not required (serve.keys_required), a 429 past
        its own requests a minute. Looked up by its SHA-256, the time taken says nothing of
        how close a wrong key was."""
        self.refresh()
        if not self:
            return KeyLimits()
        presented = field or bearer(request)
        if not presented and not self.required:
            return KeyLimits()  # at the client's own limits (RateLimit)
        if not presented:
            where = f"; get one at {self.link}" if self.link else ""
            raise HTTPError(
                403, f"an API key is needed: Authorization: Bearer KEY (or api_key){where}"
            )
        key = digest(presented)
        limits = self.keys.get(key)
        if limits is None:
            raise HTTPError(403, "Invalid API key")
        if limits.requests_per_minute:
            bucket = self.buckets.setdefault(key, Buckets(limits.requests_per_minute, 60))
            if wait := bucket.take(key):
                most = f"{limits.requests_per_minute} requests per minute at most"
                message = f"Slowdown: this API key may make {most}; try again in {wait} s"
                raise HTTPError(429, message, {"Retry-After": str(wait)})
        return limits


def check_chars(limits: KeyLimits, chars: int, status: int) -> None:
    """A request's texts of `chars` characters within its key's max_chars (else `status`)."""
    if limits.max_chars and chars > limits.max_chars:
        message = f"this API key may send {limits.max_chars} characters a request, not {chars}"
        raise HTTPError(status, message)


def bearer(request: Request) -> str | None:
    """The key of an `Authorization: Bearer KEY` header, if there is one."""
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    return key.strip() if scheme.lower() == "bearer" else None


def warn_if_open(settings: ServeConfig, keys: ApiKeys) -> None:
    """One line on stderr when the service listens beyond this machine without keys."""
    if not keys and not is_local(settings.host):
        print(
            f"warning: serving on {settings.host} without API keys (serve.api_keys): anyone "
            "who can reach this address can use it",
            file=sys.stderr,
        )


def is_local(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name
        return False


class Buckets:
    """A token bucket for each client address: `size` tokens at once, then one every
    `seconds` / `size` s. Bounded memory, O(1) a take: past most_clients, the least recently
    seen is forgotten."""

    clock = staticmethod(time.monotonic)
    most_clients = 10_000

    def __init__(self, size: int, seconds: float):
        self.size, self.rate = size, size / seconds
        # address -> (tokens, when), least recently seen first
        self.buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, client: str) -> int:
        """Takes one of the client's tokens: 0, or the seconds until it has one."""
        now = self.clock()
        tokens, then = self.buckets.pop(client, (self.size, now))
        tokens = min(self.size, tokens + (now - then) * self.rate)
        taken = tokens >= 1
        self.buckets[client] = (tokens - 1 if taken else tokens, now)  # now the most recent
        if len(self.buckets) > self.most_clients:
            self.buckets.popitem(last=False)
        return 0 if taken else math.ceil((1 - tokens) / self.rate)


WINDOWS = (("minute", 60), ("hour", 3600), ("day", 86400))  # serve.requests_per_<window>


class RateLimit:
    """Before any route: each client address may make serve.requests_per_minute POSTs a
    minute, serve.requests_per_hour an hour and serve.requests_per_day a day (Buckets: so many
    at once, then one every window / limit s), each 0 for none."""

    def __init__(self, app, settings: ServeConfig):
        self.app = app
        limits = [(getattr(settings, f"requests_per_{w}"), w, s) for w, s in WINDOWS]
        self.buckets = [(Buckets(n, s), n, w) for n, w, s in limits if n]

    async def __call__(self, scope, receive, send) -> None:
        if self.buckets and scope["type"] == "http" and scope["method"] == "POST":
            client = scope["client"][0] if scope.get("client") else ""
            for buckets, most, window in self.buckets:
                if wait := buckets.take(client):
                    message = (
                        f"Slowdown: {most} requests per {window} at most "
                        f"(serve.requests_per_{window}); try again in {wait} s"
                    )
                    response = error_response(429, message, {"Retry-After": str(wait)})
                    return await response(scope, receive, send)
        await self.app(scope, receive, send)
