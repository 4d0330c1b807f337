"""What both APIs stand on, as equals: the models (each with its engine and its batcher), the
settings in force, the per-request checks (checks.py), the translations kept
(translation_cache.py) and the translation memory (serve.memory: localization/suggestions.py); and a
request's texts from its route to the decoder threads and back: Core.translate, each text the
memory knows answered from it (counted in the request's scope: REMEMBERED), the others through
the models of its chain (models.py), each text split into its sentences (in a worker thread
past api.INLINE_CHARS characters), a Job for each model on its batcher (batcher.py) holding
those sentences each as a text of its own (so that a pivot's hops translate the same
sentences), the client's hang-up cancelling it; each sentence's confidence, its hops'
calibrated signals multiplied (confidences.py; counted in the scope: CONFIDENCES); the texts
joined again in their white space; and each sentence below the request's bound (else
serve.min_confidence) withheld. A request's whole way, from its route to its answer, is
docs/architecture.md's.
"""

import asyncio
import dataclasses
from typing import NamedTuple

from starlette.requests import ClientDisconnect, Request

from seq2seq.config import ServeConfig
from seq2seq.decoding.confidence import SURE
from seq2seq.localization.fuzzy import repaired
from seq2seq.localization.suggestions import Suggestions
from seq2seq.serving.api import off_the_loop
from seq2seq.serving.batcher import Job, Options
from seq2seq.serving.checks import Checks
from seq2seq.serving.confidences import (
    Sentences,
    Withholding,
    hop_confidences,
    times,
    withheld,
)
from seq2seq.serving.improving import Improvements
from seq2seq.serving.models import Model, Models
from seq2seq.serving.translation_cache import Decoded, TranslationCache
from seq2seq.text.sentences import Texts

PAIR = "seq2seq.pair"  # the request's pair, in its ASGI scope, once known (prometheus.py's label)
REMEMBERED = "seq2seq.remembered"  # its texts answered from the memory, counted (prometheus.py)
# each pair's confidences of the sentences its models translated for the request (prometheus.py)
CONFIDENCES = "seq2seq.confidences"


class Answer(NamedTuple):
    """Core.translate's answer, for each text in order: decoding's (a Decoded), with
    serve.memory whether it came from the memory (else None), and with a bound in force
    which of its sentences were withheld."""

    translations: list  # a text each, or (nbest) its n best (score, text) pairs, best first
    warnings: list[list[str]]  # each text's, unnumbered
    remembered: list[bool] | None
    fuzzy: list[float | None] | None  # serve.memory: each repaired by a fuzzy match's similarity
    sentences: list[Sentences]  # each text's, as given (withheld ones replaced), and how sure
    withheld: list[list[int]] | None  # each text's sentences withheld (from 0); None: no bound


class Hypothesis(NamedTuple):
    """A sentence's translation so far, through a chain's models: its score (the hops'
    summed), its text and its confidence (the hops' multiplied; None: not known)."""

    score: float
    text: str
    sure: float | None


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
        counted: bool = True, bound: Withholding | None = None,
    ) -> Answer:  # fmt: skip
        """`texts` translated by `chain` (models.py): with serve.memory, a text whose
        normalised form has a suggestion for the chain's pair is answered with it (with
        nbest, as the one hypothesis, scored 0), whatever the options, SURE, and neither
        decoded nor counted against serve.max_sentences; the others decoded (decode), and
        with serve.memory_fuzzy each that has a fuzzy match repaired by it (repair). Then
        each sentence below `bound` (None: serve.min_confidence's, given back as its source)
        withheld (withhold)."""
        pair = (chain[0].source.code, chain[-1].target.code) if chain else None
        if pair:
            request.scope[PAIR] = "-".join(pair)
        recalled = await self.recall(request, pair, texts)  # each: s or None
        missing = [text for text, s in zip(texts, recalled, strict=True) if s is None]
        decoded = Decoded([], [], [])
        if missing or not texts:
            decoded = await self.decode(request, chain, missing, options, counted)
        scores = await self.repair(request, chain, missing, options, decoded)
        if pair:  # the models' (CONFIDENCES): the memory's aside
            sure = [p for each in decoded.sentences for p in each.sure if p is not None]
            figures = request.scope.setdefault(CONFIDENCES, {})
            figures.setdefault("-".join(pair), []).extend(sure)
        answer = merged(texts, recalled, decoded, scores, options, self.memory is not None)
        return withhold(answer, bound or Withholding(self.settings.min_confidence))

    async def recall(
        self, request: Request, pair: tuple[str, str] | None, texts: list[str]
    ) -> list:
        """Each text's suggestion for the pair in the memory, or None (serve.memory off, or
        no pair: each None); those found counted in the request's scope (REMEMBERED). In a
        worker thread: the memory's database may be another machine."""
        if self.memory is None or pair is None or not texts:
            return [None] * len(texts)
        recalled = await asyncio.to_thread(self.memory.recalled, texts, *pair)
        answered = sum(s is not None for s in recalled)
        request.scope[REMEMBERED] = request.scope.get(REMEMBERED, 0) + answered
        return recalled

    async def repair(
        self, request: Request, chain: list[Model], texts: list[str], options: Options,
        decoded: Decoded,
    ) -> list[float | None]:  # fmt: skip
        """Each text with a fuzzy match in the memory (serve.memory_fuzzy: its similarity at
        least that; localization/suggestions.py) has its translation repaired by the match's
        correction (localization/fuzzy.py: the user's edits of the model's translation of the match,
        merged with what the new text changed of it), in place, as one sentence of the text's
        confidence; -> each text's match's similarity where it was repaired, else None. The
        matches' texts are translated too (not counted against serve.max_sentences; the
        translation cache keeps them)."""
        least = self.settings.memory_fuzzy
        if self.memory is None or not least or options.nbest or not texts or not chain:
            return [None] * len(texts)
        pair = chain[0].source.code, chain[-1].target.code
        matches = await asyncio.to_thread(self.memory.similar, texts, *pair, least)
        theirs = list(dict.fromkeys(match.text for match in matches if match))
        translated = (await self.decode(request, chain, theirs, options, False)).translations
        before = dict(zip(theirs, translated, strict=True))
        scores: list[float | None] = []
        for number, match in enumerate(matches):
            merged = match and repaired(before[match.text], match.s, decoded.translations[number])
            if merged:
                decoded.translations[number] = merged
                sure = decoded.sentences[number].confidence
                decoded.sentences[number] = Sentences.whole(texts[number], merged, sure)
            scores.append(match.score if merged else None)
        return scores

    async def decode(
        self, request: Request, chain: list[Model], texts: list[str], options: Options,
        counted: bool,
    ) -> Decoded:  # fmt: skip
        """`texts` through the models of `chain` (models.py; through), each split into its
        sentences by the first model's language; no model: each text itself, as Argos
        Translate translates a language into itself (SURE). A text cached
        (translation_cache.py) is not decoded again: what decoding it gave is its answer.
        `counted`: the texts' sentences held to serve.max_sentences (split)."""
        if not chain:
            itself = [[(0.0, text)] for text in texts] if options.nbest else list(texts)
            sure = [Sentences.whole(text, text, SURE) for text in texts]
            return Decoded(itself, [[] for _ in texts], sure)
        cached = self.cache.lookup(chain, options, texts)  # cached.missing: those to decode
        language = chain[0].source.code
        if cached.complete:  # refused as it would be without the cache, if too large
            self.split([], counted, language, cached.sentences)
            return cached.answer(Decoded([], [], []))
        first = await off_the_loop(
            sum(map(len, cached.missing)), self.split, cached.missing, counted, language,
            cached.sentences, not options.split,
        )  # fmt: skip
        return cached.answer(await self.through(request, chain, first, options))

    async def through(
        self, request: Request, chain: list[Model], first: Texts, options: Options
    ) -> Decoded:
        """The sentences of `first` through each model of `chain` in turn, a Job for each on
        its batcher, each sentence alone: a hop's translation of one is the next hop's
        sentence (not split again). The n best through several models are Argos
        Translate's: each model's n best of each of the previous one's, their scores summed,
        the n highest kept (chained). Each text's translation: its sentences' joined in its
        white space (Texts.joined; the n best: Texts.nbest); its warnings, each hop's in turn
        (a pivot's saying which language they were found in)."""
        hypotheses = [[Hypothesis(0.0, sentence, SURE)] for sentence in first.sentences]
        hops = []  # each hop's warnings, a list a sentence
        for number, model in enumerate(chain, 1):
            job = Job(Texts([h.text for each in hypotheses for h in each]), options)
            translated = await self.run_job(request, model, job)
            sure = hop_confidences(job.calibration, translated.signals)
            found = iter(zip(translated.translations, translated.warnings, sure, strict=True))
            said = "" if number == 1 else f"through {model.source.code}: "
            hopped = [
                chained(each, found, said, options.nbest, len(chain) > 1) for each in hypotheses
            ]
            hypotheses = [each for each, _ in hopped]
            hops.append([warned for _, warned in hopped])
        best = [each[0] for each in hypotheses]
        lines, sure = first.grouped([h.text for h in best]), first.grouped([h.sure for h in best])
        sentences = list(map(Sentences, first.splits, lines, sure))
        if options.nbest:
            translations = first.nbest([[(h.score, h.text) for h in each] for each in hypotheses])
        else:
            translations = [each.text for each in sentences]
        texts_hops = zip(*map(first.warnings, hops), strict=True)  # each text's, hop by hop
        warnings = [[w for hop in per_text for w in hop] for per_text in texts_hops]
        return Decoded(translations, warnings, sentences)

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


def chained(
    each: list[Hypothesis], found, said: str, nbest: int | None, ranked: bool
) -> tuple[list[Hypothesis], list[str]]:
    """A sentence's hypotheses after one more hop, and the hop's warnings (`said` before
    each; of several hypotheses, each warning once): each hypothesis's translations (`found`
    gives its translation or n best, its warnings and its confidence), scores summed,
    confidences multiplied (known for each one's best alone), the n best kept (nbest; else
    the best), in order of score if `ranked` (through several models; one model's n best
    stay in its own order)."""
    hypotheses, warned = [], []
    for hypothesis in each:
        result, theirs, sure = next(found)
        best = result if nbest else [(0.0, result)]
        for rank, (score, text) in enumerate(best):  # the hop's confidence: its best's
            known = times(hypothesis.sure, sure) if rank == 0 else None
            hypotheses.append(Hypothesis(hypothesis.score + score, text, known))
        new = [said + message for message in theirs]
        warned += new if len(each) == 1 else [m for m in new if m not in warned]
    if ranked:
        hypotheses.sort(key=lambda hypothesis: hypothesis.score, reverse=True)
    return hypotheses[: nbest or 1], warned


def merged(
    texts: list[str], recalled: list, decoded: Decoded, scores: list, options: Options,
    memory: bool,
) -> Answer:  # fmt: skip
    """The answer to `texts`: each text's suggestion (`recalled`) SURE, else the next of
    `decoded` (and its fuzzy repair's score); with serve.memory (`memory`), which is which."""
    found = iter(zip(*decoded, scores, strict=True))
    rows = [
        next(found) if s is None else remembered(text, s, options)
        for text, s in zip(texts, recalled, strict=True)
    ]
    columns = [list(column) for column in zip(*rows, strict=True)] or [[], [], [], []]
    translations, warnings, sentences, fuzzy = columns
    flags = [s is not None for s in recalled] if memory else None
    return Answer(translations, warnings, flags, fuzzy if memory else None, sentences, None)


def withhold(answer: Answer, bound: Withholding) -> Answer:
    """`answer` with each sentence below `bound` given back as `bound.instead` asks, and
    listed (`withheld`); a text with one withheld has one translation, no n best (its others
    are not known to be surer). No bound (0): the answer as it is."""
    if not bound.least:
        return answer
    translations, sentences = list(answer.translations), list(answer.sentences)
    numbers = [withheld(each, bound) for each in answer.sentences]
    for text, (each, these) in enumerate(zip(answer.sentences, numbers, strict=True)):
        if these:
            sentences[text] = each.given(these, bound.instead)
            given = sentences[text].text
            ranked = isinstance(translations[text], list)
            translations[text] = [(translations[text][0][0], given)] if ranked else given
    return answer._replace(translations=translations, sentences=sentences, withheld=numbers)


def remembered(text: str, s: str, options: Options) -> tuple:
    """A text's suggestion `s` as its answer: its translation (itself, or with nbest its one
    hypothesis, scored 0), no warning, one sentence SURE, no fuzzy repair."""
    return [(0.0, s)] if options.nbest else s, [], Sentences.whole(text, s, SURE), None


async def hang_up(request: Request) -> None:
    """Returns when the client disconnects (the body was read: nothing else can come)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
