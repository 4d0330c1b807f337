"""The checks of each request, in one place, whichever API and route it came by: its API key
and the key's own rate, its texts (how many, how long, valid Unicode), their sentences once
split, its beams; a suggestion's, before it is kept; and the one token bucket behind every
rate limit (the key's, the client's: access.py's RateLimit, suggestions: suggest.py). Each
raises what is wrong in the service's own terms (refusals.py), which the route answers with its
API's status (api.py).

    a route -> Checks.key(the key it was given: api.py's key_given) -> its Account (digest,
                 KeyLimits), or Forbidden (none where one is needed, or not a key),
                 Slowdown (past the key's requests a minute)
            -> Checks.texts(texts, names): serve.max_sentences texts at most (each one
                 sentence at least), each of serve.max_chars characters at most and valid
                 Unicode (OverLimit, Invalid); Checks.charge(account, chars): all
                 together the key's max_chars at most (OverLimit), counted against its
                 month's chars_per_month (QuotaUsed; keystore.py)
            -> Checks.beams(value, name): beam_size, nbest, alternatives within
                 serve.max_beam_size (Invalid)
    core.py, once the texts are split -> Checks.sentences: serve.max_sentences (OverLimit)

    POST /suggest (suggest.py), python -m seq2seq.suggestions import, each suggestion
      -> SuggestionChecks.check(q, s, source, target): Unwanted, its reason one of REASONS
         empty           q or s white space only
         too_long        q or s past serve.suggestion_chars, or s past 3 len(q) + 20 (a page)
         copy            s is q (normalised: suggestions.py), q of COPY_WORDS words or more
                         (shorter ones pass: names and terms that many languages share,
                         "Abidjan", "Status"; placeables, digits and codes are no words), and
                         the model's translation of q is q too (a copy of a formula, a name or
                         a code the model translated otherwise is a correction: kept, whatever
                         language the detector finds in it)
         wrong_language  s of TELLING_WORDS words or more that the service's detector
                         (documents/detection.py), among the pair's two languages, finds in
                         the source language SURE % sure or more
      (suggest.py: flooding, past serve.suggestions_per_hour from one address or one key)
"""

import asyncio
import json
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from seq2seq.config import ServeConfig
from seq2seq.corpora.cleaning import primary
from seq2seq.documents.detection import Detector
from seq2seq.localization.suggestions import normalised
from seq2seq.serving.keystore import ApiKeys, KeyLimits
from seq2seq.serving.refusals import Invalid, OverLimit, Slowdown, Unwanted
from seq2seq.serving.shared_limits import SharedLimits
from seq2seq.support.errors import UserError
from seq2seq.text.placeholders import PLACEABLE

# Why a suggestion is refused (prometheus.py's seq2seq_suggestions_refused_total): Unwanted's
# reasons, and flooding, suggest.py's rates.
REASONS = ("empty", "too_long", "copy", "wrong_language", "flooding")
COPY_WORDS = 3  # a copy of q of this many words (with a letter, placeables aside) is refused
# A suggestion this many words long, or longer, is one whose language the detector tells, and
# SURE its confidence (0 to 100) that refuses it: under 1% of the German entries of a
# desktop's catalogs are refused (tests/service/test_suggestion_checks.py measures it).
TELLING_WORDS = 3
SURE = 90.0


class Buckets:
    """A token bucket for each client (an address, a key): `size` tokens at once, then one
    every `seconds` / `size` s; `most` says what the limit is, in a Slowdown. Bounded memory,
    O(1) a take: past most_clients, the least recently seen is forgotten. With `storage`
    (serve.limits_storage), counted there instead, under `name`, for every instance at once
    (shared_limits.py: at most `size` in any `seconds`); here while it does not answer."""

    clock = staticmethod(time.monotonic)
    most_clients = 10_000

    def __init__(
        self, size: int, seconds: float, most: str = "", name: str = "", storage: str = ""
    ):
        self.size, self.rate, self.most = size, size / seconds, most
        self.seconds, self.name = seconds, name
        self.shared = SharedLimits.at(storage) if storage else None
        # client -> (tokens, when), least recently seen first
        self.buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, client: str) -> int:
        """Takes one of the client's tokens: 0, or the seconds until it has one."""
        if self.shared is not None:
            wait = self.shared.take(self.name, self.size, self.seconds, client)
            if wait is not None:
                return wait
        now = self.clock()
        tokens, then = self.buckets.pop(client, (self.size, now))
        tokens = min(self.size, tokens + (now - then) * self.rate)
        taken = tokens >= 1
        self.buckets[client] = (tokens - 1 if taken else tokens, now)  # now the most recent
        if len(self.buckets) > self.most_clients:
            self.buckets.popitem(last=False)
        return 0 if taken else math.ceil((1 - tokens) / self.rate)

    def check(self, client: str) -> None:
        """Takes one of the client's tokens, or raises Slowdown saying when it will have one."""
        if wait := self.take(client):
            raise Slowdown(f"Slowdown: {self.most}; try again in {wait} s", wait)


@dataclass(frozen=True)
class Account:
    """Whose request it is: its key's digest ("" for none) and that key's limits."""

    digest: str
    limits: KeyLimits


class Checks:
    """Each request's checks, with the settings in force and the keys (keystore.py)."""

    def __init__(self, settings: ServeConfig, keys: ApiKeys):
        self.settings, self.keys = settings, keys
        self.per_key: dict[str, Buckets] = {}  # each key's own rate limit, by its digest

    def key(self, presented: str | None) -> Account:
        """The account of the key the request `presented` (None: none): Forbidden unless
        keys are off, it is one of them, or none is given where none is required
        (serve.keys_required); Slowdown past its own requests a minute."""
        digest, limits = self.keys.limits(presented)
        if limits.requests_per_minute:
            if digest not in self.per_key:
                per_minute = limits.requests_per_minute
                most = f"this API key may make {per_minute} requests per minute at most"
                storage = self.settings.limits_storage
                self.per_key[digest] = Buckets(per_minute, 60, most, "key", storage)
            self.per_key[digest].check(digest)
        return Account(digest, limits)

    def texts(self, texts: list[str], names: Callable[[int], str]) -> None:
        """A request's texts: serve.max_sentences of them at most, each within serve.max_chars
        and valid Unicode (`names(n)` names the nth in an error)."""
        self.sentences(len(texts), "texts")
        for number, text in enumerate(texts, 1):
            self.text(text, names(number))

    def text(self, text: str, name: str) -> None:
        """One text within serve.max_chars, and valid Unicode."""
        most = self.settings.max_chars
        if len(text) > most:
            raise OverLimit(
                f"{name} has {len(text):,} characters; the limit is {most:,} (serve.max_chars)"
            )
        self.unicode(text, name)

    @staticmethod
    def unicode(text: str, name: str) -> None:
        """A text that is valid Unicode (one SQLite and UTF-8 can hold)."""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:  # JSON's "\ud800": half of a UTF-16 pair
            raise Invalid(
                f"{name} is not valid Unicode: a lone surrogate at character {error.start + 1}"
            ) from None

    def sentences(self, count: int, what: str) -> None:
        """serve.max_sentences, the one limit on a request's size: its `count` `what` (texts,
        or texts between tags: a sentence each at least; sentences, once split)."""
        most = self.settings.max_sentences
        if count > most:
            raise OverLimit(
                f"the request holds {count:,} {what}; the limit is {most:,} sentences "
                "(serve.max_sentences)"
            )

    async def charge(self, account: Account, chars: int) -> None:
        """A request's texts of `chars` characters within its key's max_chars, and counted
        against its month's chars_per_month (a keys database's: a write, off the loop)."""
        most = account.limits.max_chars
        if most and chars > most:
            raise OverLimit(f"this API key may send {most} characters a request, not {chars}")
        if self.keys.store is not None:
            await asyncio.to_thread(self.keys.charge, account.digest, account.limits, chars)

    def beams(self, value, name: str, spare: int = 0) -> int:
        """`value`, a number of beams (beam_size, nbest) within serve.max_beam_size; `spare` 1:
        of beams besides the best (LibreTranslate's alternatives), from 0."""
        least, most = 1 - spare, self.settings.max_beam_size - spare
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
            limit = "serve.max_beam_size" + (f" - {spare}" if spare else "")
            raise Invalid(
                f"'{name}' must be an integer from {least} to {most} ({limit}), "
                f"got {json.dumps(value)}"
            )
        return value


class SuggestionChecks:
    """What a suggestion must be to be kept (the module's docstring), in one place: POST
    /suggest's (suggest.py) and the import's (python -m seq2seq.suggestions). `most`:
    serve.suggestion_chars. Callable from any thread."""

    def __init__(self, most: int):
        self.most = most
        self.detectors: dict[tuple[str, str], Detector | str] = {}  # a pair's, or why none
        self.lock = threading.Lock()

    def check(
        self, q: str, s: str, source: str, target: str, translated: str | None = None
    ) -> None:
        """Raises Unwanted, its reason one of REASONS, unless q -> s may be kept. `translated`:
        the model's translation of q (None: not asked; a copy is refused)."""
        for text, name in ((q, "q"), (s, "s")):
            if not text.strip():
                raise Unwanted(f"'{name}' is empty", "empty")
            if len(text) > self.most:
                limit = f"the limit is {self.most:,} (serve.suggestion_chars)"
                raise Unwanted(f"'{name}' has {len(text):,} characters; {limit}", "too_long")
        if len(s) > 3 * len(q) + 20:
            most = f"3 x {len(q):,} (those of 'q') + 20"
            raise Unwanted(f"'s' has {len(s):,} characters, more than {most}", "too_long")
        same = normalised(s) == normalised(q)
        if same and translated is not None and normalised(translated) != normalised(q):
            return  # corrects the model: a formula, a name, a code, in either language
        if is_copy(q, s):
            raise Unwanted(f"'s' is a copy of 'q', a text of {len(lettered(q))} words", "copy")
        detector = self.detector(source, target)
        if isinstance(detector, Detector) and len(s.split()) >= TELLING_WORDS:
            language, sure = detector.detect(s)[0]
            if language != target and sure >= SURE:
                said = f"'s' is in {language}, not {target} (language detection, {sure:g}% sure)"
                raise Unwanted(said, "wrong_language")

    def detector(self, source: str, target: str) -> Detector | str:
        """The detector among the pair's two languages, made once (about a second), or why
        there is none (the extra missing, a language it does not know, one language twice):
        the wrong-language check is off for the pair."""
        with self.lock:
            if (source, target) not in self.detectors:
                self.detectors[source, target] = pair_detector(source, target)
            return self.detectors[source, target]


def is_copy(q: str, s: str) -> bool:
    """Whether `s` is `q` (normalised), a text of COPY_WORDS words or more: a copy, unless the
    model translated `q` otherwise."""
    return normalised(s) == normalised(q) and len(lettered(q)) >= COPY_WORDS


def lettered(text: str) -> list[str]:
    """A text's words that hold a letter, its placeables (text/placeholders.py) aside."""
    return [word for word in PLACEABLE.sub(" ", text).split() if any(c.isalpha() for c in word)]


def pair_detector(source: str, target: str) -> Detector | str:
    if primary(source) == primary(target):
        return f"{source} and {target} are one language to the detector"
    try:
        return Detector([source, target])
    except UserError as error:
        return str(error)
