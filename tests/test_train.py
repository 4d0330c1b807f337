"""Training options: precision and the pieces of the training step."""

import json
import shutil
from pathlib import Path

import pytest
import torch

from seq2seq import data, train
from seq2seq.errors import UserError
from seq2seq.train import Report, resolve_precision

from helpers import ROOT


def test_precision_choices():
    cpu = torch.device("cpu")
    assert resolve_precision("auto", cpu) is None  # fp32 on a CPU
    assert resolve_precision("fp32", cpu) is None
    assert resolve_precision("bf16", cpu) is torch.bfloat16
    with pytest.raises(UserError, match="fp16 needs a CUDA device"):
        resolve_precision("fp16", cpu)


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
