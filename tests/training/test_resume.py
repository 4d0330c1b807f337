"""Resuming and interruptions: a stopped training continues exactly where it was."""

import json
import os
import random
import re
import signal
import subprocess
import time
from functools import partial
from pathlib import Path

import pytest
import torch

import seq2seq.train as train_module
from seq2seq import data
from seq2seq.checkpoint import load_checkpoint, read_state
from seq2seq.config import VocabConfig
from seq2seq.support.errors import Interrupted, UserError
from seq2seq.support.files import read_log
from seq2seq.text.parallel import load_split
from seq2seq.tokens.dataset import Limits, build_ids
from seq2seq.tokens.vocab import load_vocabs, train_vocab
from seq2seq.train import train

from helpers import (
    ENV,
    HANG,
    assert_same_parameters,
    command,
    damage,
    same_figures,
    wait_until,
)  # fmt: skip
from small_run import run_log, small_config, small_run, weights

# The small run (about 12 batches an epoch) with dropout, so that the batch order and the
# dropout masks both matter.
SMALL = small_run(
    "model.dropout=0.1", "model.attention_dropout=0.1", "train.max_steps=40", "train.eval_every=15"
)
config = partial(small_config, SMALL)


@pytest.mark.slow
@pytest.mark.parametrize("stop_after", [8, 23])  # within the first epoch; within the second
def test_stopping_and_resuming_gives_the_same_parameters(workdir, stop_after):
    straight = train(config("experiment=straight"))

    with pytest.raises(Interrupted, match=f"stopped at step {stop_after} \\(as asked\\)"):
        train(config("experiment=resumed"), stop_after=stop_after)
    assert read_state(Path("runs/resumed/last.pt"))["info"]["step"] == stop_after
    resumed = train(config("experiment=resumed"))

    assert_same_parameters(weights("runs/resumed/last.pt"), weights("runs/straight/last.pt"))
    keys = ("step", "valid_loss", "valid_exact_match", "valid_bleu")
    assert [resumed[k] for k in keys] == same_figures([straight[k] for k in keys])
    keys = ("step", "epoch", "valid_loss", "valid_bleu")
    assert [e[k] for e in run_log("resumed") for k in keys] == same_figures(
        [e[k] for e in run_log("straight") for k in keys]
    )
    assert [e["step"] for e in run_log("resumed")] == [15, 30, 40, 40]  # the last: the average


@pytest.mark.slow
def test_finished_training_is_not_redone_and_restart_starts_over(workdir, capsys):
    train(config())
    first = weights("runs/numbers/best.pt")
    capsys.readouterr()
    train(config())
    assert "training already finished at step 40" in capsys.readouterr().out
    train(config("train.max_steps=45"))  # raising max_steps trains on
    assert [e["step"] for e in run_log("numbers")][-4:] == [40, 40, 45, 45]  # each, its average
    train(config(), restart=True)
    assert [e["step"] for e in run_log("numbers")] == [15, 30, 40, 40]
    assert_same_parameters(weights("runs/numbers/best.pt"), first)


CUT_SHORT = "not a whole record (a write cut short?); left out"


def test_a_log_cut_at_any_byte_of_its_last_line_keeps_the_lines_before(tmp_path, capsys):
    """A kill, a full disk or a power cut during metrics.jsonl's append leaves its last line
    cut anywhere, in a UTF-8 character too: the whole lines before it are read, the cut one is
    named in a warning; a line missing only its newline is whole."""
    records = [{"step": 15, "valid_bleu": 1.5}, {"step": 30, "example": "zwölf -> 12"}]
    whole = [json.dumps(record, ensure_ascii=False).encode() + b"\n" for record in records]
    log = tmp_path / "metrics.jsonl"
    for cut in range(len(whole[1]) + 1):
        log.write_bytes(whole[0] + whole[1][:cut])
        read = read_log(log)
        warning = capsys.readouterr().err
        if cut >= len(whole[1]) - 1:
            assert (read, warning) == (records, "")
        elif cut == 0:
            assert (read, warning) == (records[:1], "")
        else:
            assert read == records[:1]
            assert warning == f"warning: {log}, line 2: {CUT_SHORT}\n"


def test_a_torn_log_line_does_not_stop_a_resume(workdir, capsys):
    with pytest.raises(Interrupted):
        train(config(), stop_after=20)
    log_path = Path("runs/numbers/metrics.jsonl")
    whole = log_path.read_bytes()
    log_path.write_bytes(whole + whole[: len(whole) // 2])  # the next append, cut short
    capsys.readouterr()
    train(config())
    assert f"metrics.jsonl, line 2: {CUT_SHORT}" in capsys.readouterr().err
    assert [e["step"] for e in run_log("numbers")] == [15, 30, 40, 40]


def test_resuming_another_model_or_vocabulary_is_refused(workdir):
    with pytest.raises(Interrupted):
        train(config(), stop_after=3)
    with pytest.raises(UserError, match=r"last.pt was trained with another config "
                       r"\(model.d_model: 32, now 48\); pass --restart"):  # fmt: skip
        train(config("model.d_model=48"))
    with pytest.raises(UserError, match=r"last.pt was saved with train.batch_tokens = 1500, "
                       r"now 1000: the epoch would be cut into other batches"):  # fmt: skip
        train(config("train.batch_tokens=1000"))
    with pytest.raises(UserError, match=r"saved with micro-batches per step \(processes x "
                       r"train.accumulate\) = 1, now 2"):  # fmt: skip
        train(config("train.accumulate=2"))
    other = train_vocab(["ten la 1 0", "eleven la 1 1"] * 20, 16, VocabConfig())
    Path("data/numbers/tgt.model").write_bytes(other.model_bytes)  # the vocabulary changed
    with pytest.raises(UserError, match=r"train.tgt.ids was encoded with another vocabulary "
                       r"than data/numbers/tgt.model: run `make data`"):  # fmt: skip
        train(config())
    data.main(SMALL)  # encodes the data again, with the changed vocabulary
    with pytest.raises(UserError, match="other vocabularies than those in data/numbers/"):
        train(config())


def test_resuming_on_other_training_data_is_refused(workdir):
    with pytest.raises(Interrupted):
        train(config(), stop_after=3)
    data_dir = Path("data/numbers")
    for side in ("src", "tgt"):  # one pair fewer; the vocabularies stay as they were
        path = data_dir / f"train.{side}"
        path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))
    build_ids(data_dir, load_vocabs(config()), Limits.of(config()))
    with pytest.raises(UserError, match="trained on other training data than data/numbers/"):
        train(config())


def test_vocabularies_built_with_other_settings_are_refused(workdir):
    data.main([*SMALL, "vocab.tgt_size=20"])
    expected = (
        "vocab.json: the vocabularies were built with vocab.tgt_size = 20, the config says 64"
    )
    with pytest.raises(UserError, match=f"data/numbers/{expected}: run `make data`"):
        train(config())


def test_a_diverging_loss_stops_training_and_keeps_the_last_good_checkpoint(workdir, monkeypatch):
    batch_loss, calls = train_module.batch_loss, []

    def poisoned(model, batch, label_smoothing, *rest):
        loss = batch_loss(model, batch, label_smoothing, *rest)
        if label_smoothing == 0.0:  # a validation batch
            return loss
        calls.append(1)
        return loss * float("nan") if len(calls) == 20 else loss

    monkeypatch.setattr(train_module, "batch_loss", poisoned)
    with pytest.raises(UserError, match=r"training diverged: the loss is nan at step 20; "
                       r"runs/numbers/last.pt \(step 15\) and runs/numbers/best.pt \(step 15\) "
                       r"are kept"):  # fmt: skip
        train(config())
    assert read_state(Path("runs/numbers/last.pt"))["info"]["step"] == 15
    assert all(torch.isfinite(t).all() for t in weights("runs/numbers/last.pt").values())


def test_weights_gone_non_finite_are_never_saved_and_the_error_says_what_is_kept(workdir):
    """A learning rate of 1000: the weights overflow at some step (which one depends on the
    CPU), the loss of that step may still be finite. Validating at every step, the first
    non-finite weight stops training before any save."""
    with pytest.raises(UserError) as error:
        train(config("train.lr=1e3", "train.min_lr=1", "train.eval_every=1"))
    found = re.fullmatch(
        r"training diverged: (.*) (?:after|at) step (\d+); runs/numbers/last.pt \(step (\d+)\)"
        r" and runs/numbers/best.pt \(step (\d+)\) are kept\. Lower train.lr .*",
        str(error.value),
    )
    assert found, str(error.value)
    last, best = read_state(Path("runs/numbers/last.pt")), read_state(Path("runs/numbers/best.pt"))
    assert (last["info"]["step"], best["info"]["step"]) == (int(found[3]), int(found[4]))
    assert int(found[3]) == int(found[2]) - 1  # the step before the divergence
    for state in (last, best):
        assert all(torch.isfinite(t).all() for t in state["model"].values())


def test_a_damaged_last_checkpoint_is_not_blamed_on_the_learning_rate(workdir):
    train(config("train.max_steps=15"))
    damage(Path("runs/numbers/last.pt"))
    damaged = r"^runs/numbers/last.pt is damaged: its contents do not match their checksum"
    with pytest.raises(UserError, match=damaged + r" .*; pass --restart to train from scratch$"):
        train(config("train.max_steps=30"))


@pytest.mark.slow
@pytest.mark.parametrize("cut", [2, 3])  # the validation of step 30; the last one, of step 40
def test_a_signal_cuts_a_validation_short_and_the_resume_validates_again(workdir, monkeypatch, cut):
    """SIGTERM arrives as validation number `cut` begins, which would then take 20 s: it stops
    at once, last.pt holds its step, and the resumed run validates that step again and ends
    as a run never stopped ends (the average of the last validations included)."""
    straight = train(config("experiment=straight"))
    validate, calls, slept = train_module.validate, [], []

    def signalled(*args):
        calls.append(1)
        if len(calls) == cut:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(2000):  # a validation of 20 s, unless cut short
                time.sleep(0.01)
            slept.append("all of it")
        return validate(*args)

    monkeypatch.setattr(train_module, "validate", signalled)
    step = (15, 30, 40)[cut - 1]
    with pytest.raises(Interrupted, match=f"stopped at step {step} \\(SIGTERM\\)"):
        train(config())
    assert slept == []
    assert read_state(Path("runs/numbers/last.pt"))["info"]["step"] == step
    assert [e["step"] for e in run_log("numbers")] == [15, 30, 40][: cut - 1]
    monkeypatch.setattr(train_module, "validate", validate)

    resumed = train(config())
    assert_same_parameters(weights("runs/numbers/best.pt"), weights("runs/straight/best.pt"))
    keys = ("step", "train_loss", "valid_loss", "valid_bleu")
    assert [resumed[k] for k in keys] == same_figures([straight[k] for k in keys])
    assert [e[k] for e in run_log("numbers") for k in keys] == same_figures(
        [e[k] for e in run_log("straight") for k in keys]
    )


@pytest.mark.slow
def test_a_signal_while_a_validation_is_kept_lets_it_be_written(workdir, monkeypatch):
    """Only a validation's decoding is cut short: a SIGTERM while its results are written
    (best.pt, step-N.pt, metrics.jsonl) waits for them, and training stops after the next
    step, as a signal between validations stops it."""
    keep_recent = train_module.keep_recent

    def signalled(*args):
        os.kill(os.getpid(), signal.SIGTERM)
        return keep_recent(*args)

    monkeypatch.setattr(train_module, "keep_recent", signalled)
    with pytest.raises(Interrupted, match=r"stopped at step 16 \(SIGTERM\)"):
        train(config())
    assert [e["step"] for e in run_log("numbers")] == [15]
    assert read_state(Path("runs/numbers/last.pt"))["info"]["step"] == 16


def start_training(*overrides: str) -> subprocess.Popen:
    return subprocess.Popen(
        command("seq2seq.train", *SMALL, *overrides),
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def checkpoint_step(path: Path) -> int:
    """The step of the checkpoint at `path`; -1 while there is none."""
    return read_state(path)["info"]["step"] if path.exists() else -1


@pytest.mark.slow
@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_saves_and_says_how_to_resume(workdir, signal_number):
    last = workdir / "runs/numbers/last.pt"
    process = start_training("train.max_steps=100000", "train.eval_every=10")
    wait_until(last.exists, "first checkpoint", process, timeout=HANG)
    process.send_signal(signal_number)
    _, stderr = process.communicate(timeout=HANG)
    assert process.returncode == 128 + signal_number
    name = signal.Signals(signal_number).name
    assert f"({name}); saved runs/numbers/last.pt: run the same command again to resume" in stderr
    assert "Traceback" not in stderr
    step = checkpoint_step(last)
    assert step >= 10
    done = subprocess.run(
        command("seq2seq.train", *SMALL, f"train.max_steps={step + 5}"),
        env=ENV,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert done.returncode == 0, done.stderr
    assert f"resuming runs/numbers/last.pt at step {step:,}" in done.stdout
    assert checkpoint_step(last) == step + 5


def moved_past(path: Path, step: int) -> bool:
    return checkpoint_step(path) > step


def assert_every_file_is_readable(run: Path) -> None:
    load_checkpoint(run / "best.pt")
    read_state(run / "last.pt")
    for line in (run / "metrics.jsonl").read_text().splitlines():
        json.loads(line)


@pytest.mark.slow
def test_kill_9_at_random_moments_never_leaves_an_unreadable_file(workdir):
    """Six runs (the first from scratch, the five others resuming), each killed with SIGKILL at
    a random moment after last.pt's step has moved on: somewhere in training, validation or a
    checkpoint write. Before each of the five, one more start is killed at a random moment of
    its start-up (import, load, resume). The delays are drawn in units of the time the last run
    took to write its first checkpoint, so the kills land in the same phases on a fast machine
    and on a slow one."""
    rng = random.Random(0)
    run = workdir / "runs/numbers"
    last = run / "last.pt"
    start_up = None  # seconds from start to a checkpoint of the run's own, measured each run
    for _ in range(6):
        # validating (and so writing checkpoints) every 3 steps makes writes frequent
        if start_up is not None:  # a start cut short: killed in import, load or resume
            process = start_training("train.max_steps=100000", "train.eval_every=3")
            time.sleep(rng.uniform(0, start_up))
            process.kill()
            process.communicate()  # reap it and close its pipes
            assert_every_file_is_readable(run)
        before = checkpoint_step(last)
        process = start_training("train.max_steps=100000", "train.eval_every=3")
        start_up = wait_until(
            partial(moved_past, last, before), "resumed run's step", process, timeout=HANG
        )
        seen = checkpoint_step(last)
        time.sleep(rng.uniform(0, start_up / 2))  # training, validating, writing checkpoints
        process.kill()
        process.communicate()
        assert checkpoint_step(last) >= seen, "a kill never takes a checkpoint back"
        assert_every_file_is_readable(run)
    files = list((workdir / "data/numbers").iterdir())
    assert files
    for path in files:
        assert path.stat().st_size > 0, path
    assert len(load_split(config(), "train")) == 1500
