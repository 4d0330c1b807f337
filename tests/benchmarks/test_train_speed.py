"""benchmarks/speed/train_speed.py on the seed preset: each setting timed in every round, the table
relative to the first, the profile's table of operators, and each setting's BLEU."""

import json
import shutil

import pytest

from benchmarks.speed import train_speed
from seq2seq import data

from helpers import ROOT


@pytest.mark.slow
def test_settings_are_timed_in_alternating_rounds(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "configs/seed.yaml", "seed.yaml")
    data.main(["--config", "seed.yaml"])
    train_speed.main([
        "--config", "seed.yaml", "--rounds", "2", "--warmup", "1", "--steps", "2", "--out", "speed",
        "--setting", "fp32", "train.precision=fp32", "--setting", "bf16", "train.precision=bf16",
    ])  # fmt: skip
    results = json.loads((tmp_path / "speed.json").read_text())
    assert [s["name"] for s in results["settings"]] == ["fp32", "bf16"]
    assert all(
        len(s["tokens_per_s"]) == 2 and min(s["tokens_per_s"]) > 0 for s in results["settings"]
    )
    assert all(min(s["peak_rss_mib"]) > 100 for s in results["settings"])  # torch alone: more
    table = (tmp_path / "speed.md").read_text()
    assert "| fp32 | `train.precision=fp32` |" in table and "| 1.00 |" in table
    capsys.readouterr()
    train_speed.main(["--config", "seed.yaml", "--profile", "--warmup", "1", "--steps", "2",
                      "--setting", "fp32", "train.precision=fp32"])  # fmt: skip
    assert "aten::mm" in capsys.readouterr().out  # the matrix products, by name


@pytest.mark.slow
def test_each_settings_bleu_after_the_same_steps(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "configs/seed.yaml", "seed.yaml")
    data.main(["--config", "seed.yaml"])
    train_speed.main([
        "--config", "seed.yaml", "--bleu-steps", "20", "--out", "bleu",
        "--setting", "fp32", "train.precision=fp32",
        "--setting", "slower", "train.precision=fp32", "train.lr=0.001", "train.min_lr=0.0001",
    ])  # fmt: skip
    results = json.loads((tmp_path / "bleu.json").read_text())
    first, second = results["settings"]
    assert results["steps"] == 20 and [first["name"], second["name"]] == ["fp32", "slower"]
    for number in (0, 1):  # each trained to step 20 and validated there
        log = (tmp_path / f"runs/bench-train-bleu-{number}/metrics.jsonl").read_text()
        assert json.loads(log.splitlines()[-1])["step"] == 20
    assert 0 <= first["valid_bleu"] <= 100 and first["minutes"] > 0
    assert first["valid_loss"] != second["valid_loss"]  # another model
    table = (tmp_path / "bleu.md").read_text()
    assert f"| fp32 | `train.precision=fp32` | {first['valid_bleu']:.2f} |" in table
