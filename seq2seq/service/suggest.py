"""LibreTranslate's POST /suggest: a user's better translation of a text, kept to fine-tune the
model on (serve.suggestions; a corpus source {suggestions: FILE}) and, with serve.memory, to
answer the same text with from then on (core.py).

    POST /suggest  {"q": text, "s": its better translation, "source", "target", "api_key"}
                   (JSON or a form) -> {"success": true}, kept (text/suggestions.py) before
                   the answer; 403 unless serve.suggestions; 429 past
                   serve.suggestions_per_hour from one client (checks.py's Buckets); with
                   serve.improve_after, the pair's improvement started when due (improving.py)
"""

import asyncio

from starlette.requests import Request
from starlette.responses import Response

from seq2seq.service.api import (
    LIBRETRANSLATE,
    Body,
    HTTPError,
    answers,
    json_response,
    key_given,
    text_field,
)
from seq2seq.service.checks import Buckets
from seq2seq.service.core import Core
from seq2seq.text.suggestions import Suggestions

SUGGEST_FIELDS = ("q", "s", "source", "target", "api_key")


class Suggest:
    """The route of suggestions, over the core (core.py), with a rate of its own."""

    def __init__(self, core: Core, suggestions: Suggestions | None):
        """`suggestions`: serve.suggestions_file, open (None: neither suggestions nor memory)."""
        self.core, self.settings = core, core.settings
        on, most = self.settings.suggestions, self.settings.suggestions_per_hour
        self.suggestions = suggestions if on else None
        rate = f"{most} suggestions an hour at most (serve.suggestions_per_hour)"
        self.suggesters = Buckets(most, 3600, rate)  # by client address

    @answers(LIBRETRANSLATE)
    async def suggest(self, request: Request) -> Response:
        """`s`, a better translation of `q` from `source` to `target`, kept in
        serve.suggestions_file (text/suggestions.py) before the answer."""
        if self.suggestions is None:
            raise HTTPError(403, "Suggestions are disabled on this server.")
        fields = await Body(request, self.settings).fields(SUGGEST_FIELDS)
        self.core.checks.key(key_given(request, fields))
        q, s = text_field(fields, "q"), text_field(fields, "s")
        for text, name in ((q, "'q'"), (s, "'s'")):
            self.core.checks.text(text, name)
        source, target = text_field(fields, "source"), text_field(fields, "target")
        self.core.models.chain(source, target)  # a pair the service lacks: Invalid
        self.suggesters.check(request.client.host if request.client else "")
        await asyncio.to_thread(self.suggestions.add, q, s, source, target)  # synced to disk
        if self.core.improvements:  # serve.improve_after: one due starts
            await asyncio.to_thread(self.core.improvements.noticed, source, target)
        return json_response({"success": True})
