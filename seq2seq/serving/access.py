"""Who may reach the translation service's routes, and how often: the Host and Origin guard,
CORS, and a per-client rate limit, before any route (the API keys are each route's to check:
checks.py, keystore.py).

    every request
      Guard, before anything: a Host not this service's -> 400 (DNS rebinding); a request
        that CHANGES something, from a page of another origin -> 403, unless
        serve.cors_origins allows it; every answer gets SECURITY_HEADERS
      then CORS: Starlette's middleware for the pages of serve.cors_origins (cross_origin)
    a POST request (/translate, /attention, /detect, /suggest)
      RateLimit, before any route: the client's address (the connection's; the one
        X-Forwarded-For names only from serve.trusted_proxies) has a bucket of
        serve.requests_per_minute tokens, refilled at that rate (and one of requests_per_hour,
        one of requests_per_day, where set: checks.py's Buckets); a POST takes one of each,
        and one that finds none gets 429 {"error": "Slowdown: ..."} with Retry-After
"""

import asyncio
import ipaddress
from urllib.parse import urlsplit

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware

from seq2seq.config import ServeConfig
from seq2seq.serving.api import error_response
from seq2seq.serving.checks import Buckets
from seq2seq.serving.keystore import ApiKeys
from seq2seq.serving.refusals import Slowdown
from seq2seq.support.errors import warn

LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
# The methods that change something (DeepL's glossary routes take PUT, PATCH and DELETE): a
# page of another origin may send them only where serve.cors_origins allows it.
CHANGES = ("POST", "PUT", "PATCH", "DELETE")

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
    request that CHANGES something from a page of another origin (a form's POST: browsers
    send those without asking), unless serve.cors_origins allows that origin. Every answer
    gets SECURITY_HEADERS."""

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
        if scope["method"] in CHANGES and origin and not self.same_or_allowed(origin, host):
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
        """Whether a page of `origin` may change something: the service's own page, or one
        allowed."""
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
            allow_methods=["GET", *CHANGES],
            allow_headers=["Authorization", "Content-Type"],
        )
    ]


def warn_if_open(settings: ServeConfig, keys: ApiKeys) -> None:
    """One line on stderr when the service listens beyond this machine without keys."""
    if not keys and not is_local(settings.host):
        warn(
            f"serving on {settings.host} without API keys (serve.api_keys): anyone who can "
            "reach this address can use it"
        )


def is_local(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name
        return False


WINDOWS = (("minute", 60), ("hour", 3600), ("day", 86400))  # serve.requests_per_<window>


class RateLimit:
    """Before any route: each client address may make serve.requests_per_minute POSTs a
    minute, serve.requests_per_hour an hour and serve.requests_per_day a day (Buckets: so many
    at once, then one every window / limit s), each 0 for none."""

    def __init__(self, app, settings: ServeConfig):
        self.app = app
        limits = [(getattr(settings, f"requests_per_{w}"), w, s) for w, s in WINDOWS]
        storage = settings.limits_storage
        self.buckets = [
            Buckets(n, s, f"{n} requests per {w} at most (serve.requests_per_{w})", w, storage)
            for n, w, s in limits
            if n
        ]
        self.shared = bool(storage)

    def check(self, client: str) -> None:
        for buckets in self.buckets:
            buckets.check(client)

    async def __call__(self, scope, receive, send) -> None:
        if self.buckets and scope["type"] == "http" and scope["method"] == "POST":
            client = scope["client"][0] if scope.get("client") else ""
            try:
                if self.shared:  # a storage's round trip: off the event loop
                    await asyncio.to_thread(self.check, client)
                else:
                    self.check(client)
            except Slowdown as slow:
                response = error_response(429, str(slow), {"Retry-After": str(slow.wait_s)})
                return await response(scope, receive, send)
        await self.app(scope, receive, send)
