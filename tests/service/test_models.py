"""Several models in one service (seq2seq/serving/models.py): each pair routed to its own model,
a pair without one through a pivot language, every language listed, and one pair's backlog
never holding another pair's requests."""

import argparse
import asyncio
import copy
import dataclasses
import threading
import zipfile

import pytest
from libretranslatepy import LibreTranslateAPI

from benchmarks.service.process import stop_server
from seq2seq import serve
from seq2seq.checkpoint import Checkpoint, save_checkpoint
from seq2seq.config import Config, Language, load_config
from seq2seq.decoding.argos_engine import ArgosEngine
from seq2seq.decoding.engines import TorchEngine, Translations, translate_texts
from seq2seq.exports.argos import PACKAGE_VERSION, export_argos
from seq2seq.service.languages import Languages
from seq2seq.service.libretranslate import formatted
from seq2seq.service.ours import model_info
from seq2seq.serving import api
from seq2seq.serving.loaders import Loader, load_models
from seq2seq.serving.models import Model, Models
from seq2seq.serving.refusals import Invalid
from seq2seq.support.errors import UserError
from seq2seq.text.sentences import Texts

from helpers import HANG, ROOT, call, read_address, running, start_server, wait_until

EN, DE, FR = Language("en", "English"), Language("de", "German"), Language("fr", "French")
ES = Language("es", "Spanish")
SENTENCES = ["three is three", "twenty one is five", "four hundred six is nine"]
# an imported model's (its checkpoint's info["origin"])
ORIGIN = {
    "name": "translate-en_de-1_9.argosmodel",
    "package_version": "1.9",
    "quantization": "int8",
}


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


def test_the_command_serves_a_checkpoint_and_a_folder_of_installed_packages(
    trained_joint_numbers_checkpoint, tmp_path
):
    """serve --model NAME=CHECKPOINT --model FOLDER: our checkpoint (en -> de) and the Argos
    package installed in FOLDER (de -> fr), en -> fr through German, as by hand; /info names
    each: the checkpoint by NAME, with its origin; the package by its folder, with its version."""
    checkpoint = trained_joint_numbers_checkpoint[0]
    first = labelled(checkpoint, EN, DE)
    save_checkpoint(
        tmp_path / "en_de.pt", first.config, checkpoint.model, checkpoint.src_vocab,
        checkpoint.tgt_vocab, {"origin": ORIGIN},
    )  # fmt: skip
    export_argos(labelled(checkpoint, DE, FR).checkpoint, tmp_path / "de_fr.argosmodel")
    with zipfile.ZipFile(tmp_path / "de_fr.argosmodel") as archive:
        archive.extractall(tmp_path / "packages")  # as Argos Translate installs it
    second = ArgosEngine.load(tmp_path / "de_fr.argosmodel")
    process = start_server("--engine", "torch", "--model", f"tuned={tmp_path / 'en_de.pt'}",
                           "--model", str(tmp_path / "packages"))  # fmt: skip
    try:
        client = LibreTranslateAPI(read_address(process))
        assert [language["code"] for language in client.languages()] == ["en", "de", "fr"]
        expected = by_hand(second, by_hand(first, SENTENCES))
        assert [client.translate(s, "en", "fr") for s in SENTENCES] == expected
        listed = call(client.url, "GET", "/info")[1]["models"]
        assert [(m["name"], m.get("origin"), m.get("package_version")) for m in listed] == [
            ("tuned", ORIGIN, None), (f"translate-de_fr-{PACKAGE_VERSION.replace('.', '_')}",
            None, PACKAGE_VERSION),
        ]  # fmt: skip
    finally:
        stop_server(process)


@pytest.fixture(scope="module")
def numbers_package(trained_joint_numbers_checkpoint, tmp_path_factory):
    """The joint numbers model as an Argos package, its loader as serve --model makes it."""
    package = tmp_path_factory.mktemp("argos") / "numbers.argosmodel"
    export_argos(trained_joint_numbers_checkpoint[0], package)
    return load_models([str(package)], Config(), "auto", "cpu")[0]


def test_an_argos_package_tells_its_own_decoding_and_no_made_up_model(numbers_package):
    """/info of a package: Argos Translate's decoding (beam 4, length penalty 0.2, no rule
    against repeats), which its queue counts at, and the decode settings a package takes; no
    model settings, which a package does not hold."""
    info = model_info(numbers_package.load())
    assert set(info["config"]) == {"decode"}
    argos = {"beam_size": 4, "length_penalty": 0.2, "no_repeat_ngram": 0}
    assert info["config"]["decode"].items() >= argos.items()
    assert not {"cache", "precision", "max_len_a", "max_len_b"} & info["config"]["decode"].keys()
    assert numbers_package.beam_size == 4


def served(*overrides: str, model: tuple[str, ...] = (), checkpoint=None, engine="auto"):
    """The models `python -m seq2seq.serve [--checkpoint C] [--model M ...] [--engine E]
    OVERRIDES` serves (serve.load), on the CPU."""
    overrides = ("serve.threads=0", *overrides)  # torch's threads left as they are
    args = argparse.Namespace(
        model=list(model), checkpoint=checkpoint, engine=engine, device="cpu",
        compute_type=None, overrides=list(overrides),
    )  # fmt: skip
    return serve.load(load_config(ROOT / "config.yaml", overrides), args)


def test_a_packages_beam_size_is_the_operators_when_set(numbers_package):
    """serve --model PACKAGE decode.beam_size=1: greedy decoding, as LibreTranslate's
    ARGOS_BEAM_SIZE=1 (/info says so, and its queue counts at 1); without it, Argos's 4."""
    (loader,) = served("decode.beam_size=1", model=(numbers_package.path,))
    engine = loader.load()
    assert loader.beam_size == engine.config.decode.beam_size == 1
    assert model_info(engine)["config"]["decode"]["beam_size"] == 1
    argos = numbers_package.load()
    greedy = dataclasses.replace(argos.config.decode, beam_size=1)
    texts = Texts(SENTENCES + ["five is five", "nine is nine"])
    expected = translate_texts(argos, texts, greedy)
    assert translate_texts(engine, texts, engine.config.decode) == expected
    (default,) = served(model=(numbers_package.path,))
    assert default.beam_size == default.load().config.decode.beam_size == 4


def test_a_packages_length_penalty_and_repeats_rule_are_the_operators_when_set(numbers_package):
    """decode.length_penalty and no_repeat_ngram reach CTranslate2 for a package too."""
    (loader,) = served("decode.length_penalty=0.6", "decode.no_repeat_ngram=3",
                       model=(numbers_package.path,))  # fmt: skip
    engine = loader.load()
    engine.translator = Recording(engine.translator)
    engine.translate(SENTENCES[:1], engine.config.decode)
    options = engine.translator.calls[0]
    assert (options["length_penalty"], options["no_repeat_ngram_size"]) == (0.6, 3)
    assert model_info(engine)["config"]["decode"]["length_penalty"] == 0.6


@pytest.mark.parametrize("setting", ["decode.max_len_a=1", "decode.precision=fp32"])
def test_a_setting_a_package_cannot_take_is_refused_in_one_line_at_start(numbers_package, setting):
    """A package decodes as Argos Translate does: a setting it has no use for is refused when
    the service starts, before any model loads (serve.lazy loads one at its first request)."""
    key = setting.partition("=")[0]
    with pytest.raises(UserError, match=rf"^{key}: .*numbers.argosmodel[^\n]*$"):
        served(setting, model=(numbers_package.path,))


@pytest.fixture(scope="module")
def beam_5_checkpoint(trained_numbers_checkpoint, tmp_path_factory):
    """The numbers model saved with decode.beam_size 5 (config.yaml's is 1)."""
    checkpoint = trained_numbers_checkpoint[0]
    config = copy.deepcopy(checkpoint.config)
    config.decode.beam_size = 5
    path = tmp_path_factory.mktemp("beam_5") / "best.pt"
    save_checkpoint(path, config, checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab, {})
    return str(path)


@pytest.mark.parametrize("engine", ["torch", "auto"])
def test_a_checkpoints_beam_size_is_its_own_unless_the_command_line_sets_one(
    beam_5_checkpoint, engine
):
    """serve --checkpoint C (or --model C) decode.beam_size=1: beam 1, not the checkpoint's
    5; without it the checkpoint's 5, not config.yaml's 1."""
    for models in ({"checkpoint": beam_5_checkpoint}, {"model": (beam_5_checkpoint,)}):
        (loader,) = served("decode.beam_size=1", engine=engine, **models)
        engine_1 = loader.load()
        assert loader.beam_size == engine_1.config.decode.beam_size == 1
        assert model_info(engine_1)["config"]["decode"]["beam_size"] == 1
        (own,) = served(engine=engine, **models)
        assert own.beam_size == own.load().config.decode.beam_size == 5


def test_a_setting_ctranslate2_has_no_use_for_is_refused_unless_torch_decodes(beam_5_checkpoint):
    """decode.precision is torch's (CTranslate2's is --compute-type): refused where CTranslate2
    decodes the translations (--engine auto, ctranslate2), honoured with --engine torch."""
    with pytest.raises(UserError, match=r"^decode\.precision: .*best\.pt.*--engine torch"):
        served("decode.precision=fp32", checkpoint=beam_5_checkpoint)
    (loader,) = served("decode.precision=fp32", checkpoint=beam_5_checkpoint, engine="torch")
    assert loader.load().config.decode.precision == "fp32"


class Recording:
    """A CTranslate2 translator that keeps the options of each translate_batch call."""

    def __init__(self, translator):
        self.translator, self.calls = translator, []

    def translate_batch(self, tokens, **options):
        self.calls.append(options)
        return self.translator.translate_batch(tokens, **options)

    def __getattr__(self, name):
        return getattr(self.translator, name)


class Counting:
    """A sentencepiece processor that counts its calls to encode."""

    def __init__(self, sp):
        self.sp, self.encodes = sp, 0

    def encode(self, *args, **kwargs):
        self.encodes += 1
        return self.sp.encode(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.sp, name)


def test_an_argos_packages_sentences_are_encoded_once(numbers_package):
    """Each sentence split into pieces once, for the model and for its warnings alike."""
    engine = numbers_package.load()
    engine.src_vocab.sp = counting = Counting(engine.src_vocab.sp)
    translated = engine.translate(["three is three", "seven is seven"], engine.config.decode)
    assert counting.encodes == 2
    assert translated == (["3 la 3", "7 la 7"], [[], []])


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
    status, answer, _ = call(
        url, "POST", "/translate", {"q": german, "source": "de", "target": "de"}
    )
    assert (status, answer) == (200, {"translatedText": german})
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


def test_a_small_requests_work_stays_on_the_event_loop_and_a_large_ones_goes_to_a_thread():
    """Under INLINE_CHARS characters a thread's hand-over would cost more than the work."""

    async def threads() -> tuple[int, int, int]:
        small = await api.off_the_loop(api.INLINE_CHARS, threading.get_ident)
        large = await api.off_the_loop(api.INLINE_CHARS + 1, threading.get_ident)
        return threading.get_ident(), small, large

    loop, small, large = asyncio.run(threads())
    assert small == loop != large


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
