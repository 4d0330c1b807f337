"""What both APIs stand on, as equals: the models (each with its engine and its batcher), the
settings in force, the per-request checks (checks.py), the translations kept
(translation_cache.py) and the translation memory (serve.memory: localization/suggestions.py); and a
request's texts from its route to the decoder threads and back: Core.translate, each text the
memory knows answered from it (counted in the request's scope: REMEMBERED), the others through
the models of its chain (models.py), each text split into its sentences (in a worker thread
past api.INLINE_CHARS characters), a Job for each model on its batcher (batcher.py), the
client's hang-up cancelling it. A request's whole way, from its
route to its answer, is docs/architecture.md's.
"""

import asyncio
import dataclasses
from typing import NamedTuple

from starlette.requests import ClientDisconnect, Request

from seq2seq.config import ServeConfig
from seq2seq.decoding.engines import Translated
from seq2seq.localization.fuzzy import repaired
from seq2seq.localization.suggestions import Suggestions
from seq2seq.serving.api import off_the_loop
from seq2seq.serving.batcher import Job, Options
from seq2seq.serving.checks import Checks
from seq2seq.serving.improving import Improvements
from seq2seq.serving.models import Model, Models
from seq2seq.serving.translation_cache import TranslationCache
from seq2seq.text.sentences import Texts

PAIR = "seq2seq.pair"  # the request's pair, in its ASGI scope, once known (prometheus.py's label)
REMEMBERED = "seq2seq.remembered"  # its texts answered from the memory, counted (prometheus.py)


class Answer(NamedTuple):
    """Core.translate's answer, for each text in order: decoding's (a Translated), and with
    serve.memory whether it came from the memory (else None)."""

    translations: list  # a text each, or (nbest) its n best (score, text) pairs, best first
    warnings: list[list[str]]  # each text's, unnumbered
    remembered: list[bool] | None
    fuzzy: list[float | None] | None  # serve.memory: each repaired by a fuzzy match's similarity


@dataclasses.dataclass(frozen=True)
class Core:
    """The models (each with its engine and its batcher: models.py), the settings in force,
    each request's checks (checks.py: its key among them) and the translations kept
    (serve.translation_cache); the suggestions file its memory reads (None: serve.memory off);
    the improvements the suggestions start (improving.py; None: serve.improve_after off)."""

    models: Models
    settings: ServeConfig
    checks: Checks
    cache: TranslationCache
    memory: Suggestions | None
    improvements: Improvements | None = None

    def split(
        self, texts: list[str], counted: bool, language: str, more: int = 0, whole=False
    ) -> Texts:
        """A request's texts, each split into its sentences by `language`'s rules
        (serve.split_sentences, unless the request wants each `whole`); `counted`: more than
        serve.max_sentences sentences in all (with `more`: those of its texts found in the
        cache) are refused (not counted: a pivot's hypotheses, a document's texts)."""
        splits = self.settings.split_sentences and not whole
        split = Texts(texts, language if splits else None)
        if counted:
            self.checks.sentences(more + len(split.sentences), "sentences")
        return split

    async def translate(
        self, request: Request, chain: list[Model], texts: list[str], options: Options,
        counted: bool = True,
    ) -> Answer:  # fmt: skip
        """`texts` translated by `chain` (models.py): with serve.memory, a text whose
        normalised form has a suggestion for the chain's pair is answered with it (with
        nbest, as the one hypothesis, scored 0), whatever the options, and neither decoded
        nor counted against serve.max_sentences; the others decoded (decode), and with
        serve.memory_fuzzy each that has a fuzzy match repaired by it (repair)."""
        if chain:
            request.scope[PAIR] = f"{chain[0].source.code}-{chain[-1].target.code}"
        if self.memory is None or not chain:
            decoded = await self.decode(request, chain, texts, options, counted)
            off = None if self.memory is None else [False] * len(texts)
            fuzzy = None if self.memory is None else [None] * len(texts)
            return Answer(decoded.translations, decoded.warnings, off, fuzzy)
        pair = chain[0].source.code, chain[-1].target.code
        recalled = [self.memory.recall(text, *pair) for text in texts]  # each: s or None
        answered = sum(s is not None for s in recalled)
        request.scope[REMEMBERED] = request.scope.get(REMEMBERED, 0) + answered
        missing = [text for text, s in zip(texts, recalled, strict=True) if s is None]
        decoded = Translated([], [], [])
        if missing or not texts:
            decoded = await self.decode(request, chain, missing, options, counted)
        scores = await self.repair(request, chain, missing, options, decoded)
        found = iter(zip(decoded.translations, decoded.warnings, scores, strict=True))
        translations, warnings, fuzzy = [], [], []
        for s in recalled:
            translation, said, score = (
                next(found) if s is None else (remembered(s, options), [], None)
            )
            translations.append(translation)
            warnings.append(said)
            fuzzy.append(score)
        return Answer(translations, warnings, [s is not None for s in recalled], fuzzy)

    async def repair(
        self, request: Request, chain: list[Model], texts: list[str], options: Options,
        decoded: Translated,
    ) -> list[float | None]:  # fmt: skip
        """Each text with a fuzzy match in the memory (serve.memory_fuzzy: its similarity at
        least that; localization/suggestions.py) has its translation repaired by the match's
        correction (localization/fuzzy.py: the user's edits of the model's translation of the match,
        merged with what the new text changed of it), in place; -> each text's match's
        similarity where it was repaired, else None. The matches' texts are translated
        too (not counted against serve.max_sentences; the translation cache keeps them)."""
        least, pair = self.settings.memory_fuzzy, (chain[0].source.code, chain[-1].target.code)
        if not least or options.nbest or not texts:
            return [None] * len(texts)
        matches = await asyncio.to_thread(self.memory.similar, texts, *pair, least)
        theirs = list(dict.fromkeys(match.text for match in matches if match))
        translated = (await self.decode(request, chain, theirs, options, False)).translations
        before = dict(zip(theirs, translated, strict=True))
        scores: list[float | None] = []
        for number, match in enumerate(matches):
            merged = match and repaired(before[match.text], match.s, decoded.translations[number])
            if merged:
                decoded.translations[number] = merged
            scores.append(match.score if merged else None)
        return scores

    async def decode(
        self, request: Request, chain: list[Model], texts: list[str], options: Options,
        counted: bool,
    ) -> Translated:  # fmt: skip
        """`texts` through each model of `chain` (models.py) in turn, each hop's translations
        the next one's texts; no model: each text itself, as Argos Translate translates a
        language into itself. The n best through several models are Argos Translate's: each
        model's n best of each of the previous one's, their scores summed, the n highest kept.
        A pivot's warnings are the text's too, saying which language they were found in.
        A text cached (translation_cache.py) is not decoded again: what decoding it gave is
        its answer. `counted`: the texts' sentences held to serve.max_sentences (split)."""
        if not chain:
            itself = [[(0.0, text)] for text in texts] if options.nbest else list(texts)
            return Translated(itself, [[] for _ in texts], [[] for _ in texts])
        cached = self.cache.lookup(chain, options, texts)  # cached.missing: those to decode
        if cached.complete:  # refused as it would be without the cache, if too large
            self.split([], counted, chain[0].source.code, cached.sentences)
            return cached.answer(Translated([], [], []), None)
        hypotheses = [[(0.0, text)] for text in cached.missing]  # each's so far: (score, text)
        warnings: list[list[str]] = [[] for _ in cached.missing]
        signals: list[list[float]] = [[] for _ in cached.missing]  # the last model's
        first = None  # the missing texts' sentences, as the first model's job holds them
        for number, model in enumerate(chain, 1):
            flat = [text for each in hypotheses for _, text in each]
            language, more = model.source.code, cached.sentences  # more: those found's
            split = await off_the_loop(
                sum(map(len, flat)), self.split, flat, counted and number == 1, language, more,
                not options.split,
            )  # fmt: skip
            first = split if number == 1 else first
            translated = await self.run_job(request, model, Job(split, options))
            said = "" if number == 1 else f"through {language}: "
            found = iter(zip(*translated, strict=True))
            for each, mine, sure in zip(hypotheses, warnings, signals, strict=True):
                chained = []
                for score, _ in each:
                    result, theirs, sure[:] = next(found)
                    best = result if options.nbest else [(0.0, result)]
                    chained += [(score + more, text) for more, text in best]
                    new = [said + message for message in theirs]
                    mine += new if len(each) == 1 else [m for m in new if m not in mine]
                if len(chain) > 1:  # one model's n best stay in its own order
                    chained.sort(key=lambda hypothesis: hypothesis[0], reverse=True)
                each[:] = chained[: options.nbest or 1]
        if options.nbest:
            return cached.answer(Translated(hypotheses, warnings, signals), first)
        best = [each[0][1] for each in hypotheses]
        return cached.answer(Translated(best, warnings, signals), first)

    async def run_job(self, request: Request, model: Model, job: Job):
        """The job's result from the model's decoder thread (batcher.py: Busy, a queue too
        full; Stopping, the service stopping); if the client hangs up first, the job is
        cancelled (dropped unless its batch has started) and ClientDisconnect ends the request
        (app.py: nobody reads its answer)."""
        job.client = request.client.host if request.client else ""  # its line in the queue
        request.scope.setdefault(PAIR, model.pair)  # /attention; translate set its whole chain
        answer = asyncio.wrap_future(model.batcher.submit(job))
        gone = asyncio.get_running_loop().create_task(hang_up(request))
        gone.add_done_callback(lambda _: answer.cancel())  # and the job with it, if it waits
        try:
            result = await answer
        except asyncio.CancelledError:
            if not gone.done() or gone.cancelled():  # this request itself is cancelled
                raise
            raise ClientDisconnect() from None
        finally:
            gone.cancel()
        return result


def remembered(s: str, options: Options) -> str | list[tuple[float, str]]:
    """A suggestion as a translation: itself, or with nbest its one hypothesis, scored 0."""
    return [(0.0, s)] if options.nbest else s


async def hang_up(request: Request) -> None:
    """Returns when the client disconnects (the body was read: nothing else can come)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
