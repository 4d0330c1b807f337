"""Glossaries over HTTP: DeepL's routes to keep them (the API Weblate syncs its glossaries
to), and the `glossary` field of both /translate's (ours.py, libretranslate.py).

    POST   /v2/glossaries  {"name", "source_lang", "target_lang", "entries",
                            "entries_format": "tsv" (default) | "csv" | "tbx" (ours)}
                           as JSON or a form -> 201, the glossary's facts (below)
    GET    /v2/glossaries                 -> {"glossaries": [facts, ...]}, oldest first
    GET    /v2/glossaries/{id}            -> its facts: {"glossary_id", "name", "ready",
                                             "source_lang", "target_lang", "creation_time",
                                             "entry_count"}
    DELETE /v2/glossaries/{id}            -> 204
    GET    /v2/glossaries/{id}/entries    -> its entries, text/tab-separated-values
    GET    /v2/glossary-language-pairs    -> {"supported_languages": [{"source_lang",
                                             "target_lang"}, ...]}: each model's pair
    an unknown id -> 404; a mistake in the entries -> 400 naming the line and the fault
    (localization/glossary.py), nothing kept; the glossaries file failing -> 500

The key: `Authorization: DeepL-Auth-Key KEY` (DeepL's clients), or `Bearer KEY`, on every
route of these (the GETs too) where serve.api_keys is set; each key has glossaries of its own
(glossary_store.py). Languages are matched to the models' in any case (EN is en).

A /translate's "glossary" (Glossaries.terms): a kept glossary's id, or its entries inline,
{"source term": "target term"}: checked as a file's, of the request's pair (a glossary's pair
not the request's, a pair with no model of its own, LibreTranslate's source "auto": a 400),
-> the entries as the request's Options' terms (batcher.py), which the engine follows.
"""

import asyncio
import json
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from seq2seq.localization.glossary import (
    FORMATS,
    MAX_NAME_BYTES,
    Glossary,
    checked_entries,
    entries_tsv,
    parse_entries,
)
from seq2seq.serving.api import (
    STATUSES,
    TSV,
    Body,
    HTTPError,
    answers,
    json_response,
    key_given,
    text_field,
)
from seq2seq.serving.core import Core
from seq2seq.serving.glossary_store import GlossaryStore
from seq2seq.serving.models import Model

CREATE_FIELDS = ("name", "source_lang", "target_lang", "entries", "entries_format", "api_key")
Terms = tuple[tuple[str, str], ...]  # a glossary's entries, (source, target) in order


def by_method(path: str, **handlers) -> Route:
    """One route of `path` for all its methods, each with its handler (a 405 names them all;
    HEAD is GET's)."""

    async def answer(request: Request) -> Response:
        method = "get" if request.method == "HEAD" else request.method.lower()
        return await handlers[method](request)

    return Route(path, answer, methods=[method.upper() for method in handlers])


class Glossaries:
    """DeepL's glossary routes, and the glossary of a /translate, over the core (core.py) and
    the glossaries kept in serve.glossaries_file."""

    def __init__(self, core: Core):
        self.core = core
        self.store = GlossaryStore(Path(core.settings.glossaries_file))

    def routes(self) -> list[Route]:
        return [
            by_method("/v2/glossaries", post=self.create, get=self.list_glossaries),
            by_method("/v2/glossaries/{id}", get=self.get, delete=self.delete),
            by_method("/v2/glossaries/{id}/entries", get=self.entries),
            by_method("/v2/glossary-language-pairs", get=self.language_pairs),
        ]

    def owner(self, presented: str | None) -> str:
        """Whose glossaries a request's key sees (the key already checked): its digest, ""
        without keys (keystore.py)."""
        return self.core.checks.keys.limits(presented)[0]

    def checked_owner(self, request: Request, fields: dict | None = None) -> str:
        """The key of a request to these routes checked (checks.py), and its owner."""
        presented = key_given(request, fields)
        self.core.checks.key(presented)
        return self.owner(presented)

    @answers(STATUSES)
    async def create(self, request: Request) -> Response:
        fields = await Body(request, self.core.settings).fields(CREATE_FIELDS)
        owner = self.checked_owner(request, fields)
        name = text_field(fields, "name")
        if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise HTTPError(400, f"'name' has more than {MAX_NAME_BYTES:,} bytes")
        source, target = self.pair_of(fields)
        entries_format = fields.get("entries_format", "tsv")
        if entries_format not in FORMATS:
            raise HTTPError(
                400, f"'entries_format' is tsv, csv or tbx, not {json.dumps(entries_format)}"
            )
        text = text_field(fields, "entries")
        entries = await asyncio.to_thread(parse_entries, text, entries_format, "'entries'",
                                          (source, target))  # fmt: skip
        glossary = Glossary(name, source, target, entries)
        stored = await asyncio.to_thread(self.store.create, glossary, owner)
        return json_response(stored.glossary_info(), 201)

    def pair_of(self, fields: dict) -> tuple[str, str]:
        """A request's source_lang and target_lang: a pair a model of the service translates,
        in its codes (EN, en-de's en)."""
        asked = text_field(fields, "source_lang"), text_field(fields, "target_lang")
        pairs = {(s.lower(), t.lower()): (s, t) for s, t in self.core.models.by_pair}
        pair = pairs.get((asked[0].lower(), asked[1].lower()))
        if pair is None:
            served = ", ".join(f"{s}-{t}" for s, t in self.core.models.by_pair)
            raise HTTPError(
                400, f"no model translates {asked[0]} to {asked[1]}: a glossary is for one "
                f"of {served} (GET /v2/glossary-language-pairs)",
            )  # fmt: skip
        return pair

    @answers(STATUSES)
    async def list_glossaries(self, request: Request) -> Response:
        kept = await asyncio.to_thread(self.store.listed, self.checked_owner(request))
        return json_response({"glossaries": [stored.glossary_info() for stored in kept]})

    async def kept(self, request: Request, look_up):
        """look_up(id, owner) of the store for the glossary a route names (its path's id, the
        request's key's): what it finds, else a 404."""
        owner, id_ = self.checked_owner(request), request.path_params["id"]
        found = await asyncio.to_thread(look_up, id_, owner)
        if not found:
            raise HTTPError(404, f"no glossary {id_} (GET /v2/glossaries lists them)")
        return found

    @answers(STATUSES)
    async def get(self, request: Request) -> Response:
        stored = await self.kept(request, self.store.get)
        return json_response(stored.glossary_info())

    @answers(STATUSES)
    async def delete(self, request: Request) -> Response:
        await self.kept(request, self.store.delete)
        return Response(status_code=204)

    @answers(STATUSES)
    async def entries(self, request: Request) -> Response:
        glossary = await self.kept(request, self.store.glossary)
        return Response(entries_tsv(glossary.entries), media_type=TSV)  # charset=utf-8 added

    @answers(STATUSES)
    async def language_pairs(self, request: Request) -> Response:
        self.checked_owner(request)
        pairs = [{"source_lang": s, "target_lang": t} for s, t in self.core.models.by_pair]
        return json_response({"supported_languages": pairs})

    async def terms(self, presented: str | None, value, chain: list[Model], pair) -> Terms:
        """A /translate's "glossary" `value` (None: none) as the entries its `chain` of models
        follows, for the request's `pair` (source, target) and the key it `presented`."""
        if value is None:
            return ()
        if len(chain) != 1:
            pivots = ", ".join(model.target.code for model in chain[:-1])
            why = f"the pair goes through {pivots}" if chain else "the text is given back as it is"
            raise HTTPError(400, f"a glossary needs a model from {pair[0]} to {pair[1]}: {why}")
        if isinstance(value, str):
            glossary = await asyncio.to_thread(self.store.glossary, value, self.owner(presented))
            if glossary is None:
                raise HTTPError(400, f"'glossary': no glossary {value} (GET /v2/glossaries)")
            served = chain[0].source.code, chain[0].target.code
            if (glossary.source_lang, glossary.target_lang) != served:
                raise HTTPError(
                    400, f"'glossary' {value} is {glossary.source_lang}-{glossary.target_lang}, "
                    f"the request {served[0]}-{served[1]}",
                )  # fmt: skip
            return tuple(glossary.entries.items())
        if isinstance(value, dict) and all(isinstance(t, str) for t in value.values()):
            rows = ((number, s, t) for number, (s, t) in enumerate(value.items(), 1))
            entries = checked_entries(rows, "'glossary'", "entry")
            return tuple(entries.items())
        raise HTTPError(
            400, "'glossary' must be a glossary's id (a string) or its entries, "
            '{"source term": "target term", ...}',
        )  # fmt: skip
