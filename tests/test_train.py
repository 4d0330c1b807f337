"""The training step itself (a step, its micro-steps, clipping, the learning rate of each
step), training options (precision, compile) and the progress report."""

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from seq2seq import data, train
from seq2seq.checkpoint import read_state
from seq2seq.config import load_config
from seq2seq.tokens.special import PAD
from seq2seq.train import micro_steps, train_step
from seq2seq.training.optimizer import learning_rate
from seq2seq.training.report import Report
from seq2seq.training.resume import restore_scaler
from seq2seq.training.run import Run

from helpers import ROOT, seed_preset_run


def all_pairs(run: Run) -> list[tuple]:
    """The nine training pairs as a step of one micro-batch."""
    return [run.data.batch(np.arange(len(run.data)))]


def gradients(run: Run) -> list[torch.Tensor]:
    return [p.grad.clone() for p in run.model.parameters()]


def norm(tensors: list[torch.Tensor]) -> float:
    return float(torch.linalg.vector_norm(torch.stack([t.norm() for t in tensors])))


def test_steps_on_a_repeated_batch_lower_its_loss(seed_run, monkeypatch):
    run = seed_preset_run(seed_run, monkeypatch)
    step = all_pairs(run)
    src, _, tgt_out = step[0]
    results = [train_step(run, step, lr=0.01) for _ in range(5)]
    losses = [float(loss) for loss, _ in results]
    assert losses == sorted(losses, reverse=True) and len(set(losses)) == 5, losses
    assert {tokens for _, tokens in results} == {int((src != PAD).sum() + (tgt_out != PAD).sum())}


def test_a_step_clips_the_gradient_to_train_clip_norm_and_uses_its_learning_rate(
    seed_run, monkeypatch
):
    run = seed_preset_run(seed_run, monkeypatch, "train.clip_norm=0.01")
    step = all_pairs(run)
    micro_steps(run, step)
    raw = gradients(run)
    assert norm(raw) > 1.0, "far above train.clip_norm"
    before = [p.detach().clone() for p in run.model.parameters()]
    train_step(run, step, lr=0.0)  # the same gradient, clipped; AdamW moves nothing at lr 0
    assert norm(gradients(run)) == pytest.approx(0.01, rel=1e-5)
    for clipped, unclipped in zip(gradients(run), raw, strict=True):
        torch.testing.assert_close(clipped, unclipped * (0.01 / norm(raw)))
    assert all(torch.equal(p, b) for p, b in zip(run.model.parameters(), before, strict=True))
    train_step(run, step, lr=0.003)
    assert [group["lr"] for group in run.optimizer.param_groups] == [0.003, 0.003]
    assert not all(torch.equal(p, b) for p, b in zip(run.model.parameters(), before, strict=True))


def test_micro_steps_add_up_to_the_gradient_of_the_whole_batch(seed_run, monkeypatch):
    run = seed_preset_run(seed_run, monkeypatch)
    loss, tokens = micro_steps(run, all_pairs(run))
    whole = gradients(run)
    three = [run.data.batch(np.arange(start, start + 3)) for start in (0, 3, 6)]
    split_loss, split_tokens = micro_steps(run, three)  # from zero again, not added to `whole`
    assert split_tokens == tokens
    torch.testing.assert_close(split_loss, loss, rtol=1e-6, atol=1e-6)
    for split, expected in zip(gradients(run), whole, strict=True):
        torch.testing.assert_close(split, expected, rtol=1e-5, atol=1e-6)


def test_each_step_trains_at_the_learning_rate_of_the_schedule(seed_run, tmp_path, monkeypatch):
    shutil.copy(seed_run.parent.parent / "config.yaml", tmp_path)
    shutil.copytree(seed_run.parent.parent / "data", tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    overrides = ["train.max_steps=6", "train.eval_every=1", "train.warmup_steps=3"]
    config = load_config("config.yaml", ["train.device=cpu", *overrides])
    train.train(config)
    log = Path("runs/seed/metrics.jsonl").read_text().splitlines()
    logged = [json.loads(line)["lr"] for line in log]
    assert logged == [learning_rate(step, config.train) for step in range(6)]
    optimizer = read_state(Path("runs/seed/last.pt"))["training"]["optimizer"]
    assert {group["lr"] for group in optimizer["param_groups"]} == {logged[-1]}


def test_resuming_with_a_gradient_scaler_from_a_run_without_one():
    # last.pt of a bf16 or fp32 run holds the state of a disabled scaler (torch's: {})
    saved_without = torch.amp.GradScaler("cpu", enabled=False).state_dict()
    fp16 = torch.amp.GradScaler("cpu", enabled=True, init_scale=1024.0)
    restore_scaler(fp16, saved_without)
    assert fp16.get_scale() == 1024.0  # a fresh scale
    restore_scaler(fp16, torch.amp.GradScaler("cpu", init_scale=8.0).state_dict())
    assert fp16.get_scale() == 8.0  # an fp16 run's own state is restored


def test_a_bf16_step_on_the_cpu_keeps_weights_gradients_and_adamw_in_fp32(seed_run, monkeypatch):
    """bf16 autocast with every dropout on (the CPU's own masks, on bf16 values): the loss
    falls on a repeated batch, and what is kept between steps stays fp32."""
    run = seed_preset_run(
        seed_run, monkeypatch, "train.precision=bf16", "model.dropout=0.1",
        "model.activation_dropout=0.1", "model.attention_dropout=0.1",
    )  # fmt: skip
    assert run.autocast_dtype is torch.bfloat16
    step = all_pairs(run)
    losses = [float(train_step(run, step, lr=0.01)[0]) for _ in range(8)]
    assert losses[-1] < losses[0] and all(np.isfinite(losses)), losses
    assert {p.dtype for p in run.model.parameters()} == {torch.float32}
    assert {p.grad.dtype for p in run.model.parameters()} == {torch.float32}
    states = [v for state in run.optimizer.state.values() for v in state.values()]
    assert {v.dtype for v in states if v.dim()} == {torch.float32}


def test_a_time_budget_stops_training_validates_and_averages_at_its_end(
    seed_run, monkeypatch, capsys
):
    """train.max_minutes: a run of 100,000 steps at most stops after its 1.5 seconds with a
    validation, the average of its last ones, last.pt; run again, it says it is done."""
    monkeypatch.chdir(seed_run.parent.parent)
    overrides = [
        "experiment=budget", "train.max_steps=100000", "train.max_minutes=0.025",
        "train.eval_every=1", "train.average_last=2", "train.warmup_steps=0",
    ]  # fmt: skip
    train.main(overrides)
    log = [json.loads(line) for line in Path("runs/budget/metrics.jsonl").read_text().splitlines()]
    validations = [entry for entry in log if "averaged_steps" not in entry]
    end = validations[-1]
    assert 1.5 <= end["elapsed_s"] < 60 and 1 < end["step"] < 100_000  # however busy the CPU
    assert "averaged_steps" in log[-1]  # then the average of the last two
    # the last step's rate: the schedule laid over the clock, at the time the validation
    # before it said (the CPU may be busy: few steps, each slow)
    schedule = load_config("config.yaml", overrides).train
    assert end["lr"] == learning_rate(end["step"] - 1, schedule, validations[-2]["elapsed_s"])
    assert end["lr"] < schedule.lr
    assert read_state(Path("runs/budget/last.pt"))["training"]["progress"]["step"] == end["step"]
    capsys.readouterr()
    train.main(overrides)
    assert "training already finished" in capsys.readouterr().out


def test_max_epochs_ends_the_schedule_after_that_many_passes(seed_run, monkeypatch, capsys):
    """train.max_epochs: training stops after that many epochs' steps (the first epoch's
    count), its learning rate decayed to min_lr there; a lower max_steps still wins."""
    monkeypatch.chdir(seed_run.parent.parent)
    overrides = ["train.batch_tokens=40", "train.max_epochs=3", "train.eval_every=1"]
    train.main(["experiment=epochs", *overrides])
    log = [json.loads(line) for line in Path("runs/epochs/metrics.jsonl").read_text().splitlines()]
    per_epoch = sum(entry["epoch"] == 1 for entry in log)
    assert per_epoch > 1 and log[-1]["step"] == 3 * per_epoch
    assert f"up to {3 * per_epoch} steps (3 epochs)" in capsys.readouterr().out
    config = load_config("config.yaml", overrides)
    ended = dataclasses.replace(config.train, max_steps=3 * per_epoch)
    assert log[-1]["lr"] == learning_rate(3 * per_epoch - 1, ended)
    train.main(["experiment=fewer", *overrides, "train.max_steps=2"])
    assert read_state(Path("runs/fewer/last.pt"))["training"]["progress"]["step"] == 2


@pytest.mark.slow
def test_training_under_bf16_autocast_learns(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "configs/seed.yaml", tmp_path / "config.yaml")
    data.main([])
    train.main(["train.precision=bf16", "train.max_steps=100"])
    log = [json.loads(line) for line in Path("runs/seed/metrics.jsonl").read_text().splitlines()]
    assert all(torch.isfinite(torch.tensor(entry["train_loss"])) for entry in log)
    assert log[-1]["valid_exact_match"] == 1.0


@pytest.mark.slow
def test_training_a_compiled_model_saves_a_plain_checkpoint(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "configs/seed.yaml", tmp_path / "config.yaml")
    data.main([])
    train.main(["train.compile=true", "train.max_steps=25", "train.eval_every=25"])
    state = torch.load("runs/seed/best.pt", weights_only=True)
    assert not any(key.startswith("_orig_mod") for key in state["model"])


def test_without_a_terminal_progress_is_a_line_every_interval(capsys):
    report = Report(total=3, initial=0, enabled=True, every=0.0)  # stderr: not a terminal here
    for step in (1, 2, 3):
        report.update(step, loss=1.5, lr=1e-3, tokens_per_s=12345.0)
    report.write("step      3  valid loss 1.0000")
    report.close()
    out, err = capsys.readouterr()
    assert "\r" not in err, "no bar redrawn into a log file"
    assert err.splitlines() == [
        f"step {step}/3  loss 1.500  lr 1.00e-03  12,345 tokens/s" for step in (1, 2, 3)
    ]
    assert out == "step      3  valid loss 1.0000\n"
    quiet = Report(total=3, initial=0, enabled=True, every=3600.0)
    for step in (1, 2, 3):
        quiet.update(step, loss=1.5, lr=1e-3, tokens_per_s=1.0)
    quiet.close()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("step 1/3"), "the first step, then none"
