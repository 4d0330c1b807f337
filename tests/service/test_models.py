"""Several models in one service (seq2seq/serving/models.py): each pair routed to its own model,
a pair without one through a pivot language, every language listed, and one pair's backlog
never holding another pair's requests."""

import dataclasses
import threading

import pytest
from libretranslatepy import LibreTranslateAPI

from seq2seq.config import Language
from seq2seq.decoding.engines import TorchEngine, Translations, translate_texts
from seq2seq.service.languages import Languages
from seq2seq.service.libretranslate import formatted
from seq2seq.serving import api
from seq2seq.serving.loaders import Loader
from seq2seq.serving.models import Model, Models
from seq2seq.serving.refusals import Invalid
from seq2seq.support.errors import UserError
from seq2seq.text.sentences import Texts

from helpers import HANG, call, running
from pairs import DE, EN, ES, FR, IT, ORIGIN, SENTENCES, Counted, by_hand, labelled, loader


@pytest.fixture(scope="module")
def en_de_fr(trained_numbers_checkpoint):
    """A service of two models, en -> de and de -> fr (the numbers model twice, relabelled),
    and the two engines."""
    checkpoint = trained_numbers_checkpoint[0]
    first, second = labelled(checkpoint, EN, DE), labelled(checkpoint, DE, FR)
    with running([first, second], max_sentences=8) as server:
        yield server.url, first, second


def test_each_pair_goes_to_its_model_and_the_other_through_the_pivot(en_de_fr):
    url, first, second = en_de_fr
    client = LibreTranslateAPI(url)
    assert client.languages() == [  # each language its own target too, as LibreTranslate's
        {"code": "en", "name": "English", "targets": ["de", "en", "fr"]},
        {"code": "de", "name": "German", "targets": ["de", "fr"]},
        {"code": "fr", "name": "French", "targets": ["fr"]},
    ]
    in_german = by_hand(first, SENTENCES)
    in_french = by_hand(second, in_german)
    assert len(set(in_french) - set(in_german)) > 0, "the second model changes the text"
    for source, target, expected in [("en", "de", in_german), ("en", "fr", in_french)]:
        body = {"text": SENTENCES, "source": source, "target": target}
        status, answer, _ = call(url, "POST", "/translate", body)
        assert status == 200 and answer["translations"] == expected, (source, target)
        assert [client.translate(s, source, target) for s in SENTENCES] == expected
    status, answer, _ = call(url, "POST", "/translate", {"text": in_german, "source": "de"})
    assert status == 400 and "de to de is not available" in answer["error"]
    status, answer, _ = call(url, "POST", "/translate", {"text": SENTENCES})  # the first pair
    assert answer["translations"] == in_german
    status, info, _ = call(url, "GET", "/info")
    assert info["pivoted"] == [{"pair": "en-fr", "through": ["de"]}]
    assert [(m["source"], m["target"]) for m in info["models"]] == [("en", "de"), ("de", "fr")]


def test_the_n_best_through_a_pivot_are_chained_as_argos_translate_chains_them(en_de_fr):
    """nbest 2 from en to fr (through de): the first model's 2 best of each text, each
    translated by the second into its 2 best, the scores summed and the 2 highest kept, as
    Argos Translate's CompositeTranslation gives them (computed here by hand on the same
    decodings: the same batches, the same scores)."""
    url, first, second = en_de_fr

    def nbest(engine: TorchEngine, texts: list[str], language: str) -> list:
        """The 2 best of each text, decoded as the service's batcher decodes them."""
        beams = max(engine.config.decode.beam_size, 2)
        decoding = dataclasses.replace(engine.config.decode, beam_size=beams)
        return translate_texts(engine, Texts(texts, language), decoding, 2).translations

    firsts = nbest(first, SENTENCES, "en")
    seconds = iter(nbest(second, [text for best in firsts for _, text in best], "de"))
    expected = []
    for best in firsts:
        chained = [(score + more, text) for score, _ in best for more, text in next(seconds)]
        expected.append(sorted(chained, key=lambda h: h[0], reverse=True)[:2])
    body = {"text": SENTENCES, "source": "en", "target": "fr", "nbest": 2}
    status, answer, _ = call(url, "POST", "/translate", body)
    assert status == 200
    found = [[(h["score"], h["translation"]) for h in best] for best in answer["translations"]]
    assert [[t for _, t in best] for best in found] == [[t for _, t in best] for best in expected]
    scores = [score for best in found for score, _ in best]
    assert scores == pytest.approx([score for best in expected for score, _ in best])


def test_a_pair_the_service_cannot_reach_is_a_400_naming_what_it_has(en_de_fr):
    status, answer, _ = call(en_de_fr[0], "POST", "/translate", {"text": ["x"], "source": "fr"})
    assert status == 400
    assert answer["error"] == (
        "fr to de is not available: this service translates en (English) to de (German), "
        "de (German) to fr (French)"
    )
    status, answer, _ = call(en_de_fr[0], "POST", "/translate", {"text": ["x"], "target": 3})
    assert status == 400 and "'target' must be a language code" in answer["error"]


def test_a_pair_goes_the_fewest_pairs_through_several_languages_english_first():
    """Models of en-de, de-da, da-it, de-en, en-it and it-es (no engines: routing only):
    de-es goes de-en-it-es, English before Danish for the first of two as short ways; en-es
    through it alone, not through de and da; every language's targets, nearest first."""
    da = Language("da", "Danish")
    pairs = [(EN, DE), (DE, da), (da, IT), (DE, EN), (EN, IT), (IT, ES)]
    models = Models([Model(s, t, f"{s.code}-{t.code}", "", {}, 0, None) for s, t in pairs], None)
    chain = lambda source, target: [m.name for m in models.chain(source, target)]  # noqa: E731
    assert chain("de", "es") == ["de-en", "en-it", "it-es"]
    assert chain("en", "es") == ["en-it", "it-es"]
    assert chain("da", "es") == ["da-it", "it-es"]
    assert models.targets("de") == ["en", "da", "it", "es"]
    assert {"pair": "de-es", "through": ["en", "it"]} in models.pivoted()
    with pytest.raises(Invalid, match="es to en is not available"):
        models.chain("es", "en")
    assert models.chain("de", "de", itself=True) == []  # LibreTranslate's: each text itself
    with pytest.raises(Invalid, match="de to de is not available"):
        models.chain("de", "de")  # ours


def version(engine: TorchEngine, name: str, **about) -> Loader:
    """The engine served under `name`, with `about` (/info's)."""
    return dataclasses.replace(Loader.of(engine), name=name, about=about)


@pytest.fixture(scope="module")
def two_versions(trained_numbers_checkpoint):
    """A service of two versions of en -> de side by side, "original" (the first: the pair's
    default) and "tuned" (its outputs cut to one token: told apart at a glance), and de -> fr;
    the three engines."""
    checkpoint = trained_numbers_checkpoint[0]
    original, tuned = labelled(checkpoint, EN, DE), labelled(checkpoint, EN, DE)
    tuned.config.decode.max_len_a, tuned.config.decode.max_len_b = 0.0, 1
    second = labelled(checkpoint, DE, FR)
    models = [version(original, "original"), version(tuned, "tuned", origin=ORIGIN), second]
    with running(models) as server:
        yield server.url, original, tuned, second


def as_libretranslate(translations: list[str]) -> list[str]:
    """SENTENCES' `translations` as LibreTranslate's API gives them."""
    return [formatted(s, t) for s, t in zip(SENTENCES, translations, strict=True)]


def test_a_request_names_the_version_it_wants_else_gets_the_pairs_first(two_versions):
    url, original, tuned, second = two_versions
    first, other = by_hand(original, SENTENCES), by_hand(tuned, SENTENCES)
    assert first != other, "the two versions translate apart"
    for name, expected in [(None, first), ("original", first), ("tuned", other)]:
        body = {"text": SENTENCES, "source": "en", "target": "de", "model": name}
        status, answer, _ = call(url, "POST", "/translate", body)
        assert status == 200 and answer["translations"] == expected, name
        body = {"q": SENTENCES, "source": "en", "target": "de"} | ({"model": name} if name else {})
        status, answer, _ = call(url, "POST", "/translate", body)
        assert answer["translatedText"] == as_libretranslate(expected)
    client = LibreTranslateAPI(url)  # LibreTranslate's own client names no model: the first
    assert [client.translate(s, "en", "de") for s in SENTENCES] == as_libretranslate(first)
    pivoted = by_hand(second, first)  # through the pair's default
    assert [client.translate(s, "en", "fr") for s in SENTENCES] == as_libretranslate(pivoted)


def test_an_unknown_version_is_a_400_naming_the_pairs(two_versions):
    url = two_versions[0]
    for body, error in [
        ({"text": ["x"], "model": "newest"},
         'no model named "newest" translates en to de: its models are original, tuned'),
        ({"q": "x", "source": "en", "target": "de", "model": "newest"},
         'no model named "newest" translates en to de: its models are original, tuned'),
        ({"text": ["x"], "model": 3}, "'model' must be a model's name (a string), got 3"),
        ({"text": ["x"], "target": "fr", "model": "tuned"},
         "en to fr goes through de: a request names a model only of a pair that has its own"),
    ]:  # fmt: skip
        assert call(url, "POST", "/translate", body)[:2] == (400, {"error": error}), body


def test_info_lists_each_version_with_its_name_and_origin(two_versions):
    status, info, _ = call(two_versions[0], "GET", "/info")
    listed = [{k: m[k] for k in ("name", "source", "target", "default")} for m in info["models"]]
    assert listed == [
        {"name": "original", "source": "en", "target": "de", "default": True},
        {"name": "tuned", "source": "en", "target": "de", "default": False},
        {"name": "numbers", "source": "de", "target": "fr", "default": True},
    ]
    assert info["models"][1]["origin"] == ORIGIN and "origin" not in info["models"][0]
    status, described, _ = call(two_versions[0], "GET", "/openapi.json")
    ours = described["paths"]["/translate"]["post"]["requestBody"]["content"]["application/json"]
    model = ours["schema"]["oneOf"][0]["properties"]["model"]
    assert model == {"enum": ["original", "tuned", "numbers", None]}


def test_two_models_of_one_pair_with_one_name_are_refused_before_any_loads(
    trained_numbers_checkpoint,
):
    engine = labelled(trained_numbers_checkpoint[0], EN, DE)
    loads = [Counted(engine), Counted(engine), Counted(engine)]
    loaders = [loader(engine, 1, load) for load in loads]
    loaders[2] = dataclasses.replace(loaders[2], name="tuned")
    with pytest.raises(UserError) as refused:
        Models.load(loaders, engine.config.serve)
    assert str(refused.value) == (
        "two models of one pair named numbers (en-de): --model NAME=PATH names each"
    )
    assert [load.loads for load in loads] == [0, 0, 0]


class Held:
    """An engine that decodes only once released: a backlog that never ends by itself."""

    def __init__(self, engine: TorchEngine):
        self.engine, self.release, self.started = engine, threading.Event(), threading.Event()

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def translate(self, sentences, decoding) -> Translations:
        self.started.set()
        self.release.wait()
        return self.engine.translate(sentences, decoding)


def test_one_pairs_backlog_never_holds_another_pairs_requests(trained_numbers_checkpoint):
    """A request to en -> de waits on its held model; one to de -> fr is answered meanwhile
    (each model has its decoder thread)."""
    checkpoint = trained_numbers_checkpoint[0]
    held, free = Held(labelled(checkpoint, EN, DE)), labelled(checkpoint, DE, FR)
    with running([held, free]) as server:
        answers = {}
        body = {"text": SENTENCES, "source": "en", "target": "de"}
        waiting = threading.Thread(
            target=lambda: answers.update(held=call(server.url, "POST", "/translate", body))
        )
        waiting.start()
        try:
            assert held.started.wait(60), "the held model never started decoding"
            body = {"text": SENTENCES, "source": "de", "target": "fr"}
            status, answer, _ = call(server.url, "POST", "/translate", body)
            assert status == 200 and answer["translations"] == by_hand(free, SENTENCES)
            assert "held" not in answers
        finally:
            held.release.set()
            waiting.join()
        assert answers["held"][0] == 200


def test_a_text_already_in_the_target_language_comes_back_as_it_is(en_de_fr):
    """As LibreTranslate answers (Argos Translate translates each language to itself
    unchanged): source "auto" detecting the target's language gives that text back, the
    other texts translated; so does a source that is the target; alternatives, none."""
    url, first, _ = en_de_fr
    german = "Zwei Männer spielen Fußball im Park."
    body = {"q": [SENTENCES[0], german], "source": "auto", "target": "de", "alternatives": 1}
    status, answer, _ = call(url, "POST", "/translate", body)
    assert status == 200, answer
    assert answer["translatedText"] == [formatted(SENTENCES[0], by_hand(first, SENTENCES[:1])[0]),
                                        german]  # fmt: skip
    assert answer["alternatives"][1] == []
    assert [d["language"] for d in answer["detectedLanguage"]] == ["en", "de"]
    assert answer["confidence"][1] == 1.0  # itself: sure
    status, answer, _ = call(
        url, "POST", "/translate", {"q": german, "source": "de", "target": "de"}
    )
    assert (status, answer) == (200, {"translatedText": german, "confidence": 1.0})
    status, answer, _ = call(
        url, "POST", "/translate", {"q": german, "source": "it", "target": "it"}
    )
    assert status == 400 and "not available" in answer["error"]


def test_detecting_a_requests_languages_holds_no_other_client(en_de_fr, monkeypatch):
    """source "auto"'s detection (and the HTML parsing beside it) of a request past
    api.INLINE_CHARS (here 0) runs off the event loop: while one request's detection is held,
    another client's request is answered."""
    monkeypatch.setattr(api, "INLINE_CHARS", 0)
    entered, release = threading.Event(), threading.Event()
    detected = Languages.detected

    def held(self, text):
        entered.set()
        assert release.wait(HANG)
        return detected(self, text)

    monkeypatch.setattr(Languages, "detected", held)
    url = en_de_fr[0]
    body = {"q": SENTENCES[0], "source": "auto", "target": "de"}
    answers = []
    waiting = threading.Thread(target=lambda: answers.append(call(url, "POST", "/translate", body)))
    waiting.start()
    try:
        assert entered.wait(HANG)
        assert call(url, "GET", "/health")[0] == 200  # while the detection is held
    finally:
        release.set()
        waiting.join(HANG)
    assert answers[0][0] == 200
