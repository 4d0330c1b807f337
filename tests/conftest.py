"""Shared fixtures."""

import os
from pathlib import Path

import pytest

from seq2seq import data, train

from helpers import ROOT


@pytest.fixture(scope="session")
def seed_run(tmp_path_factory) -> Path:
    """runs/seed/ of the seed preset (nine pairs, memorised in about a second): best.pt,
    last.pt and metrics.jsonl."""
    directory = tmp_path_factory.mktemp("seed")
    (directory / "config.yaml").write_text((ROOT / "configs/seed.yaml").read_text())
    before = Path.cwd()
    os.chdir(directory)
    try:
        data.main([])
        train.main([])
    finally:
        os.chdir(before)
    return directory / "runs/seed"


@pytest.fixture
def workdir(tmp_path, monkeypatch, request) -> Path:
    """A fresh directory holding config.yaml and the numbers corpus built with the test
    module's SMALL overrides (a small corpus, a small model); the tests run in it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text((ROOT / "config.yaml").read_text())
    data.main(request.module.SMALL)
    return tmp_path
