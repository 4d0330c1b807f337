"""What both APIs stand on, as equals: the engine, the batcher, the settings in force and the
API keys; and a job's way from a route to the decoder thread and back.

    a route (ours.py or libretranslate.py): the request checked, its texts split into their
      sentences (Backend.split: seq2seq/text/sentences.py) -> Job(texts, options)
      -> Backend.run_job(request, job): Batcher.submit (batcher.py; its queue full -> 503
         with Retry-After; the service stopping -> 503, Connection: close), then waits for
         the job's future or the client's hang-up (which cancels the job: it is dropped
         unless its batch has started)
      <- the job's result (batcher.py), which the route makes its JSON answer
"""

import asyncio
import dataclasses

from starlette.requests import ClientDisconnect, Request

from seq2seq.config import ServeConfig, translation_pair
from seq2seq.decoding.engines import Engine
from seq2seq.service.access import ApiKeys
from seq2seq.service.api import HTTPError
from seq2seq.service.batcher import Batcher, Job, QueueFull, Stopping
from seq2seq.text.sentences import Texts


@dataclasses.dataclass(frozen=True)
class Backend:
    """The engine (its facts, its vocabularies), the batcher that runs it, the settings in
    force and the keys a request may present."""

    engine: Engine
    batcher: Batcher
    settings: ServeConfig
    keys: ApiKeys

    def split(self, texts: list[str], status: int) -> Texts:
        """A request's texts, each split into its sentences by the source language's rules
        (serve.split_sentences; else each whole); more than serve.max_sentences sentences in
        all are the client's mistake, answered with `status`."""
        source = translation_pair(self.engine.config, self.settings)[0]
        split = Texts(texts, source.code if self.settings.split_sentences else None)
        count, most = len(split.sentences), self.settings.max_sentences
        if count > most:
            raise HTTPError(
                status,
                f"the texts hold {count:,} sentences; the limit is {most:,} (serve.max_sentences)",
            )
        return split

    async def run_job(self, request: Request, job: Job):
        """The job's result from the decoder thread (batcher.py); if the client hangs up
        first, the job is cancelled (dropped unless its batch has started) and ClientDisconnect
        ends the request (app.py: nobody reads its answer)."""
        job.client = request.client.host if request.client else ""  # its line in the queue
        try:
            answer = asyncio.wrap_future(self.batcher.submit(job))
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
