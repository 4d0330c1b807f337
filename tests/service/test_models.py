"""Several models in one service (seq2seq/service/models.py): each pair routed to its own model,
a pair without one through a pivot language, every language listed, and one pair's backlog
never holding another pair's requests."""

import copy
import dataclasses
import subprocess
import threading
import zipfile

import pytest
from libretranslatepy import LibreTranslateAPI

from seq2seq.checkpoint import Checkpoint, save_checkpoint
from seq2seq.config import Language
from seq2seq.decoding.argos import ArgosEngine
from seq2seq.decoding.engine_choice import Loader
from seq2seq.decoding.engines import TorchEngine, Translations
from seq2seq.exports.argos import export_argos
from seq2seq.service.libretranslate import formatted
from seq2seq.service.models import Models
from seq2seq.support.errors import UserError

from helpers import ENV, call, command, read_address, running

EN, DE, FR = Language("en", "English"), Language("de", "German"), Language("fr", "French")
SENTENCES = ["three is three", "twenty one is five", "four hundred six is nine"]


def labelled(checkpoint: Checkpoint, source: Language, target: Language) -> TorchEngine:
    """The numbers model, said to translate `source` to `target` (its config's serve)."""
    config = copy.deepcopy(checkpoint.config)
    config.serve.source_language, config.serve.target_language = source, target
    return TorchEngine(dataclasses.replace(checkpoint, config=config))


@pytest.fixture(scope="module")
def en_de_fr(trained_numbers_checkpoint):
    """A service of two models, en -> de and de -> fr (the numbers model twice, relabelled),
    and the two engines."""
    checkpoint = trained_numbers_checkpoint[0]
    first, second = labelled(checkpoint, EN, DE), labelled(checkpoint, DE, FR)
    with running([first, second], max_sentences=8) as server:
        yield server.url, first, second


def by_hand(engine: TorchEngine, texts: list[str]) -> list[str]:
    return engine.translate(texts, engine.config.decode).outputs


def test_each_pair_goes_to_its_model_and_the_other_through_the_pivot(en_de_fr):
    url, first, second = en_de_fr
    client = LibreTranslateAPI(url)
    assert client.languages() == [
        {"code": "en", "name": "English", "targets": ["de", "fr"]},
        {"code": "de", "name": "German", "targets": ["fr"]},
        {"code": "fr", "name": "French", "targets": []},
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
    assert info["pivoted"] == [{"pair": "en-fr", "through": "de"}]
    assert [(m["source"], m["target"]) for m in info["models"]] == [("en", "de"), ("de", "fr")]


def test_a_pair_the_service_cannot_reach_is_a_400_naming_what_it_has(en_de_fr):
    status, answer, _ = call(en_de_fr[0], "POST", "/translate", {"text": ["x"], "source": "fr"})
    assert status == 400
    assert answer["error"] == (
        "fr to de is not available: this service translates en (English) to de (German), "
        "de (German) to fr (French)"
    )
    status, answer, _ = call(en_de_fr[0], "POST", "/translate", {"text": ["x"], "target": 3})
    assert status == 400 and "'target' must be a language code" in answer["error"]


def test_two_models_of_one_pair_are_refused(trained_numbers_checkpoint):
    engine = labelled(trained_numbers_checkpoint[0], EN, DE)
    with pytest.raises(UserError, match="two models translate en-de: serve one of each"):
        Models.load([Loader.of(engine)] * 2, engine.config.serve)


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


def test_the_command_serves_a_checkpoint_and_a_folder_of_installed_packages(
    trained_joint_numbers_checkpoint, tmp_path
):
    """serve --model CHECKPOINT --model FOLDER: our checkpoint (en -> de) and the Argos
    package installed in FOLDER (de -> fr), en -> fr through German, as by hand."""
    checkpoint = trained_joint_numbers_checkpoint[0]
    first = labelled(checkpoint, EN, DE)
    save_checkpoint(
        tmp_path / "en_de.pt", first.config, checkpoint.model, checkpoint.src_vocab,
        checkpoint.tgt_vocab, {},
    )  # fmt: skip
    export_argos(labelled(checkpoint, DE, FR).checkpoint, tmp_path / "de_fr.argosmodel")
    with zipfile.ZipFile(tmp_path / "de_fr.argosmodel") as archive:
        archive.extractall(tmp_path / "packages")  # as Argos Translate installs it
    second = ArgosEngine.load(tmp_path / "de_fr.argosmodel")
    process = subprocess.Popen(
        command("seq2seq.serve", "--engine", "torch", "--model", str(tmp_path / "en_de.pt"),
                "--model", str(tmp_path / "packages"), "--port", "0"),
        stderr=subprocess.PIPE, text=True, env=ENV,
    )  # fmt: skip
    try:
        client = LibreTranslateAPI(read_address(process))
        assert [language["code"] for language in client.languages()] == ["en", "de", "fr"]
        expected = by_hand(second, by_hand(first, SENTENCES))
        assert [client.translate(s, "en", "fr") for s in SENTENCES] == expected
    finally:
        process.kill()
        process.wait()


def test_source_auto_detects_each_texts_language_among_the_services(en_de_fr):
    """LibreTranslate's source "auto" and /detect: among the service's source languages (en,
    de), each text translated from its own."""
    url, first, second = en_de_fr
    client = LibreTranslateAPI(url)
    german = "Zwei Männer spielen Fußball im Park."
    assert client.detect(german)[0]["language"] == "de"
    assert [c["language"] for c in client.detect("Two men play football")] == ["en", "de"]
    body = {"q": [SENTENCES[0], german], "source": "auto", "target": "fr"}
    status, answer, _ = call(url, "POST", "/translate", body)
    raw = by_hand(second, by_hand(first, SENTENCES[:1])) + by_hand(second, [german])
    expected = [
        formatted(text, translation) for text, translation in zip(body["q"], raw, strict=True)
    ]
    assert expected[1].endswith("."), "LibreTranslate's formatting: the source's final mark"
    assert status == 200 and answer["translatedText"] == expected
    assert [d["language"] for d in answer["detectedLanguage"]] == ["en", "de"]


IT = Language("it", "Italian")


class Counted:
    """A model's loader that counts its loads, and (held) waits to be released first."""

    def __init__(self, engine: TorchEngine, held: bool = False):
        self.engine, self.loads = engine, 0
        self.release = threading.Event()
        if not held:
            self.release.set()

    def __call__(self) -> TorchEngine:
        self.release.wait()
        self.loads += 1
        return self.engine


def loader(engine: TorchEngine, mib: int, load: Counted) -> Loader:
    return dataclasses.replace(Loader.of(engine), weights_bytes=mib * 2**20, load=load)


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
        assert loaded() == [True, True, False]
        assert translate("en", "it") == by_hand(engines[2], SENTENCES)
        assert loaded() == [True, False, True]  # de-fr, idle longest, dropped
        assert translate("de", "fr") == by_hand(engines[1], SENTENCES)
        assert [c.loads for c in loads] == [1, 2, 1] and loaded() == [True, True, False]
