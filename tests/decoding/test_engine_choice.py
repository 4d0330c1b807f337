"""--engine auto: CTranslate2 decodes translations, greedy and beam search, from an export
cached beside the checkpoint, made once and again when the checkpoint changes; our code draws
the attention pictures; the outputs are those of --engine torch."""

import dataclasses
import re
import shutil
import subprocess

import pytest

from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.config import Config
from seq2seq.decoding.ctranslate2_engine import CTranslate2Engine
from seq2seq.decoding.engine_choice import load_engine
from seq2seq.decoding.engines import TorchEngine
from seq2seq.decoding.exported import Exported, export_folder
from seq2seq.serving.loaders import load_models
from seq2seq.support.errors import UserError
from seq2seq.support.paths import EXPORT_SOURCE

from helpers import ENV, HANG, assert_same_or_tied, command

pytest.importorskip(
    "ctranslate2", reason='CTranslate2 is an optional extra: pip install ".[export]"'
)

SENTENCES = ["one is one", "seven is seven", "three is three", ""]
FLOAT32 = {"compute_type": "float32"}  # CTranslate2's weights as torch's: like for like


@pytest.fixture
def checkpoint(seed_run, tmp_path):
    """A copy of the seed run's best.pt in a folder of its own (the cache goes beside it)."""
    return shutil.copy(seed_run / "best.pt", tmp_path / "best.pt")


@pytest.mark.same_outputs
def test_auto_caches_the_export_and_translates_as_the_torch_engine(checkpoint):
    engine = load_engine(checkpoint=checkpoint, decode=FLOAT32)  # fp32: torch's on the CPU
    assert isinstance(engine, Exported)
    folder = export_folder(checkpoint)
    assert engine.folder == folder and folder.name == "best.ct2"
    assert (folder / EXPORT_SOURCE).read_text() == engine.checkpoint.sha256 != ""
    ours = load_engine(checkpoint=checkpoint, choice="torch")
    assert isinstance(ours, TorchEngine)
    greedy = dataclasses.replace(ours.config.decode, beam_size=1)
    beams = dataclasses.replace(greedy, beam_size=3)
    for decoding in (greedy, beams):  # the same, or different only at a tie (docs/testing.md)
        fast, slow = engine.translate(SENTENCES, decoding), ours.translate(SENTENCES, decoding)
        assert fast.warnings == slow.warnings
        assert_same_or_tied(ours.checkpoint, SENTENCES, slow.outputs, fast.outputs)
    assert engine.translate(SENTENCES, greedy).outputs[:2] == ["1 la 1", "7 la 7"]
    theirs, mine = engine.translate_nbest(SENTENCES, beams), ours.translate_nbest(SENTENCES, beams)
    assert theirs.warnings == mine.warnings
    for fast, slow in zip(theirs.outputs, mine.outputs, strict=True):
        assert [text for _, text in fast] == [text for _, text in slow]
        assert [score for score, _ in fast] == pytest.approx([score for score, _ in slow], abs=1e-5)
    assert engine.attention("one is one").translation == "1 la 1"


def test_the_cache_is_made_again_only_when_the_checkpoint_changes(checkpoint, seed_run):
    load_engine(checkpoint=checkpoint)
    model = export_folder(checkpoint) / "model.bin"
    model.write_bytes(model.read_bytes())  # a new inode time, to tell a rebuild apart
    first = model.stat().st_mtime_ns
    load_engine(checkpoint=checkpoint)
    assert model.stat().st_mtime_ns == first  # the same checkpoint: used as it is
    shutil.copy(seed_run / "last.pt", checkpoint)  # the same weights, another file: new sum
    engine = load_engine(checkpoint=checkpoint)
    assert (export_folder(checkpoint) / EXPORT_SOURCE).read_text() == engine.checkpoint.sha256
    assert model.stat().st_mtime_ns != first


def test_a_cache_that_cannot_be_written_leaves_the_torch_engine_with_a_warning(checkpoint, capsys):
    export_folder(checkpoint).write_text("not a folder of ours")
    engine = load_engine(checkpoint=checkpoint)
    assert type(engine) is TorchEngine  # not Exported, a TorchEngine too
    assert "cannot cache the CTranslate2 export" in capsys.readouterr().err
    assert export_folder(checkpoint).read_text() == "not a folder of ours"


def test_engine_ctranslate2_without_a_model_decodes_the_export_beside(checkpoint):
    engine = load_engine(checkpoint=checkpoint, choice="ctranslate2")
    assert isinstance(engine, CTranslate2Engine)
    assert engine.translate(["two is two"], engine.config.decode).outputs == ["2 la 2"]


@pytest.mark.parametrize("beam_size", [1, 3])
def test_each_sentence_of_a_ctranslate2_batch_stops_at_its_own_length_limit(checkpoint, beam_size):
    """CTranslate2 takes one limit per call: greedy outputs are cut to their own limit, as
    greedy.py does, and beam search runs once per limit, whatever else is in the batch."""
    ours = load_engine(checkpoint=checkpoint, choice="torch")
    fast = load_engine(checkpoint=checkpoint, choice="ctranslate2", decode=FLOAT32)
    short = dataclasses.replace(
        ours.config.decode, beam_size=beam_size, max_len_a=0.5, max_len_b=0, no_repeat_ngram=0
    )
    batch = ["one is one", "one is one one is one one is one", "two is two"]
    expected = ours.translate(batch, short).outputs
    assert expected[0::2] == ["1 la", "2 la"]  # 4 pieces with EOS: a limit of 2
    assert fast.translate(batch, short).outputs == expected


def test_translate_by_default_writes_the_cache_and_says_which_engine_decodes(checkpoint):
    done = subprocess.run(
        command("seq2seq.translate", "--checkpoint", str(checkpoint), "five is five"),
        capture_output=True, text=True, env=ENV, timeout=HANG, cwd=checkpoint.parent,
    )  # fmt: skip
    said = (
        "decoding with ctranslate2 (translations), torch (attention) on cpu in float32 (auto: "
        "no validation split in data/seed/ to measure on, as saved), a batch at a time, 1 "
        "thread each\n"
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "5 la 5\n", said)
    assert (export_folder(checkpoint) / "model.bin").exists()


def test_a_model_to_serve_is_known_by_its_kind_or_refused_in_one_line(tmp_path, seed_run):
    """serve --model: a checkpoint is known by its config alone (its pair, its size), loaded
    later; a path of no known kind, or a missing checkpoint, is one line."""
    (loader,) = load_models([str(seed_run / "best.pt")], Config(), "torch", "cpu")
    assert [language.code for language in loader.languages(None)] == ["en", "digits"]
    assert loader.weights_bytes == (seed_run / "best.pt").stat().st_size
    assert loader.load().config.experiment == "seed"
    assert loader.beam_size == loader.load().config.decode.beam_size  # what a queue counts
    with pytest.raises(UserError, match=r"--model .*: not a config \(.yaml\), a checkpoint"):
        load_models([str(tmp_path)], Config(), "auto", "cpu")
    with pytest.raises(UserError, match="no trained model at .*missing.pt"):
        load_models([str(tmp_path / "missing.pt")], Config(), "auto", "cpu")


def test_a_model_to_serve_is_named_by_name_equals_path_else_by_its_experiment(tmp_path, seed_run):
    """serve --model NAME=PATH: NAME; without one, the checkpoint's experiment. A path that
    exists as written is a path, "=" and all."""
    odd = shutil.copy(seed_run / "best.pt", tmp_path / "a=b.pt")
    arguments = [f"tuned={seed_run / 'best.pt'}", str(seed_run / "best.pt"), str(odd)]
    loaders = load_models(arguments, Config(), "torch", "cpu")
    assert [(loader.name, loader.path) for loader in loaders] == [
        ("tuned", str(seed_run / "best.pt")), ("seed", str(seed_run / "best.pt")),
        ("seed", str(odd)),
    ]  # fmt: skip
    missing = tmp_path / "missing.pt"
    with pytest.raises(UserError, match=f"^no trained model at {re.escape(str(missing))}$"):
        load_models([f"tuned={missing}"], Config(), "auto", "cpu")


def test_a_checkpoint_from_an_int8_package_decodes_int8_where_nothing_is_measured(
    checkpoint, monkeypatch
):
    """No validation split to measure on (an imported package's): its package's type, int8,
    not float32 four times slower; a float32 package's stays as saved."""
    monkeypatch.chdir(checkpoint.parent)  # no data/ here
    loaded = load_checkpoint(checkpoint)
    for quantization, expected in (("int8", "int8"), ("float32", "float32")):
        info = {**loaded.info, "origin": {"name": "x.argosmodel", "quantization": quantization}}
        vocabs = (loaded.src_vocab, loaded.tgt_vocab)
        save_checkpoint(checkpoint, loaded.config, loaded.model, *vocabs, info)
        facts = load_engine(checkpoint=checkpoint, choice="ctranslate2").facts()
        kind, why = facts["compute_type"].split(" ", 1)  # int8: int8_float32 on a CPU
        assert kind.startswith(expected) and why.startswith("(auto: no validation split")
