"""serve.translation_cache (seq2seq/serving/translation_cache.py): a text asked again is
answered without decoding, exactly as decoding would answer it; the beam size, n-best,
placeholders and model each have their own entries; the least recently used goes past the
size; off, every text is decoded; n-best and pivots, through both APIs, answered the same with
the cache and without.

The models are stand-ins (Marking) whose every output names the model, the beam size and the
placeholders it was decoded with, and whose warnings name the sentence: an answer served from
the wrong entry would show."""

import threading
from contextlib import ExitStack

from seq2seq.config import Language, config_from_dict
from seq2seq.decoding.engines import Translations
from seq2seq.serving.loaders import Loader

from helpers import call, running

EN, DE, FR = Language("en", "English"), Language("de", "German"), Language("fr", "French")


class Vocabulary(list):
    """/info's vocabularies: empty."""

    def all_pieces(self) -> list[str]:
        return []


class Marking:
    """A stand-in engine: a sentence's translation is `tag(sentence)` with the beam size and
    placeholders it was decoded with; each sentence warned about; `decoded`, every sentence
    it was given."""

    config = config_from_dict({})
    shows_attention = False
    src_vocab = tgt_vocab = Vocabulary()  # /info's: none
    calibration = None  # no confidences
    replicas = 1  # a batch at a time

    def __init__(self, tag: str):
        self.tag, self.decoded, self.lock = tag, [], threading.Lock()

    def facts(self) -> dict:
        return {"engine": "marking", "checkpoint": {}}

    def mark(self, sentence: str, decoding) -> str:
        return f"{self.tag}({sentence}) b{decoding.beam_size} {decoding.placeholders}"

    def seen(self, sentences: list[str]) -> list[list[str]]:
        with self.lock:
            self.decoded += sentences
        return [[f"{self.tag} read {sentence!r}"] for sentence in sentences]

    def translate(self, sentences: list[str], decoding) -> Translations:
        warnings = self.seen(sentences)
        marked = [self.mark(s, decoding) for s in sentences]
        return Translations(marked, warnings, [-len(s) / 100 for s in sentences])

    def translate_nbest(self, sentences: list[str], decoding) -> Translations:
        warnings = self.seen(sentences)
        ranked = [
            [(-0.5 * n - len(s) / 100, f"{self.mark(s, decoding)} #{n}") for n in range(3)]
            for s in sentences
        ]
        return Translations(ranked, warnings, [best[0][0] for best in ranked])


def loader(name: str, source: Language, target: Language, engine: Marking) -> Loader:
    return Loader(name, "", lambda settings: (source, target), 0, 4, lambda: engine)


def models() -> tuple[list[Loader], dict[str, Marking]]:
    """en -> de twice (named first and second), and de -> fr: en -> fr goes through de."""
    engines = {name: Marking(name) for name in ("first", "second", "pivot")}
    return [
        loader("first", EN, DE, engines["first"]),
        loader("second", EN, DE, engines["second"]),
        loader("pivot", DE, FR, engines["pivot"]),
    ], engines


def translate(url: str, text: list[str], **fields) -> dict:
    status, answer, _ = call(url, "POST", "/translate", {"text": text, **fields})
    assert status == 200, answer
    return answer


def test_a_text_asked_again_is_decoded_once_and_answered_the_same():
    loaders, engines = models()
    with running(loaders, translation_cache=100) as server:
        url = server.url
        first = translate(url, ["Alpha one. Alpha two.", "beta"])
        assert engines["first"].decoded == ["Alpha one.", "Alpha two.", "beta"]
        health = call(url, "GET", "/health")[1]
        assert health["cache"] == {"entries": 2, "hits": 0, "misses": 2}
        again = translate(url, ["beta", "gamma", "Alpha one. Alpha two."])
        assert engines["first"].decoded == ["Alpha one.", "Alpha two.", "beta", "gamma"]
        assert again["translations"] == [
            first["translations"][1],
            "first(gamma) b4 protect",
            first["translations"][0],
        ]
        assert again["warnings"] == [  # each text's own, numbered by its place in this request
            "line 1: first read 'beta'",
            "line 2: first read 'gamma'",
            "line 3: first read 'Alpha one.'",
            "line 3: first read 'Alpha two.'",
        ]
        after = call(url, "GET", "/health")[1]
        assert after["cache"] == {"entries": 3, "hits": 2, "misses": 3}
        assert after["sentences"] - health["sentences"] == 1  # gamma alone
        translate(url, ["beta"])  # all found: no job at all
        final = call(url, "GET", "/health")[1]
        assert (final["requests"], final["cache"]["hits"]) == (after["requests"], 3)


def test_another_beam_size_nbest_placeholders_or_model_is_not_served_anothers_entry():
    variants = [
        {},
        {"beam_size": 2},
        {"beam_size": 4},  # the model's own, asked for: its own entry, the same translation
        {"nbest": 2},
        {"nbest": 2, "beam_size": 3},
        {"placeholders": "off"},
        {"model": "second"},
        {"target": "fr"},  # through the pivot
    ]
    loaders, engines = models()
    loaders_off, _ = models()
    with running(loaders, translation_cache=100) as on, running(loaders_off) as off:
        for fields in variants:
            answer = translate(on.url, ["delta"], **fields)
            assert answer == translate(off.url, ["delta"], **fields), fields
        # each variant decoded delta once: the first model all but "second"'s
        assert engines["first"].decoded == ["delta"] * 7
        assert engines["second"].decoded == ["delta"]
        assert len(engines["pivot"].decoded) == 1
        for fields in variants:  # again: every one from its own entry
            assert translate(on.url, ["delta"], **fields) == translate(off.url, ["delta"], **fields)
        assert engines["first"].decoded == ["delta"] * 7
        assert call(on.url, "GET", "/health")[1]["cache"] == {
            "entries": len(variants),
            "hits": len(variants),
            "misses": len(variants),
        }


def test_past_its_size_the_least_recently_used_entry_goes():
    loaders, engines = models()
    with running(loaders, translation_cache=2) as server:
        for texts in (["a"], ["b"], ["a"], ["c"], ["a"], ["b"]):  # c pushes out b, not a
            translate(server.url, texts)
        assert engines["first"].decoded == ["a", "b", "c", "b"]
        health = call(server.url, "GET", "/health")[1]
        assert health["cache"] == {"entries": 2, "hits": 2, "misses": 4}


def test_off_every_text_is_decoded_and_health_has_no_cache():
    loaders, engines = models()
    with running(loaders) as server:
        for _ in range(3):
            translate(server.url, ["a", "a"])
        assert engines["first"].decoded == ["a"] * 6
        assert "cache" not in call(server.url, "GET", "/health")[1]


def test_nbest_and_pivots_are_answered_through_the_cache_as_without_it():
    """LibreTranslate's alternatives (its n best) and ours, through the pivot and not, texts
    repeated within a request and across them, some found and some not: every answer the
    cache-off server's, and a request too large refused as it refuses it."""
    requests = [
        {"q": ["Hello there. Bye.", "hello"], "source": "en", "target": "fr", "alternatives": 2},
        {"q": ["hello", "Hello there. Bye.", "new"], "source": "en", "target": "fr"},
        {"q": "hello", "source": "en", "target": "fr", "alternatives": 2},
        {"q": ["hello", "hello"], "source": "en", "target": "de", "alternatives": 1},
        {"text": ["hello", "Hello there. Bye.", "hello"], "target": "fr", "nbest": 3},
        {"text": ["Hello there. Bye.", "new"], "target": "fr", "nbest": 2},
        # 5 sentences, over max_sentences: refused, whether all of them are found or some
        {"text": ["one. two. three.", "four. five."], "target": "fr"},
        {"text": ["one. two. three.", "six. seven."], "target": "fr"},
    ]
    with ExitStack() as stack:
        on = stack.enter_context(running(models()[0], translation_cache=100, max_sentences=4))
        off = stack.enter_context(running(models()[0], max_sentences=4))
        for text in ("one. two. three.", "four. five."):
            translate(on.url, [text], target="fr")
        for _ in range(2):  # the second time, all from the cache
            for request in requests:
                answers = [call(server.url, "POST", "/translate", request) for server in (on, off)]
                assert answers[0][:2] == answers[1][:2], request
        assert answers[0][0] == 413 and "holds 5 sentences" in answers[0][1]["error"]
        assert call(on.url, "GET", "/health")[1]["cache"]["hits"] > 10
