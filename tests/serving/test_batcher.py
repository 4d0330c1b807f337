"""The service's batcher without HTTP: batches within the window, each job its own slice, a
failing job fails alone, the queue is bounded, cancelled jobs are dropped, drain answers what
waits and refuses the rest."""

import threading

import pytest

from seq2seq.config import ServeConfig, config_from_dict
from seq2seq.decoding.engines import Translations
from seq2seq.serving.batcher import Batcher, Job, Options
from seq2seq.serving.refusals import Busy, Stopping
from seq2seq.text.sentences import Texts

from helpers import HANG, wait_until

GREEDY = Options(beam_size=1, nbest=None)


class Shouting:
    """A stand-in engine: a sentence translates as its upper case, "boom" fails, and each
    decoding waits until `gate` is open."""

    config = config_from_dict({})
    calibration = None  # no confidences
    replicas = 1  # a batch at a time

    def __init__(self):
        self.calls: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()

    def translate(self, sentences: list[str], decoding) -> Translations:
        self.calls.append(list(sentences))
        assert self.gate.wait(HANG)
        if "boom" in sentences:
            raise RuntimeError("boom")
        upper = [sentence.upper() for sentence in sentences]
        return Translations(upper, [[]] * len(sentences), [-0.5] * len(sentences))


def batcher(model: Shouting, **settings) -> Batcher:
    return Batcher(model, ServeConfig(**{"batch_window_ms": HANG * 1000.0, **settings}))


def test_jobs_within_the_window_share_one_decoding_and_each_gets_its_slice():
    model = Shouting()
    jobs = [Job(Texts(["a"]), GREEDY), Job(Texts(["b", "c"]), GREEDY), Job(Texts(["d"]), GREEDY)]
    running = batcher(model, max_batch_sentences=4)  # the 4th sentence closes the batch
    futures = [running.submit(job) for job in jobs]
    assert [f.result(HANG).translations for f in futures] == [["A"], ["B", "C"], ["D"]]
    assert model.calls == [["a", "b", "c", "d"]]
    running.stop()


def test_a_batch_waits_within_its_window_only_for_the_connections_not_in_it():
    """With every open connection's request in the batch, none can come: it is decoded at
    once, however long the window; with one connection more, it waits for that one."""
    model = Shouting()
    running = batcher(model)  # a window of HANG seconds
    running.connections = lambda: 1
    assert running.submit(Job(Texts(["a"]), GREEDY)).result(HANG / 2).translations == ["A"]
    running.connections = lambda: 2
    first = running.submit(Job(Texts(["b"]), GREEDY))
    wait_until(lambda: running.forming == 1, "a batch waiting for the second connection")
    second = running.submit(Job(Texts(["c"]), GREEDY))
    assert [first.result(HANG).translations, second.result(HANG).translations] == [["B"], ["C"]]
    assert model.calls == [["a"], ["b", "c"]]
    running.stop()


class Meeting(Shouting):
    """A stand-in engine of `parties` replicas whose decodings each wait until that many of
    them are under way."""

    def __init__(self, parties: int):
        super().__init__()
        self.replicas = parties
        self.barrier = threading.Barrier(parties, timeout=HANG)

    def translate(self, sentences: list[str], decoding) -> Translations:
        self.barrier.wait()  # BrokenBarrierError: they were not decoded at once
        return super().translate(sentences, decoding)


def test_an_engine_of_two_replicas_decodes_two_batches_at_once_and_loads_once():
    """Two decoder threads for an engine of two replicas: the second batch is decoded while
    the first is, and a model loaded at its first batch (serve.lazy) is loaded once."""
    loads = []
    model = Meeting(parties=2)
    settings = ServeConfig(batch_window_ms=0.0, max_batch_sentences=1)  # a job a batch
    running = Batcher(None, settings, load=lambda: loads.append(1) or model, beam_size=1)
    futures = [running.submit(Job(Texts([s]), GREEDY)) for s in ("a", "b")]
    assert sorted(f.result(HANG).translations[0] for f in futures) == ["A", "B"]
    assert loads == [1]
    assert (running.batches, running.requests, running.busy) == (2, 2, False)
    running.stop()
    assert not any(thread.is_alive() for thread in running.threads)


def test_the_sentences_of_a_jobs_texts_are_decoded_together_and_joined_text_by_text():
    model = Shouting()
    running = batcher(model, batch_window_ms=0.0)
    texts = Texts(["one is one.  two is two!\nthree?", "four", ""], "en")
    answer = running.submit(Job(texts, GREEDY)).result(HANG)
    assert answer.translations == ["ONE IS ONE.  TWO IS TWO!\nTHREE?", "FOUR", ""]
    assert model.calls == [["one is one.", "two is two!", "three?", "four", ""]]
    running.stop()


def test_a_job_larger_than_a_batch_is_a_batch_of_its_own_and_the_decoder_goes_on():
    model = Shouting()
    running = batcher(model, batch_window_ms=0.0, max_batch_sentences=2)
    large = running.submit(Job(Texts(["a", "b", "c"]), GREEDY)).result(HANG)  # hung before
    small = running.submit(Job(Texts(["d"]), GREEDY)).result(HANG)
    assert (large.translations, small.translations) == (["A", "B", "C"], ["D"])
    assert model.calls == [["a", "b", "c"], ["d"]]
    running.stop()


def test_a_failing_job_fails_alone_and_its_batch_mates_get_their_answers():
    model = Shouting()
    running = batcher(model, max_batch_sentences=3)
    futures = [running.submit(Job(Texts([s]), GREEDY)) for s in ("a", "boom", "c")]
    assert futures[0].result(HANG).translations == ["A"]
    assert futures[2].result(HANG).translations == ["C"]
    with pytest.raises(RuntimeError, match="boom"):
        futures[1].result(HANG)
    assert model.calls == [["a", "boom", "c"], ["a"], ["boom"], ["c"]]  # then each alone
    running.stop()


def test_the_queue_is_bounded_and_cancelled_jobs_are_dropped():
    model = Shouting()
    model.gate.clear()
    running = batcher(model, batch_window_ms=0.0, max_queue_work=10)
    first = running.submit(Job(Texts(["first"]), GREEDY))
    wait_until(lambda: model.calls == [["first"]], "the first decoding")  # it holds the thread
    abandoned = running.submit(Job(Texts(["x", "y", "z"]), Options(beam_size=3, nbest=None)))
    waiting = running.submit(Job(Texts(["w"]), GREEDY))
    assert (running.queued_sentences(), running.queued_work()) == (4, 3 * 3 + 1)
    with pytest.raises(Busy, match=r"holds 10 of work .*, 1 more .*serve.max_queue_work"):
        running.submit(Job(Texts(["!"]), GREEDY))
    assert abandoned.cancel()  # its client went away
    assert running.queued_sentences() == 1
    model.gate.set()
    assert first.result(HANG).translations == ["FIRST"]
    assert waiting.result(HANG).translations == ["W"]
    assert model.calls == [["first"], ["w"]]  # x, y and z never decoded
    running.stop()


def test_a_job_that_names_no_beam_size_counts_at_the_models_own():
    """A LibreTranslate request names no beam size: an Argos package (beam 4) decodes it with
    four beams, and the queue counts it so."""
    model = Shouting()
    model.gate.clear()
    running = Batcher(model, ServeConfig(batch_window_ms=0.0, max_queue_work=20), beam_size=4)
    running.submit(Job(Texts(["first"]), GREEDY))
    wait_until(lambda: model.calls == [["first"]], "the first decoding")
    model_beam = Options(beam_size=None, nbest=None)
    waiting = running.submit(Job(Texts(["abcd"]), model_beam))
    assert running.queued_work() == 4 * 4
    with pytest.raises(Busy, match=r"holds 16 of work .*, 8 more"):
        running.submit(Job(Texts(["ab"]), model_beam))
    model.gate.set()
    assert waiting.result(HANG).translations == ["ABCD"]
    running.stop()


def test_clients_take_turns_so_one_backlog_does_not_hold_another_client():
    """Five jobs of one client wait; another client's one job is decoded second, not last."""
    model = Shouting()
    model.gate.clear()
    running = batcher(model, batch_window_ms=0.0, max_batch_sentences=1)
    first = running.submit(Job(Texts(["a0"]), GREEDY, client="A"))
    wait_until(lambda: model.calls == [["a0"]], "the first decoding")
    backlog = [running.submit(Job(Texts([f"a{n}"]), GREEDY, client="A")) for n in range(1, 6)]
    other = running.submit(Job(Texts(["b"]), GREEDY, client="B"))
    model.gate.set()
    assert other.result(HANG).translations == ["B"]
    assert [f.result(HANG).translations for f in [first, *backlog]] == [[f"A{n}"] for n in range(6)]
    assert model.calls == [["a0"], ["a1"], ["b"], ["a2"], ["a3"], ["a4"], ["a5"]]
    running.stop()


def test_drain_answers_what_waits_without_the_window_and_refuses_new_jobs():
    model = Shouting()
    running = batcher(model)  # a window of HANG seconds: only drain ends it
    waiting = running.submit(Job(Texts(["a"]), GREEDY))
    running.drain()
    assert waiting.result(HANG).translations == ["A"]
    with pytest.raises(Stopping, match="shutting down"):
        running.submit(Job(Texts(["b"]), GREEDY))
    running.stop()
    assert not any(thread.is_alive() for thread in running.threads)


def test_a_swap_takes_effect_between_two_batches_never_within_one():
    """An engine swapped in while a batch decodes (swap: seq2seq/serving/versions.py's): each
    group of that batch is decoded by the old engine, the next batch by the new one."""
    old, new = Shouting(), Shouting()
    old.gate.clear()
    running = batcher(old, max_batch_sentences=2)  # two sentences close a batch
    greedy = running.submit(Job(Texts(["a"]), GREEDY))
    beam = running.submit(Job(Texts(["b"]), Options(beam_size=2)))  # a group of its own
    wait_until(lambda: old.calls, "the batch decoding")
    assert running.swap(new, "0001", None) is old
    old.gate.set()
    assert [greedy.result(HANG).translations, beam.result(HANG).translations] == [["A"], ["B"]]
    after = running.submit(Job(Texts(["c", "d"]), GREEDY)).result(HANG)
    assert after.translations == ["C", "D"]
    assert (old.calls, new.calls, running.version) == ([["a"], ["b"]], [["c", "d"]], "0001")
    running.stop()
