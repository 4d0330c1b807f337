"""LibreTranslate's POST /suggest: a user's better translation of a text, kept to fine-tune the
model on (serve.suggestions; a corpus source {suggestions: FILE}) and, with serve.memory, to
answer the same text with from then on (core.py).

    POST /suggest  {"q": text, "s": its better translation, "source", "target", "api_key"}
                   (JSON or a form)
      -> 403 unless serve.suggestions; the key's checks (checks.py), a pair the service has
      -> flooding: past serve.suggestions_per_hour from one client address, or one API key
         (checks.py's Buckets, one bucket each) -> 429
      -> checks.py's SuggestionChecks (empty, too_long, copy, wrong_language) -> 400 naming
         the field and why; s the same as q: the model's translation of q asked first (a
         copy that corrects it is kept)
      -> kept (localization/suggestions.py) -> {"success": true} (503 with Retry-After while
         another writer holds the file past SQLite's wait, support/files.py's
         SHARED_DB_BUSY_S, or the store cannot be written: its database down); with
         serve.improve_after, the pair's improvement started when due (improving.py)
    a refusal's reason -> the request's scope (REFUSED) -> prometheus.py's
      seq2seq_suggestions_refused_total {reason}
"""

import asyncio

from starlette.requests import Request
from starlette.responses import Response

from seq2seq.localization.suggestions import Suggestions
from seq2seq.serving.api import (
    LIBRETRANSLATE,
    Body,
    HTTPError,
    answers,
    json_response,
    key_given,
    text_field,
)
from seq2seq.serving.batcher import Options
from seq2seq.serving.checks import Buckets, SuggestionChecks, is_copy
from seq2seq.serving.core import Core
from seq2seq.serving.keystore import digest
from seq2seq.serving.refusals import Busy, Slowdown, Unwanted
from seq2seq.support.database import DatabaseFailed
from seq2seq.support.errors import warn

SUGGEST_FIELDS = ("q", "s", "source", "target", "api_key")
REFUSED = "seq2seq.refused"  # why a suggestion was refused, in its ASGI scope (prometheus.py)


class Suggest:
    """The route of suggestions, over the core (core.py), with checks and a rate of its own."""

    def __init__(self, core: Core, suggestions: Suggestions | None):
        """`suggestions`: serve.suggestions_file, open (None: neither suggestions nor memory)."""
        self.core, self.settings = core, core.settings
        on, most = self.settings.suggestions, self.settings.suggestions_per_hour
        self.suggestions = suggestions if on else None
        rate = f"{most} suggestions an hour at most (serve.suggestions_per_hour)"
        shared = self.settings.limits_storage
        self.suggesters = Buckets(most, 3600, rate, "suggestions", shared)  # by address, by key
        self.wanted = SuggestionChecks(self.settings.suggestion_chars)

    @answers(LIBRETRANSLATE)
    async def suggest(self, request: Request) -> Response:
        """`s`, a better translation of `q` from `source` to `target`, checked, then kept in
        serve.suggestions_file (localization/suggestions.py) before the answer."""
        if self.suggestions is None:
            raise HTTPError(403, "Suggestions are disabled on this server.")
        fields = await Body(request, self.settings).fields(SUGGEST_FIELDS)
        key = key_given(request, fields)
        self.core.checks.key(key)
        q, s = suggested(fields, "q"), suggested(fields, "s")
        for text, name in ((q, "'q'"), (s, "'s'")):
            self.core.checks.unicode(text, name)
        source, target = text_field(fields, "source"), text_field(fields, "target")
        chain = self.core.models.chain(source, target)  # a pair the service lacks: Invalid
        try:
            self.flooding(request.client.host if request.client else "", key)
            copy = is_copy(q, s) and len(q) <= self.settings.suggestion_chars
            translated = await self.translated(request, chain, q) if copy else None
            await asyncio.to_thread(self.keep, q, s, source, target, translated)  # synced
        except (Unwanted, Slowdown) as refused:
            reason = refused.reason if isinstance(refused, Unwanted) else "flooding"
            request.scope[REFUSED] = reason
            raise
        if self.core.improvements:  # serve.improve_after: one due starts
            await asyncio.to_thread(self.core.improvements.noticed, source, target)
        return json_response({"success": True})

    def flooding(self, address: str, key: str | None) -> None:
        """Takes a token of the client address's bucket, and of its key's if it gave one, or
        raises Slowdown."""
        self.suggesters.check(address)
        if key:
            self.suggesters.check(f"key {digest(key)}")  # an address is never "key ..."

    async def translated(self, request: Request, chain: list, q: str) -> str:
        """The model's translation of `q` (core.py's decode, its cache first): whether a copy
        corrects it."""
        return (await self.core.decode(request, chain, [q], Options(), False)).translations[0]

    def keep(self, q: str, s: str, source: str, target: str, translated: str | None) -> None:
        """(A worker thread: the detector's first use loads it.) The suggestion checked
        (SuggestionChecks: Unwanted; `translated`: the model's translation of a copy), then
        kept; Busy (a 503 to try again, nothing kept) if another writer (an import) holds the
        file past SQLite's wait, or the store cannot be written (a disk full, failing or
        gone, a database that does not answer: said on stderr too; translations are answered
        all the same)."""
        self.wanted.check(q, s, source, target, translated)
        try:
            self.suggestions.add(q, s, source, target)
        except DatabaseFailed as error:
            if "locked" in str(error):
                held = f"{self.suggestions.where} is held by another writer (an import?)"
                raise Busy(f"{held}: try again in a moment") from None
            warn(f"a suggestion could not be kept: {error}")
            raise Busy("suggestions cannot be kept now: try again later") from None


def suggested(fields: dict, name: str) -> str:
    """q or s: a string; "" where it is missing (the checks refuse it as empty)."""
    return "" if fields.get(name) in (None, "") else text_field(fields, name)
