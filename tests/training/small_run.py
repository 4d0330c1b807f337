"""The training tests' small run (test_averaging, test_resume, test_distributed, test_finetune):
a small numbers corpus and model that train in seconds, each module's own settings (its steps,
dropout, schedule) added after; and what a run leaves, read back.

    SMALL = small_run("train.max_steps=40", ...)   a module's overrides: BASE, then its own
    workdir (conftest.py)                          the corpus of its module's SMALL, made in the
                                                   test's working directory
    small_config(SMALL, "experiment=x")            the config of config.yaml with them
    run_log("x"), weights("runs/x/best.pt")        runs/x/metrics.jsonl's records; the weights
"""

from pathlib import Path

import torch

from seq2seq.checkpoint import read_state
from seq2seq.config import Config, load_config
from seq2seq.support.files import read_log

BASE = [
    "corpus.train_size=1500", "corpus.valid_size=40", "corpus.test_size=40",
    "model.d_model=32", "model.enc_layers=1", "model.dec_layers=1", "model.d_ff=64",
    "train.warmup_steps=5",
]  # fmt: skip


def small_run(*overrides: str) -> list[str]:
    """BASE, then these overrides (a later one wins)."""
    return [*BASE, *overrides]


def small_config(small: list[str], *overrides: str) -> Config:
    return load_config("config.yaml", [*small, *overrides])


def run_log(experiment: str) -> list[dict]:
    return read_log(Path(f"runs/{experiment}/metrics.jsonl"))


def weights(path: str | Path) -> dict[str, torch.Tensor]:
    return read_state(Path(path))["model"]
