"""Training options: precision and the pieces of the training step."""

import json
import shutil
from pathlib import Path

import pytest
import torch

from seq2seq import data, train
from seq2seq.training.report import Report
from seq2seq.training.resume import restore_scaler

from helpers import ROOT


def test_resuming_with_a_gradient_scaler_from_a_run_without_one():
    # last.pt of a bf16 or fp32 run holds the state of a disabled scaler: {}
    saved_without = torch.amp.GradScaler("cpu", enabled=False).state_dict()
    assert saved_without == {}
    fp16 = torch.amp.GradScaler("cpu", enabled=True, init_scale=1024.0)
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        fp16.load_state_dict(saved_without)  # what resuming did
    restore_scaler(fp16, saved_without)
    assert fp16.get_scale() == 1024.0  # a fresh scale
    restore_scaler(fp16, torch.amp.GradScaler("cpu", init_scale=8.0).state_dict())
    assert fp16.get_scale() == 8.0  # an fp16 run's own state is restored


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
