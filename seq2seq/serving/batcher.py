"""The translation service's batcher: the threads that run the model, a batch each at a time
(one, or as many as the engine decodes at once: its replicas, serve.threads).

    submit(job), from any thread (the HTTP handlers): a job holds a request's texts, each as its
      sentences (seq2seq/text/sentences.py; core.py split the request's, and gives each
      sentence as a text of its own)
      -> Busy if the waiting jobs would hold more than serve.max_queue_work (characters x
         beam size); Stopping once drain() was called; else the job waits in its client's
         line, and submit returns its future
    a decoder thread (the only ones that run the model: one a batch the engine decodes at
    once, engine.replicas)
      the jobs that wait (and with serve.batch_window_ms, those that arrive that long after
      the first while the batch holds fewer jobs than the service has open connections:
      each client's next request comes as soon as it has read its answer), up to
      serve.max_batch_sentences sentences (a larger job: a batch of its own), taking the
      clients' lines in
      turn (one job each), so that one client's backlog does not hold another's one
      sentence; a job whose future was cancelled (its client went away) is dropped unread
      -> grouped by options (beam_size, nbest; None: attention) -> one decoding per group of
         all its jobs' sentences (a group that fails is decoded again job by job: only a
         failing job gets the error)
      -> each job's future gets its own result (engines.py's Translated: its texts'
         translations, or n-best, warnings and confidence signals, the job holding the
         engine's calibration; the Attention of an attention job), or its exception: each
         route makes its own JSON of it
      -> on_batch(batcher, batch, seconds), if set: prometheus.py's figures (serve.metrics)
    swap(engine, version, load), from any thread (versions.py): the engine of the model's
             next batch on; the batch decoding now ends on the one it began with (a batch
             reads the engine once), which is then dropped (swap gives it back, to watch)
    drain(within_s): stop waiting for batch windows, refuse new jobs; past within_s seconds,
             the jobs still waiting get Stopping; the thread ends once the queue is empty
             (stop() waits for that)

A job's result is what `python -m seq2seq.translate` gets for the job's texts, from the same
translate_texts: translations (each sentence's on one line, joined in the white space between
the text's sentences, line breaks kept) or the n-best with their scores, and the warnings of
each text. Nothing here knows HTTP or JSON: tests/serving/test_batcher.py drives it directly.
"""

import dataclasses
import threading
import time
from collections import OrderedDict, deque
from concurrent.futures import Future

from seq2seq.config import DecodeConfig, ServeConfig
from seq2seq.decoding.beam import beams_for
from seq2seq.decoding.confidence import Calibration
from seq2seq.decoding.engines import Engine, Translated, translate_texts
from seq2seq.serving.refusals import Busy, Stopping
from seq2seq.text.sentences import Texts


@dataclasses.dataclass(frozen=True)
class Options:
    """How a request's texts are decoded, what it may change of each model's decode settings:
    the jobs of a batch are grouped by these (and the translations cached by them)."""

    beam_size: int | None = None  # None: the model's own (its config's decode.beam_size)
    nbest: int | None = None  # None: the best translation only, as text
    placeholders: str | None = None  # protect | off; None: the model's decode.placeholders
    terms: tuple[tuple[str, str], ...] = ()  # a glossary's (source, target) entries to follow
    # each text split into its sentences (where serve.split_sentences); False: each whole
    # (DeepL's split_sentences 0)
    split: bool = True

    def applied(self, decode: DecodeConfig, beams: int) -> DecodeConfig:
        """A model's `decode` settings with these options, decoding with `beams` beams."""
        placeholders = self.placeholders or decode.placeholders
        return dataclasses.replace(decode, beam_size=beams, placeholders=placeholders)


@dataclasses.dataclass(eq=False)
class Job:
    """One request's work. Cancelling its future before its batch starts drops it."""

    texts: Texts
    options: Options | None  # None: the attention of the one sentence (the torch engine)
    client: str = ""  # its client's address: each client's jobs wait in their own line
    future: Future = dataclasses.field(default_factory=Future)
    # set by its decoder thread: the calibration of the engine that decoded it (None: none),
    # which maps its answer's signals to confidences (confidences.py)
    calibration: Calibration | None = None

    @property
    def sentences(self) -> list[str]:
        """What the job has to decode: its texts' sentences."""
        return self.texts.sentences

    @property
    def characters(self) -> int:
        return sum(len(sentence) for sentence in self.sentences)


class Batcher:
    """The threads that run the model, as many as the engine decodes batches at once (its
    replicas), each a batch at a time. With `load` and no `engine`, the model is loaded by
    the thread of its first batch when it comes (serve.lazy), and again after `unload`.
    `beam_size`: the model's own (default: the engine's config's), which a job that names
    none is decoded with, and counted at in the queue. `version`: the
    version of its experiment the engine is (versions.py; None: its own best.pt, or a model
    that follows none)."""

    def __init__(
        self, engine: Engine | None, settings: ServeConfig, load=None, on_load=None,
        beam_size: int | None = None, version: str | None = None,
    ):  # fmt: skip
        self.engine, self.settings, self.load, self.on_load = engine, settings, load, on_load
        self.version = version
        self.beam_size = beam_size or engine.config.decode.beam_size
        self.last_used = time.monotonic()
        self.decoding = self.decoding_jobs = 0  # the batches being decoded now, their jobs
        self.loading = threading.Lock()  # one decoder thread loads the model (serve.lazy)
        # client -> its waiting jobs, the client to serve next first
        self.waiting: OrderedDict[str, deque[Job]] = OrderedDict()
        self.changed = threading.Condition()  # guards waiting and draining
        self.draining = False
        self.forming = self.forming_work = 0  # of the batches that wait for their windows to end
        self.requests = self.batches = self.sentences = 0  # decoded so far, for /health
        self.on_batch = None  # on_batch(self, batch, seconds) after each batch (prometheus.py)
        # connections() -> the service's open connections (server.py), which a batch waits
        # for within its window; None: a batch always waits its window out (or fills)
        self.connections = None
        self.threads: list[threading.Thread] = []
        self.staff(engine.replicas if engine else 1)

    def staff(self, decoders: int) -> None:
        """As many decoder threads as `decoders` (an engine's replicas), at least."""
        while len(self.threads) < decoders:
            thread = threading.Thread(target=self.run, name="decoder", daemon=True)
            self.threads.append(thread)
            thread.start()

    @property
    def busy(self) -> bool:
        """Whether a batch is being decoded."""
        return self.decoding > 0

    def submit(self, job: Job) -> Future:
        with self.changed:
            if self.draining:
                raise Stopping("the service is shutting down")
            self.drop_cancelled()  # now, not when the decoder reaches them
            queued, most, work = self.queued_work(), self.settings.max_queue_work, self.work(job)
            if queued + work > most:
                raise Busy(
                    f"the decoder's queue holds {queued:,} of work (characters x beam size), "
                    f"{work:,} more would pass its {most:,} (serve.max_queue_work): try "
                    "again later"
                )
            self.waiting.setdefault(job.client, deque()).append(job)
            self.changed.notify()
        return job.future

    def drop_cancelled(self) -> None:
        """(Holding the lock.) The jobs whose clients went away leave their lines."""
        for client, jobs in list(self.waiting.items()):
            kept = deque(job for job in jobs if not job.future.cancelled())
            if kept:
                self.waiting[client] = kept
            else:
                del self.waiting[client]

    def queued_jobs(self) -> list[Job]:
        """(Holding the lock.) The waiting jobs whose clients are still there."""
        jobs = (job for line in self.waiting.values() for job in line)
        return [job for job in jobs if not job.future.cancelled()]

    def queued_sentences(self) -> int:
        """Sentences waiting to be decoded: in the queue (their clients still there), or in
        the batch that waits for its window to end."""
        with self.changed:
            return self.forming + sum(len(job.sentences) for job in self.queued_jobs())

    def queued_work(self) -> int:
        """The work of the sentences that queued_sentences counts."""
        with self.changed:
            return self.forming_work + sum(self.work(job) for job in self.queued_jobs())

    def beams(self, options: Options | None) -> int:
        """The beams a job with these options is decoded with: its beam size, else the
        model's own (an attention job: one)."""
        if options is None:
            return 1
        return beams_for(options.beam_size or self.beam_size, options.nbest)

    def work(self, job: Job) -> int:
        """What decoding a job costs, roughly: characters x beams."""
        return self.beams(job.options) * job.characters

    def drain(self, within_s: float | None = None) -> None:
        with self.changed:
            self.draining = True
            self.changed.notify_all()
        if within_s is not None:
            timer = threading.Timer(within_s, self.abandon)
            timer.daemon = True
            timer.start()

    def abandon(self) -> None:
        """The jobs still waiting get Stopping (the service's 503), not an answer."""
        with self.changed:
            for job in self.queued_jobs():
                if job.future.set_running_or_notify_cancel():
                    job.future.set_exception(Stopping("the service is shutting down"))
            self.waiting.clear()
            self.changed.notify_all()

    def stop(self, wait: bool = True) -> None:
        """Drain, and wait for the threads to end (`wait`), or not: they are daemons."""
        self.drain()
        for thread in self.threads if wait else ():
            thread.join()

    def run(self) -> None:
        while batch := self.collect():
            started = time.monotonic()
            try:
                self.run_batch(batch)
            finally:
                with self.changed:
                    self.decoding -= 1
                    self.decoding_jobs -= len(batch)
                    self.last_used = time.monotonic()
                if self.on_batch:
                    self.on_batch(self, batch, self.last_used - started)

    def loaded(self) -> Engine:
        """(A decoder thread.) The engine, loaded now if it is not (by one thread)."""
        with self.loading:
            if self.engine is None:
                self.engine = self.load()
                self.staff(self.engine.replicas)
                if self.on_load:
                    self.on_load(self)
            return self.engine

    def swap(self, engine: Engine, version: str | None, load) -> Engine | None:
        """`engine` (of `version`; `load` loads it again after an unload) decodes from the
        next batch on, if the model is loaded (else None: nothing changed); -> the engine it
        replaced. The engine is set before the version: a translation cached under the new
        version (translation_cache.py) is the new engine's."""
        with self.changed:
            replaced = self.engine
            if replaced is not None:
                self.engine = engine
                self.staff(engine.replicas)
                self.version, self.load = version, load
            return replaced

    def unload(self) -> bool:
        """Drop the engine if it can be loaded again and nothing waits for it or runs on it."""
        with self.changed:
            if self.load is None or self.engine is None or self.busy or self.queued_jobs():
                return False
            self.engine = None
            return True

    def collect(self) -> list[Job]:
        """The next batch: the first job, then those that arrive within the window and fit.
        Empty once draining and nothing waits."""
        most = self.settings.max_batch_sentences
        with self.changed:
            first = self.take(None, deadline=None)  # a job larger than a batch: one alone
            if first is None:
                return []
            batch, sentences = [first], len(first.sentences)
            self.count_forming(first, 1)
            deadline = time.monotonic() + self.settings.batch_window_ms / 1000
            while sentences < most and (
                job := self.take(most - sentences, self.waits_until(deadline, len(batch)))
            ):
                batch.append(job)
                sentences += len(job.sentences)
                self.count_forming(job, 1)
            for job in batch:
                self.count_forming(job, -1)
            self.decoding += 1
            self.decoding_jobs += len(batch)
        return batch

    def count_forming(self, job: Job, sign: int) -> None:
        """(Holding the lock.) `job` counted into (sign 1) or out of (-1) the batches that
        wait for their windows to end."""
        self.forming += sign * len(job.sentences)
        self.forming_work += sign * self.work(job)

    def waits_until(self, deadline: float, jobs: int) -> float:
        """When a batch of `jobs` requests stops waiting for more: at `deadline`, or at once
        (it takes only what waits now) if every open connection's request is in it already,
        or in a batch being decoded: HTTP/1.1 has one request at a time on a connection, so
        no other can come."""
        if self.connections is not None and jobs + self.decoding_jobs >= self.connections():
            return 0.0
        return deadline

    def take(self, room: int | None, deadline: float | None) -> Job | None:
        """(Holding the lock.) The first job of the next client's line, if it was not
        cancelled and has at most `room` sentences (None: any) (that client then goes to the back),
        waiting for one until `deadline` (None: for ever); None if that job does not fit,
        the deadline passed, or the queue is empty while draining."""
        while True:
            while self.waiting:
                client, line = next(iter(self.waiting.items()))
                if room is not None and len(line[0].sentences) > room:
                    return None
                job = line.popleft()
                del self.waiting[client]
                if line:
                    self.waiting[client] = line  # the back of the turn
                if job.future.set_running_or_notify_cancel():  # False: cancelled, dropped
                    return job
            if self.draining or (deadline is not None and time.monotonic() >= deadline):
                return None
            self.changed.wait(None if deadline is None else deadline - time.monotonic())

    def run_batch(self, batch: list[Job]) -> None:
        with self.changed:
            self.requests += len(batch)
            self.batches += 1
            self.sentences += sum(len(job.sentences) for job in batch)
        groups: dict[Options | None, list[Job]] = {}
        for job in batch:
            groups.setdefault(job.options, []).append(job)
        try:
            engine = self.loaded()  # once: the whole batch on one engine, whatever swap does
        except Exception as error:  # a model that fails to load (serve.lazy): each job says so
            for job in batch:
                job.future.set_exception(error)
            return
        for options, jobs in groups.items():
            self.settle(engine, options, jobs)

    def settle(self, engine: Engine, options: Options | None, jobs: list[Job]) -> None:
        """Give each job its answer; if decoding them together fails, decode each alone."""
        try:
            answers = self.answers(engine, options, jobs)
        except Exception as error:
            if len(jobs) == 1:
                jobs[0].future.set_exception(error)
            else:
                for job in jobs:
                    self.settle(engine, options, [job])
            return
        for job, answer in zip(jobs, answers, strict=True):
            job.future.set_result(answer)

    def answers(self, engine: Engine, options: Options | None, jobs: list[Job]) -> list:
        """Each job's Translated (its texts' translations or n-best, and their warnings), or
        for an attention job (options None) its sentence's Attention."""
        if options is None:
            return [engine.attention(job.sentences[0]) for job in jobs]
        decoding = options.applied(engine.config.decode, self.beams(options))
        together = Texts.together([job.texts for job in jobs])  # one decoding for all
        translated = translate_texts(engine, together, decoding, options.nbest, dict(options.terms))
        answers, start = [], 0
        for job in jobs:
            end = start + len(job.texts)
            answers.append(Translated(*(part[start:end] for part in translated)))
            job.calibration, start = engine.calibration, end
        return answers
