"""What both APIs stand on, as equals: the models (each with its engine and its batcher), the
settings in force and the API keys; and a request's way from a route to the decoder threads
and back.

    a route (ours.py or libretranslate.py): the request checked -> the models of its pair
      (models.py's route: one, or several through languages between)
      -> Backend.translate(request, route, texts, wanted): the texts whose translations are
         cached (serve.translation_cache: cache.py) left out, the others, for each model in turn:
           the texts split into their sentences (Backend.split: seq2seq/text/sentences.py),
             in a worker thread past api.INLINE_CHARS characters: milliseconds for a large
             request, which would hold every other client on the event loop
           -> Job(texts, options) -> Backend.run_job(request, model, job): the model's
              Batcher.submit (batcher.py; its queue full -> 503 with Retry-After; the service
              stopping -> 503, Connection: close), then waits for the job's future or the
              client's hang-up (which cancels the job: it is dropped unless its batch has
              started)
           <- its Translated: the next model's texts (with n best asked, each model's n
              best of each of the previous one's, scores summed: Argos Translate's chains)
      <- the last one's Translated, with the cached ones put back in order (and the new ones
         kept), which the route makes its JSON answer
"""

import asyncio
import dataclasses
from typing import NamedTuple

from starlette.requests import ClientDisconnect, Request

from seq2seq.config import ServeConfig
from seq2seq.decoding.engines import Translated
from seq2seq.service.access import ApiKeys
from seq2seq.service.api import HTTPError, check_count, off_the_loop
from seq2seq.service.batcher import Job, Options, QueueFull, Stopping
from seq2seq.service.cache import TranslationCache
from seq2seq.service.models import Model, Models
from seq2seq.text.sentences import Texts

PAIR = "seq2seq.pair"  # the request's pair, in its ASGI scope, once known (metrics.py's label)


class Wanted(NamedTuple):
    """What a translation request asks for besides its texts."""

    beam_size: int | None  # None: each model's own (its config's decode.beam_size)
    nbest: int | None  # None: the best translation only, as text
    # the answer to too many sentences: 413 (ours) or 400 (LibreTranslate's); None: not
    # counted (a document's texts: files.py limits its characters)
    status: int | None
    placeholders: str | None = None  # protect | off; None: each model's decode.placeholders


@dataclasses.dataclass(frozen=True)
class Backend:
    """The models (each with its engine and its batcher: models.py), the settings in force,
    the keys a request may present and the translations kept (serve.translation_cache)."""

    models: Models
    settings: ServeConfig
    keys: ApiKeys
    cache: TranslationCache

    def split(self, texts: list[str], status: int | None, language: str, more: int = 0) -> Texts:
        """A request's texts, each split into its sentences by `language`'s rules
        (serve.split_sentences; else each whole); more than serve.max_sentences sentences in
        all (with `more`: those of its texts found in the cache) are the client's mistake,
        answered with `status` (None: not the client's texts, but a pivot's hypotheses of
        them)."""
        split = Texts(texts, language if self.settings.split_sentences else None)
        if status is not None:
            check_count(more + len(split.sentences), "sentences", status, self.settings)
        return split

    async def translate(
        self, request: Request, route: list[Model], texts: list[str], wanted: Wanted
    ) -> Translated:
        """`texts` through each model of `route` (models.py) in turn, each hop's translations
        the next one's texts. The n best through several models are Argos Translate's: each
        model's n best of each of the previous one's, their scores summed, the n highest kept.
        A pivot's warnings are the text's too, saying which language they were found in.
        A text cached (cache.py) is not decoded again: what decoding it gave is its answer."""
        request.scope[PAIR] = f"{route[0].source.code}-{route[-1].target.code}"
        options = Options(wanted.beam_size, wanted.nbest, wanted.placeholders)
        cached = self.cache.lookup(route, options, texts)  # cached.missing: those to decode
        if cached.complete:  # refused as it would be without the cache, if too large
            self.split([], wanted.status, route[0].source.code, cached.sentences)
            return cached.answer(Translated([], []), None)
        hypotheses = [[(0.0, text)] for text in cached.missing]  # each's so far: (score, text)
        warnings: list[list[str]] = [[] for _ in cached.missing]
        first = None  # the missing texts' sentences, as the first model's job holds them
        for number, model in enumerate(route, 1):
            flat = [text for each in hypotheses for _, text in each]
            status = wanted.status if number == 1 else None
            language, more = model.source.code, cached.sentences  # more: those found's
            split = await off_the_loop(
                sum(map(len, flat)), self.split, flat, status, language, more
            )
            first = split if number == 1 else first
            translated = await self.run_job(request, model, Job(split, options))
            said = "" if number == 1 else f"through {language}: "
            found = iter(zip(translated.translations, translated.warnings, strict=True))
            for each, mine in zip(hypotheses, warnings, strict=True):
                chained = []
                for score, _ in each:
                    result, theirs = next(found)
                    best = result if wanted.nbest else [(0.0, result)]
                    chained += [(score + more, text) for more, text in best]
                    new = [said + message for message in theirs]
                    mine += new if len(each) == 1 else [m for m in new if m not in mine]
                if len(route) > 1:  # one model's n best stay in its own order
                    chained.sort(key=lambda hypothesis: hypothesis[0], reverse=True)
                each[:] = chained[: wanted.nbest or 1]
        if wanted.nbest:
            return cached.answer(Translated(hypotheses, warnings), first)
        return cached.answer(Translated([each[0][1] for each in hypotheses], warnings), first)

    async def run_job(self, request: Request, model: Model, job: Job):
        """The job's result from the model's decoder thread (batcher.py); if the client hangs up
        first, the job is cancelled (dropped unless its batch has started) and ClientDisconnect
        ends the request (app.py: nobody reads its answer)."""
        job.client = request.client.host if request.client else ""  # its line in the queue
        request.scope.setdefault(PAIR, model.pair)  # /attention; translate set its whole route
        try:
            answer = asyncio.wrap_future(model.batcher.submit(job))
        except QueueFull as error:
            raise HTTPError(503, str(error), {"Retry-After": "1"}) from None
        except Stopping as error:
            raise HTTPError(503, str(error), {"Connection": "close"}) from None
        gone = asyncio.get_running_loop().create_task(hang_up(request))
        gone.add_done_callback(lambda _: answer.cancel())  # and the job with it, if it waits
        try:
            result = await answer
        except asyncio.CancelledError:
            if not gone.done() or gone.cancelled():  # this request itself is cancelled
                raise
            raise ClientDisconnect() from None
        except Stopping as error:  # still waiting at serve.drain_s
            raise HTTPError(503, str(error), {"Connection": "close"}) from None
        finally:
            gone.cancel()
        return result


async def hang_up(request: Request) -> None:
    """Returns when the client disconnects (the body was read: nothing else can come)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
