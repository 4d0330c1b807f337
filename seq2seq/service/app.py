"""The service's web app: the guards, then the routes of both APIs, and every error as JSON.

a request -> Measure (prometheus.py, with serve.metrics: its route, status and time)
  -> Guard (access.py: a Host not ours -> 400; a POST from another origin's page
  -> 403) -> CORS (serve.cors_origins) -> RateLimit (access.py: 429) -> the route:
    GET  /, /style.css, /app.js, /health, /info      ours.py
    POST /translate   a form, or a JSON object with "q": libretranslate.py; else ours.py
                      (one Body, api.py: the body read once, whichever reads it)
    POST /attention                                  ours.py
    GET  /languages, /frontend/settings,
    POST /detect                                     languages.py
    POST /suggest                                    suggest.py
    POST /translate_file, GET /download_file/NAME    file_translation.py
    POST, GET /v2/glossaries, GET, DELETE /v2/glossaries/ID,
    GET /v2/glossaries/ID/entries,
    GET /v2/glossary-language-pairs                  glossaries.py (DeepL's)
    POST /v2/translate, GET /v2/languages,
    POST /v2/document, /v2/document/ID(/result)      deepl.py (DeepL's: errors {"message"})
    GET  /openapi.json                               openapi.py
    GET  /metrics     serve.metrics (else a 404)     prometheus.py
  any other path or method -> 404, 405
  with serve.url_prefix, e.g. /translate-api: each route under it (Starlette's Mount: GET
    /translate-api/health, the page at /translate-api/, request.url_for's URLs with it),
    GET /translate-api itself -> a redirect to /translate-api/ (the page's own URLs are
    relative to it), and any other path -> the 404; the guards and Measure before all
an error -> {"error": "..."}: an HTTPError, its status (a route's refusal, refusals.py: its
  API's, api.py's answers); a UserError (an empty sentence), 400; Starlette's 404 and 405,
  naming the routes or the methods; the client gone, 499 (nobody reads it); anything else,
  500 (its traceback logged by uvicorn, which then closes the connection)

A request's way from here to its answer, stop by stop, is docs/architecture.md's.
"""

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route, Router

from seq2seq.config import ServeConfig
from seq2seq.localization.suggestions import Suggestions
from seq2seq.service import openapi, prometheus
from seq2seq.service.deepl import DeepL
from seq2seq.service.file_translation import FileTranslation
from seq2seq.service.glossaries import Glossaries
from seq2seq.service.languages import Languages
from seq2seq.service.libretranslate import LibreTranslate
from seq2seq.service.ours import OurApi
from seq2seq.service.suggest import Suggest
from seq2seq.serving.access import Guard, RateLimit, cross_origin, warn_if_open
from seq2seq.serving.api import Body, HTTPError, client_gone, error_response
from seq2seq.serving.checks import Checks
from seq2seq.serving.core import Core
from seq2seq.serving.improving import Improvements
from seq2seq.serving.keystore import ApiKeys
from seq2seq.serving.models import Models
from seq2seq.serving.translation_cache import TranslationCache
from seq2seq.support.errors import UserError


def build_app(models: Models, settings: ServeConfig) -> Starlette:
    """The app over the models (models.py), with the settings in force."""
    keys = ApiKeys.load(settings.api_keys, settings.keys_required, settings.api_key_link)
    warn_if_open(settings, keys)
    cache = TranslationCache(settings.translation_cache)
    kept = settings.suggestions or settings.memory  # what /suggest writes, the memory reads
    where = settings.database or settings.suggestions_file  # the database's, else a file
    suggestions = Suggestions(where) if kept else None
    memory = suggestions if settings.memory else None
    learning = bool(settings.improve_after and settings.suggestions)
    improvements = Improvements(models, settings, suggestions) if learning else None
    core = Core(models, settings, Checks(settings, keys), cache, memory, improvements)
    languages, suggest = Languages(core), Suggest(core, suggestions)
    glossaries = Glossaries(core)
    ours, libretranslate = OurApi(core, glossaries), LibreTranslate(core, languages, glossaries)
    files = FileTranslation(core, languages)

    async def post_translate(request: Request) -> Response:
        body = Body(request, settings)
        fields = await libretranslate.fields(body)
        if fields is not None:
            return await libretranslate.post_translate(request, fields)
        return await ours.post_translate(request, body)

    names = list(dict.fromkeys(model.name for model in models.all))
    choices = openapi.Choices(models.sources, models.reached, names)
    routes = [
        *ours.page_routes(),
        Route("/health", ours.health, methods=["GET"]),
        Route("/info", ours.info, methods=["GET"]),
        Route("/translate", post_translate, methods=["POST"]),
        Route("/attention", ours.attention, methods=["POST"]),
        Route("/languages", languages.list_languages, methods=["GET"]),
        Route("/frontend/settings", languages.frontend_settings, methods=["GET"]),
        Route("/detect", languages.detect, methods=["POST"]),
        Route("/suggest", suggest.suggest, methods=["POST"]),
        Route("/translate_file", files.translate_file, methods=["POST"]),
        Route("/download_file/{name}", files.download_file, methods=["GET"], name="download_file"),
        *glossaries.routes(),
        *DeepL(libretranslate, files).routes(),
        openapi.route(settings, choices, bool(keys)),
    ]
    # with serve.metrics, GET /metrics among the routes and Measure (else neither: no cost)
    measured = prometheus.install(routes, models, settings)
    app = Starlette(
        routes=prefixed(routes, settings.url_prefix),
        middleware=[
            Middleware(Guard, settings=settings),
            *cross_origin(settings),
            Middleware(RateLimit, settings=settings),
        ],
        exception_handlers={
            HTTPError: on_http_error,
            UserError: on_user_error,
            HTTPException: on_starlette_error,
            ClientDisconnect: client_gone,
            Exception: on_failure,
        },
    )
    app.router.redirect_slashes = False  # /health/ is a 404, not a redirect
    app.state.core = core  # the server's, to stop what it started (Server.close)
    for middleware in measured:  # outermost, before the guards: what they refuse counts too
        app.add_middleware(middleware.cls, *middleware.args, **middleware.kwargs)
    return app


def prefixed(routes: list[BaseRoute], prefix: str) -> list[BaseRoute]:
    """The routes under serve.url_prefix (none: as they are), and the prefix itself a redirect
    to the page (prefix + "/")."""
    if not prefix:
        return routes

    async def to_the_page(request: Request) -> Response:
        return RedirectResponse(prefix + "/")

    inner = Router(routes, redirect_slashes=False)  # /translate-api/health/: a 404 too
    return [Route(prefix, to_the_page, methods=["GET"]), Mount(prefix, app=inner)]


def served(routes: list[BaseRoute], prefix: str = "") -> list[tuple[str, str]]:
    """(method, path) of each route, those of a Mount with its path in front; HEAD left out."""
    found = []
    for route in routes:
        if isinstance(route, Mount):
            found += served(route.routes, prefix + route.path)
        else:
            found += [(m, prefix + route.path) for m in sorted(route.methods) if m != "HEAD"]
    return found


async def on_http_error(request: Request, error: HTTPError) -> Response:
    return error_response(error.status, str(error), error.headers)


async def on_user_error(request: Request, error: UserError) -> Response:
    return error_response(400, str(error))  # the request's own mistake: an empty sentence


async def on_starlette_error(request: Request, error: HTTPException) -> Response:
    path, method = request.url.path, request.method
    if error.status_code == 404:
        known = ", ".join(f"{m} {route}" for m, route in served(request.app.routes))
        return error_response(404, f"no {path} here; there are {known}")
    if error.status_code == 405:
        allowed = ", ".join(sorted(error.headers["Allow"].split(", ")))  # a set's order
        return error_response(405, f"{path} takes {allowed}, not {method}", {"Allow": allowed})
    return error_response(error.status_code, error.detail, error.headers)


async def on_failure(request: Request, error: Exception) -> Response:
    return error_response(500, f"{type(error).__name__}: {error}")
