"""Fine-tuning (train.init_from): a run that starts from a trained checkpoint, its vocabularies
kept, and learns new data with its own schedule."""

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from seq2seq import data
from seq2seq.checkpoint import read_state
from seq2seq.config import ConfigError, load_config
from seq2seq.support.errors import Interrupted, UserError
from seq2seq.support.paths import vocab_files
from seq2seq.text.parallel import CorpusError
from seq2seq.train import train
from seq2seq.training import distributed
from seq2seq.training.best_and_last import resume_from_last
from seq2seq.training.finetune import start_from_source
from seq2seq.training.run import set_up
from seq2seq.training.validation import validate

from helpers import ROOT, assert_same_parameters
from small_run import run_log, small_run

pytestmark = pytest.mark.slow  # each trains a model (seconds)

# The small run on small numbers corpora: the source learns numbers without round ones
# (corpus.zero_prob 0) for 300 steps, the fine-tuning mostly round ones ("nine hundred thousand
# four") for 20.
SMALL = small_run("corpus.valid_size=100", "train.average_last=0", "train.best_metric=loss")
SOURCE = [*SMALL, "experiment=source", "corpus.name=plain", "corpus.zero_prob=0",
          "train.max_steps=300", "train.eval_every=100"]  # fmt: skip


def tuning(init_from, *overrides: str) -> list[str]:
    """The fine-tuning's overrides: the round numbers, from the checkpoint `init_from`."""
    return [
        *SMALL, "experiment=round", "corpus.name=round", "corpus.zero_prob=0.9",
        "train.max_steps=20", "train.eval_every=10", "train.lr=0.002",
        f"train.init_from={init_from}", *overrides,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """runs/source/best.pt (absolute) of a small model trained briefly on numbers without round
    ones; its corpus and vocabularies beside it, in data/plain/."""
    directory = tmp_path_factory.mktemp("source")
    before = Path.cwd()
    os.chdir(directory)
    try:
        (directory / "config.yaml").write_text((ROOT / "config.yaml").read_text())
        data.main(SOURCE)
        train(load_config("config.yaml", SOURCE))
    finally:
        os.chdir(before)
    return directory / "runs/source/best.pt"


def train_with(overrides: list[str]) -> dict:
    return train(load_config("config.yaml", overrides))


def valid_losses(experiment: str) -> list[float]:
    return [record["valid_loss"] for record in run_log(experiment)]


def test_fine_tuning_starts_from_the_checkpoint_and_learns_the_new_data(
    source, numbers_workdir, capsys
):
    numbers_workdir(*tuning(source))
    source_vocabs = vocab_files(source.parent.parent.parent / "data/plain")
    for copied, original in zip(vocab_files(Path("data/round")), source_vocabs, strict=True):
        assert copied.read_bytes() == original.read_bytes()
    assert "one vocabulary for both languages copied from" in capsys.readouterr().out
    data.main(tuning(source))
    assert "one vocabulary for both languages up to date (copied)" in capsys.readouterr().out

    # step 0: the source's weights exactly, and its loss on the new valid split
    config = load_config("config.yaml", tuning(source))
    run = set_up(config, distributed.World(), torch.device("cpu"))
    assert not resume_from_last(run, restart=False)
    start_from_source(run)
    source_weights = read_state(source)["model"]
    assert_same_parameters(run.model.state_dict(), source_weights)  # bit for bit on the CPU
    scores = validate(run.model, config, run.vocabs, run.valid, run.device, keep=run.valid[1])
    assert scores["keep_bleu"] == scores["valid_bleu"]  # keep_valid's pairs decoded beside
    before = scores["valid_loss"]

    best = train(config)
    assert valid_losses("round")[-1] < 0.8 * before  # learnt what round numbers look like
    assert best["valid_loss"] < 0.8 * before
    tuned = read_state(Path("runs/round/best.pt"))
    assert (tuned["src_vocab"], tuned["tgt_vocab"]) == tuple(
        path.read_bytes() for path in source_vocabs
    )
    assert "starting from the weights of" in capsys.readouterr().out


def test_a_fine_tuning_run_resumes_from_its_own_last_checkpoint(source, tmp_path, numbers_workdir):
    shutil.copy(source, tmp_path / "source.pt")
    numbers_workdir(*tuning("source.pt"))
    straight = train(load_config("config.yaml", tuning("source.pt", "experiment=straight")))
    stopped = load_config("config.yaml", tuning("source.pt", "experiment=resumed"))
    with pytest.raises(Interrupted, match="stopped at step 7"):
        train(stopped, stop_after=7)

    Path("source.pt").unlink()  # resuming reads last.pt alone, never train.init_from
    resumed = train(stopped)

    assert_same_parameters(
        read_state(Path("runs/resumed/last.pt"))["model"],
        read_state(Path("runs/straight/last.pt"))["model"],
    )
    assert resumed["step"] == straight["step"]
    with pytest.raises(UserError, match="^train.init_from: there is no checkpoint at source.pt$"):
        train(stopped, restart=True)  # a fresh start reads it


def test_make_data_reports_the_words_the_checkpoints_vocabularies_lack(
    source, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text((ROOT / "config.yaml").read_text())
    pairs = ["eleventy one is one\t1 1 1 la 1", "one is eleventy\t1 la 1 1 1", "two is two\t2 la 2"]
    Path("pairs.tsv").write_text("\n".join(pairs) + "\n")
    splits = [f"corpus.{split}.tsv=pairs.tsv" for split in ("train", "valid", "test")]
    # one file for every split: no pair may leave train for being in valid or test
    data.main([*tuning(source), "corpus.type=parallel", *splits, "clean.drop_duplicates=false"])
    assert (
        "known words of the training split: src 80.00% (1 unknown: 'eleventy' x2); tgt 100.00%"
        in capsys.readouterr().out
    )


def test_fine_tuning_errors_are_one_line_and_write_nothing(source, tmp_path, numbers_workdir):
    Path(tmp_path / "text.pt").write_text("not a checkpoint\n")
    numbers_workdir(*tuning(source))  # the round corpus and its vocabularies, copied
    for init_from, expected in [
        ("missing.pt", "train.init_from: there is no checkpoint at missing.pt"),
        ("text.pt", "train.init_from: text.pt is not a readable checkpoint ("),
    ]:
        for stage, overrides in [
            (data.main, tuning(init_from, "corpus.name=other")),
            (train_with, tuning(init_from)),
        ]:
            with pytest.raises(UserError) as error:
                stage(overrides)
            assert str(error.value).startswith(expected) and "\n" not in str(error.value)
    assert not Path("data/other").exists()

    other_shape = tuning(source, "model.d_model=64", "vocab.lowercase=false", "corpus.name=other")
    differences = "model.d_model is 32 there, 64 in the config; vocab.lowercase is True there"
    with pytest.raises(UserError, match=differences):
        data.main(other_shape)
    assert not Path("data/other").exists()

    data.main(tuning("null"))  # the round corpus with vocabularies of its own
    with pytest.raises(UserError, match="^data/round/ holds other vocabularies than .*source/best"):
        train_with(tuning(source))

    with pytest.raises(ConfigError, match="'train.init_from' .* is in runs/round/, which this run"):
        load_config("config.yaml", tuning("runs/round/best.pt"))


def distance_from(start: dict, weights: dict) -> float:
    return sum(float((weights[name] - w0).norm() ** 2) for name, w0 in start.items()) ** 0.5


def test_keeping_what_the_start_knew_holds_the_weights_near_it(source, numbers_workdir):
    """train.keep_weights pulls every weight back toward the start after each step: at
    lr x keep_weights = 1 the run ends where it started, bit for bit; train.keep_teacher
    trains toward the start's own outputs too: the weights move less than without it."""
    numbers_workdir(*tuning(source))
    start = read_state(source)["model"]
    moved = {}
    for name, overrides in [
        ("free", []),
        ("teacher", ["train.keep_teacher=0.9"]),
        ("held", ["train.lr=0.002", "train.min_lr=0.002", "train.warmup_steps=0",
                  "train.keep_weights=500"]),
    ]:  # fmt: skip
        train_with(tuning(source, f"experiment={name}", *overrides))
        moved[name] = distance_from(start, read_state(Path(f"runs/{name}/last.pt"))["model"])
    assert moved["held"] == 0.0
    assert 0 < moved["teacher"] < 0.8 * moved["free"]
    with pytest.raises(ConfigError, match="'train.keep_weights' needs a start to keep"):
        load_config("config.yaml", [*SMALL, "train.keep_weights=1"])


def test_frozen_parameters_end_as_they_started(source, numbers_workdir):
    """train.freeze: the encoder and the source embeddings bit for bit the start's after a
    fine-tune, the decoder moved; a name that is no parameter's is an error."""
    numbers_workdir(*tuning(source))
    train_with(tuning(source, "experiment=frozen", "train.freeze=[encoder, src_embed]"))
    start, tuned = read_state(source)["model"], read_state(Path("runs/frozen/last.pt"))["model"]
    frozen = [name for name in start if name.startswith(("encoder.", "src_embed."))]
    assert frozen and all(torch.equal(start[name], tuned[name]) for name in frozen)
    assert not torch.equal(start["decoder.0.ff.net.0.weight"], tuned["decoder.0.ff.net.0.weight"])
    with pytest.raises(UserError, match="train.freeze: no parameter is named 'encoders'"):
        train_with(tuning(source, "experiment=typo", "train.freeze=[encoders]"))


def test_a_catalog_entry_longer_than_the_model_takes_is_left_out_and_training_ends(
    source, tmp_path, monkeypatch, capsys
):
    """docs/adapt.md's fine-tuning on a folder of catalogs, one entry of each 300 source
    pieces (the model takes 255, under corpus.max_words' 250 words): make data leaves each
    out of the token ids, counted, and training runs to its last step."""
    polib = pytest.importorskip("polib")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text((ROOT / "config.yaml").read_text())
    for program in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta"):
        catalog = polib.POFile()
        catalog.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
        catalog.extend(
            polib.POEntry(msgid=f"{program} {words} is {words}", msgstr=f"{digits} la {digits}")
            for words, digits in [("one", "1"), ("two", "2"), ("nine", "9"), ("four", "4")]
        )
        catalog.append(polib.POEntry(msgid=f"{program} " + "one-two " * 150, msgstr="1-2 " * 150))
        (tmp_path / "locale").mkdir(exist_ok=True)
        catalog.save(str(tmp_path / f"locale/{program}.po"))
    overrides = [
        *(item for item in SMALL if not item.startswith("corpus.")),
        "experiment=catalogs", "corpus.type=sources", "corpus.name=catalogs",
        "corpus.src_lang=en", "corpus.tgt_lang=de", "clean.drop_identical=false",
        "corpus.train_sources=[{file: locale, hold_out: 0.34}]",
        "train.max_steps=10", "train.eval_every=5", f"train.init_from={source}",
    ]  # fmt: skip
    data.main(overrides)
    out = capsys.readouterr().out
    report = json.loads(Path("data/catalogs/report.json").read_text())
    left_out = {split: report[split]["too_long_for_model"]["pairs"] for split in report}
    assert left_out == {"train": 4, "valid": 1, "test": 1}
    assert (
        "train: 4 pairs longer than the model takes (over 255 source or 255 target pieces) "
        "left out of the token ids: lines 5, 10, 15, 20 of data/catalogs/train.src"
    ) in out
    assert train_with(overrides)["step"] == 10

    # ids encoded for a model that takes more are refused before a run starts
    own = [*overrides, "corpus.name=longer", "train.init_from=null"]
    data.main([*own, "model.max_positions=400"])
    with pytest.raises(CorpusError, match="^data/longer/train: the token ids hold pairs of up"):
        train_with(own)
