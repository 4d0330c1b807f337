"""Glossaries over HTTP: DeepL's routes to keep them (the API Weblate syncs its glossaries
to: /v2's, one pair a glossary, and /v3's, a glossary of dictionaries, editable), and the
`glossary` field of every /translate (ours.py, libretranslate.py, deepl.py).

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
    POST   /v3/glossaries  {"name", "dictionaries": [{"source_lang", "target_lang",
                            "entries", "entries_format"}, ...]} -> 201, its multilingual facts:
                           {"glossary_id", "name", "dictionaries": [{"source_lang",
                            "target_lang", "entry_count"}, ...], "creation_time"}
    GET    /v3/glossaries                 -> {"glossaries": [facts, ...]}
    GET    /v3/glossaries/{id}            -> its facts
    PATCH  /v3/glossaries/{id}            {"name"?, "dictionaries"?} -> its facts: renamed,
                                             each dictionary's entries added to its pair's
                                             (a source term's replacing the one kept)
    DELETE /v3/glossaries/{id}            -> 204
    GET    /v3/glossaries/{id}/entries?source_lang=&target_lang=
                                          -> {"dictionaries": [{"source_lang", "target_lang",
                                             "entries": TSV, "entries_format": "tsv"}]}
    PUT    /v3/glossaries/{id}/dictionaries  a dictionary -> its pair's replaced (or added):
                                          {"source_lang", "target_lang", "entry_count"}
    DELETE /v3/glossaries/{id}/dictionaries?source_lang=&target_lang= -> 204
    One store for both (glossary_store.py): a /v2 glossary is one of one dictionary; /v2's
    routes answer for those (one of several dictionaries: a 400 naming /v3's route).
    an unknown id -> 404; a mistake in the entries -> 400 naming the line and the fault
    (localization/glossary.py), nothing kept; the glossaries file failing -> 500

The key: `Authorization: DeepL-Auth-Key KEY` (DeepL's clients), or `Bearer KEY`, on every
route of these (the GETs too) where serve.api_keys is set; each key has glossaries of its own
(glossary_store.py). Languages are matched to the models' in any case (EN is en).

A /translate's "glossary" (Glossaries.terms): a kept glossary's id (its dictionary of the
request's pair), or its entries inline, {"source term": "target term"}: checked as a file's
(a glossary without a dictionary of the request's pair, a pair with no model of its own,
LibreTranslate's source "auto": a 400),
-> the entries as the request's Options' terms (batcher.py), which the engine follows.
"""

import asyncio
import json

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
    check_names,
    deepl_errors,
    json_response,
    key_given,
    text_field,
)
from seq2seq.serving.core import Core
from seq2seq.serving.glossary_store import GlossaryStore
from seq2seq.serving.models import Model

DICTIONARY_FIELDS = ("source_lang", "target_lang", "entries", "entries_format")
CREATE_FIELDS = ("name", *DICTIONARY_FIELDS, "api_key")
MULTILINGUAL_FIELDS = ("name", "dictionaries")
Terms = tuple[tuple[str, str], ...]  # a glossary's entries, (source, target) in order


def by_method(path: str, **handlers) -> Route:
    """One route of `path` for all its methods, each with its handler (a 405 names them all;
    HEAD is GET's), its errors in DeepL's shape."""

    @deepl_errors
    async def answer(request: Request) -> Response:
        method = "get" if request.method == "HEAD" else request.method.lower()
        return await handlers[method](request)

    return Route(path, answer, methods=[method.upper() for method in handlers])


class Glossaries:
    """DeepL's glossary routes, and the glossary of a /translate, over the core (core.py) and
    the glossaries kept in serve.glossaries_file."""

    def __init__(self, core: Core):
        self.core = core
        self.store = GlossaryStore(core.settings.database or core.settings.glossaries_file)

    def routes(self) -> list[Route]:
        return [
            by_method("/v2/glossaries", post=self.create, get=self.list_glossaries),
            by_method("/v2/glossaries/{id}", get=self.get, delete=self.delete),
            by_method("/v2/glossaries/{id}/entries", get=self.entries),
            by_method("/v2/glossary-language-pairs", get=self.language_pairs),
            by_method("/v3/glossaries", post=self.create_multilingual, get=self.list_all),
            by_method(
                "/v3/glossaries/{id}",
                get=self.get_multilingual,
                patch=self.patch,
                delete=self.delete,
            ),  # fmt: skip
            by_method("/v3/glossaries/{id}/entries", get=self.dictionary_entries),
            by_method("/v3/glossaries/{id}/dictionaries", put=self.put, delete=self.drop),
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
        name = name_field(fields)
        dictionary = await self.dictionary_of(fields, name)
        stored = await asyncio.to_thread(self.store.create, name, [dictionary], owner)
        return json_response(stored.glossary_info(), 201)

    async def dictionary_of(self, fields: dict, name: str, where: str = "") -> Glossary:
        """A request's dictionary (`fields`: DICTIONARY_FIELDS; `where` names it in an
        error): its pair, a model's, and its entries, checked."""
        source, target = self.pair_of(fields)
        entries_format = fields.get("entries_format", "tsv")
        if entries_format not in FORMATS:
            raise HTTPError(400, f"{where}'entries_format' is tsv, csv or tbx, not "
                            f"{json.dumps(entries_format)}")  # fmt: skip
        text = text_field(fields, "entries")
        entries = await asyncio.to_thread(parse_entries, text, entries_format,
                                          f"{where}'entries'", (source, target))  # fmt: skip
        return Glossary(name, source, target, entries)

    async def dictionaries_of(self, fields: dict, name: str) -> list[Glossary]:
        """A /v3 request's "dictionaries": a list of dictionaries, each of a pair once."""
        given = fields.get("dictionaries")
        if not isinstance(given, list) or not all(isinstance(one, dict) for one in given):
            raise HTTPError(
                400,
                "'dictionaries' must be a list of dictionaries, "
                '[{"source_lang", "target_lang", "entries", "entries_format"}]',
            )
        dictionaries = []
        for number, one in enumerate(given, 1):
            check_names(one, DICTIONARY_FIELDS)
            dictionaries.append(await self.dictionary_of(one, name, f"dictionary {number}: "))
        pairs = [(one.source_lang, one.target_lang) for one in dictionaries]
        if len(set(pairs)) < len(pairs):
            raise HTTPError(400, "'dictionaries' has two dictionaries of one pair")
        return dictionaries

    @answers(STATUSES)
    async def create_multilingual(self, request: Request) -> Response:
        fields = await Body(request, self.core.settings).fields(MULTILINGUAL_FIELDS)
        owner, name = self.checked_owner(request, fields), name_field(fields)
        dictionaries = await self.dictionaries_of(fields, name)
        if not dictionaries:
            raise HTTPError(400, "'dictionaries' is empty: a glossary holds one at least")
        stored = await asyncio.to_thread(self.store.create, name, dictionaries, owner)
        return json_response(stored.multilingual_info(), 201)

    @answers(STATUSES)
    async def list_all(self, request: Request) -> Response:
        kept = await asyncio.to_thread(self.store.listed, self.checked_owner(request))
        return json_response({"glossaries": [stored.multilingual_info() for stored in kept]})

    @answers(STATUSES)
    async def get_multilingual(self, request: Request) -> Response:
        stored = await self.kept(request, self.store.get)
        return json_response(stored.multilingual_info())

    @answers(STATUSES)
    async def patch(self, request: Request) -> Response:
        """PATCH: a new name, and each dictionary given merged into its pair's."""
        fields = await Body(request, self.core.settings).fields(MULTILINGUAL_FIELDS)
        owner, id_ = self.checked_owner(request, fields), request.path_params["id"]
        name = name_field(fields) if "name" in fields else None
        given = "dictionaries" in fields
        dictionaries = await self.dictionaries_of(fields, name or "") if given else []
        stored = await asyncio.to_thread(self.store.update, id_, owner, name, dictionaries, True)
        return json_response(found(stored, id_).multilingual_info())

    @answers(STATUSES)
    async def put(self, request: Request) -> Response:
        """PUT .../dictionaries: a dictionary replacing its pair's, or added."""
        fields = await Body(request, self.core.settings).fields(DICTIONARY_FIELDS)
        owner, id_ = self.checked_owner(request, fields), request.path_params["id"]
        dictionary = await self.dictionary_of(fields, "")
        stored = await asyncio.to_thread(self.store.update, id_, owner, None, [dictionary], False)
        found(stored, id_)
        pair = dictionary.source_lang, dictionary.target_lang
        return json_response({"source_lang": pair[0], "target_lang": pair[1],
                              "entry_count": len(dictionary.entries)})  # fmt: skip

    @answers(STATUSES)
    async def drop(self, request: Request) -> Response:
        """DELETE .../dictionaries?source_lang=&target_lang=: the dictionary of that pair."""
        owner, id_ = self.checked_owner(request), request.path_params["id"]
        pair = self.pair_of(dict(request.query_params))
        if not await asyncio.to_thread(self.store.drop, id_, owner, pair):
            raise HTTPError(404, f"no dictionary {pair[0]}-{pair[1]} in a glossary {id_}")
        return Response(status_code=204)

    @answers(STATUSES)
    async def dictionary_entries(self, request: Request) -> Response:
        """GET /v3/.../entries?source_lang=&target_lang=: that dictionary's entries."""
        owner, id_ = self.checked_owner(request), request.path_params["id"]
        pair = self.pair_of(dict(request.query_params))
        dictionaries = await asyncio.to_thread(self.store.dictionaries, id_, owner, pair)
        if not found(dictionaries, id_):  # a glossary without that dictionary
            raise HTTPError(404, f"no dictionary {pair[0]}-{pair[1]} in glossary {id_}")
        listed = [{"source_lang": pair[0], "target_lang": pair[1], "entries_format": "tsv",
                   "entries": entries_tsv(dictionaries[0].entries).rstrip("\n")}]  # fmt: skip
        return json_response({"dictionaries": listed})

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
        """/v2's: those of one dictionary (the others are /v3's)."""
        kept = await asyncio.to_thread(self.store.listed, self.checked_owner(request))
        listed = [stored.glossary_info() for stored in kept if len(stored.dictionaries) == 1]
        return json_response({"glossaries": listed})

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
        one_pair(len(stored.dictionaries), stored.id)
        return json_response(stored.glossary_info())

    @answers(STATUSES)
    async def delete(self, request: Request) -> Response:
        await self.kept(request, self.store.delete)
        return Response(status_code=204)

    @answers(STATUSES)
    async def entries(self, request: Request) -> Response:
        dictionaries = await self.kept(request, self.store.dictionaries)
        one_pair(len(dictionaries), request.path_params["id"])
        return Response(entries_tsv(dictionaries[0].entries), media_type=TSV)  # charset added

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
            served = chain[0].source.code, chain[0].target.code
            found = await asyncio.to_thread(
                self.store.dictionaries, value, self.owner(presented), served
            )
            if found is None:
                raise HTTPError(400, f"'glossary': no glossary {value} (GET /v2/glossaries)")
            if not found:
                raise HTTPError(
                    400, f"'glossary' {value} has no dictionary of the request's pair, "
                    f"{served[0]}-{served[1]}",
                )  # fmt: skip
            return tuple(found[0].entries.items())
        if isinstance(value, dict) and all(isinstance(t, str) for t in value.values()):
            rows = ((number, s, t) for number, (s, t) in enumerate(value.items(), 1))
            entries = checked_entries(rows, "'glossary'", "entry")
            return tuple(entries.items())
        raise HTTPError(
            400, "'glossary' must be a glossary's id (a string) or its entries, "
            '{"source term": "target term", ...}',
        )  # fmt: skip


def name_field(fields: dict) -> str:
    """A glossary's name: a string of MAX_NAME_BYTES at most."""
    name = text_field(fields, "name")
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise HTTPError(400, f"'name' has more than {MAX_NAME_BYTES:,} bytes")
    return name


def one_pair(count: int, id_: str) -> None:
    """A glossary /v2 answers for: one of one dictionary (v2's), else a 400."""
    if count != 1:
        raise HTTPError(400, f"glossary {id_} has {count} dictionaries: /v2's routes are for "
                        f"a glossary of one, /v3's for all (GET /v3/glossaries/{id_})")  # fmt: skip


def found(stored, id_: str):
    """What the store found of a glossary (None: no such glossary of the key's: a 404)."""
    if stored is None:
        raise HTTPError(404, f"no glossary {id_} (GET /v3/glossaries lists them)")
    return stored
