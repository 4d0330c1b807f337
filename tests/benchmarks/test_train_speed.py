"""benchmarks/train_speed.py on the seed preset: each setting timed in every round, the table
relative to the first, and the profile's table of operators."""

import json
import shutil

import train_speed

from seq2seq import data

from helpers import ROOT


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
    table = (tmp_path / "speed.md").read_text()
    assert "| fp32 | `train.precision=fp32` |" in table and "| 1.00 |" in table
    capsys.readouterr()
    train_speed.main(["--config", "seed.yaml", "--profile", "--warmup", "1", "--steps", "2",
                      "--setting", "fp32", "train.precision=fp32"])  # fmt: skip
    assert "aten::mm" in capsys.readouterr().out  # the matrix products, by name
