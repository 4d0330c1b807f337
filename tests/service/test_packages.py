"""Argos Translate packages and checkpoints served beside each other: each package decodes as it
says unless the operator sets otherwise, a setting an engine cannot take is refused at start,
and a package's sentences are encoded once."""

import argparse
import copy
import dataclasses
import zipfile

import pytest
from libretranslatepy import LibreTranslateAPI

from benchmarks.service.process import stop_server
from seq2seq import serve
from seq2seq.checkpoint import save_checkpoint
from seq2seq.config import Config, load_config
from seq2seq.decoding.argos_engine import ArgosEngine
from seq2seq.decoding.engines import translate_texts
from seq2seq.exports.argos import PACKAGE_VERSION, export_argos
from seq2seq.service.ours import model_info
from seq2seq.serving.loaders import load_models
from seq2seq.support.errors import UserError
from seq2seq.text.sentences import Texts

from helpers import ROOT, Recording, call, read_address, start_server
from pairs import DE, EN, FR, ORIGIN, SENTENCES, by_hand, labelled


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
    _, options = engine.translator.calls[0]
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
    assert translated[:2] == (["3 la 3", "7 la 7"], [[], []])
