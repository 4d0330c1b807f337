"""The models a service loads (serving/loaders.py, models.py): lazily, at a pair's first request,
dropped past the memory budget; a version of a pair at its own first request; a small request's
work kept on the event loop, a large one's in a thread."""

import asyncio
import dataclasses
import threading

from seq2seq.serving import api

from helpers import call, running, wait_until
from pairs import DE, EN, FR, IT, SENTENCES, Counted, by_hand, labelled, loader


def test_a_small_requests_work_stays_on_the_event_loop_and_a_large_ones_goes_to_a_thread():
    """Under INLINE_CHARS characters a thread's hand-over would cost more than the work."""

    async def threads() -> tuple[int, int, int]:
        small = await api.off_the_loop(api.INLINE_CHARS, threading.get_ident)
        large = await api.off_the_loop(api.INLINE_CHARS + 1, threading.get_ident)
        return threading.get_ident(), small, large

    loop, small, large = asyncio.run(threads())
    assert small == loop != large


def test_lazy_models_load_at_their_first_request_and_drop_past_the_budget(
    trained_numbers_checkpoint,
):
    """serve.lazy: the first model loaded at start, the others at their first request, in
    their decoder threads (/health and the other pairs answer while one loads); past
    serve.models_mib, the least recently used idle one is dropped, and loaded again when asked."""
    checkpoint = trained_numbers_checkpoint[0]
    pairs = [(EN, DE, 10), (DE, FR, 30), (EN, IT, 30)]  # 70 MiB in all, over a budget of 50
    engines = [labelled(checkpoint, source, target) for source, target, _ in pairs]
    loads = [Counted(engines[0]), Counted(engines[1], held=True), Counted(engines[2])]
    loaders = [loader(e, mib, c) for e, (_, _, mib), c in zip(engines, pairs, loads, strict=True)]

    def translate(source: str, target: str) -> list[str]:
        body = {"text": SENTENCES, "source": source, "target": target}
        status, answer, _ = call(server.url, "POST", "/translate", body)
        assert status == 200, answer
        return answer["translations"]

    def loaded() -> list[bool]:
        return [m["loaded"] for m in call(server.url, "GET", "/info")[1]["models"]]

    with running(loaders, lazy=True, models_mib=50) as server:
        assert [c.loads for c in loads] == [1, 0, 0] and loaded() == [True, False, False]
        waiting = threading.Thread(target=translate, args=("de", "fr"))
        waiting.start()  # its model's load waits to be released
        try:
            assert call(server.url, "GET", "/health")[0] == 200
            assert translate("en", "de") == by_hand(engines[0], SENTENCES)
        finally:
            loads[1].release.set()
            waiting.join()
        de_fr = server.models.all[1].batcher  # idle once its thread is past the batch it answered
        wait_until(lambda: not de_fr.busy, "de-fr's decoder to be idle")
        assert loaded() == [True, True, False]
        assert translate("en", "it") == by_hand(engines[2], SENTENCES)
        assert loaded() == [True, False, True]  # de-fr, idle longest, dropped
        assert translate("de", "fr") == by_hand(engines[1], SENTENCES)
        assert [c.loads for c in loads] == [1, 2, 1] and loaded() == [True, True, False]


def test_versions_of_one_pair_load_lazily_each_at_its_first_request(trained_numbers_checkpoint):
    """serve.lazy and serve.models_mib hold per model: a pair's second version is loaded at the
    first request naming it, and dropped past the budget when another is asked for."""
    checkpoint = trained_numbers_checkpoint[0]
    engines = [
        labelled(checkpoint, EN, DE),
        labelled(checkpoint, EN, DE),
        labelled(checkpoint, DE, FR),
    ]
    loads = [Counted(engine) for engine in engines]
    loaders = [loader(e, 20, c) for e, c in zip(engines, loads, strict=True)]
    loaders[1] = dataclasses.replace(loaders[1], name="tuned")

    def loaded() -> list[bool]:
        return [m["loaded"] for m in call(server.url, "GET", "/info")[1]["models"]]

    with running(loaders, lazy=True, models_mib=50) as server:
        assert loaded() == [True, False, False]
        body = {"text": SENTENCES, "model": "tuned"}
        assert call(server.url, "POST", "/translate", body)[0] == 200
        assert loaded() == [True, True, False]
        tuned = server.models.all[1].batcher  # idle once its thread is past the batch it answered
        wait_until(lambda: not tuned.busy, "the tuned model's decoder to be idle")
        body = {"text": SENTENCES, "source": "de", "target": "fr"}
        assert call(server.url, "POST", "/translate", body)[0] == 200
        assert loaded() == [True, False, True] and [c.loads for c in loads] == [1, 1, 1]
