"""Shared fixtures."""

import os
import shutil
from pathlib import Path

import databases
import pytest
import torch
from filelock import FileLock

from benchmarks.service.contenders import free_port
from benchmarks.service.swap import seed_preset
from seq2seq import data
from seq2seq.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from seq2seq.config import CorpusConfig, config_from_dict
from seq2seq.corpora import numbers
from seq2seq.decoding.engines import TorchEngine

from helpers import ROOT, briefly_trained

# The fixtures that train a model (or build a corpus to train one on): a test that uses one,
# directly or through another fixture, is slow, marked so here rather than by hand.
TRAINING = {
    "seed_run", "numbers_workdir", "trained_numbers_checkpoint",
    "trained_joint_numbers_checkpoint", "trained_shared_numbers_checkpoint",
    "seed_recipe",  # tests/benchmarks/test_recipes.py's
}  # fmt: skip


def pytest_configure(config) -> None:
    """Under pytest-xdist (make test: a worker a core), each worker computes on one thread:
    torch's threads outnumbering the cores would wait on each other."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        torch.set_num_threads(1)


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        if TRAINING & set(item.fixturenames):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def seed_run(tmp_path_factory) -> Path:
    """runs/seed/ of the seed preset (nine pairs, memorised in about a second): best.pt,
    last.pt and metrics.jsonl."""
    return seed_preset(tmp_path_factory.mktemp("seed")).parent


@pytest.fixture
def numbers_workdir(tmp_path, monkeypatch):
    """A factory: numbers_workdir(*overrides) -> a fresh directory, the test's working
    directory from then on, holding config.yaml and the numbers corpus that `make data` builds
    with these overrides (a small corpus, say)."""

    def make(*overrides: str) -> Path:
        monkeypatch.chdir(tmp_path)
        (tmp_path / "config.yaml").write_text((ROOT / "config.yaml").read_text())
        data.main(list(overrides))
        return tmp_path

    return make


def small_numbers_model(
    tmp_path_factory, name: str, vocab: dict, **model_options
) -> tuple[Checkpoint, list]:
    """A small model trained for a few seconds on part of the default numbers corpus: far from
    right, but its outputs on the 1,000-sentence test split vary in content and length.
    `vocab`: the vocabulary settings (config.vocab); `model_options`: config.model's, beside
    the sizes. Under pytest-xdist, trained once for all the workers of a run (`name`: its
    file's, in the run's folder above theirs): the first trains and saves it, the others load
    it."""
    model = {"d_model": 64, "n_heads": 4, "enc_layers": 1, "dec_layers": 1, "d_ff": 128}
    model |= model_options
    config = config_from_dict({"model": model, "vocab": vocab})
    corpus = numbers.generate(CorpusConfig())  # the default corpus: its test split is make data's
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return briefly_trained(config, corpus["train"][:3000]), corpus["test"]
    path = tmp_path_factory.getbasetemp().parent / f"{name}.pt"
    with FileLock(f"{path}.lock"):
        if not path.exists():
            made = briefly_trained(config, corpus["train"][:3000])
            save_checkpoint(path, made.config, made.model, made.src_vocab, made.tgt_vocab, {})
    return load_checkpoint(path), corpus["test"]


@pytest.fixture(scope="session")
def trained_numbers_checkpoint(tmp_path_factory):
    """small_numbers_model with two vocabularies, and no normalisation."""
    return small_numbers_model(tmp_path_factory, "numbers", {})


@pytest.fixture(scope="session")
def trained_joint_numbers_checkpoint(tmp_path_factory):
    """small_numbers_model with one vocabulary for both sides, as make all's config has it
    (lowercase, hyphens as spaces)."""
    vocab = {"joint": True, "lowercase": True, "hyphens_as_spaces": True}
    return small_numbers_model(tmp_path_factory, "joint", vocab)


@pytest.fixture(scope="session")
def trained_shared_numbers_checkpoint(tmp_path_factory):
    """trained_joint_numbers_checkpoint's model with one matrix for its two embeddings and its
    output projection (model.share_embeddings and tie_embeddings)."""
    vocab = {"joint": True, "lowercase": True, "hyphens_as_spaces": True}
    return small_numbers_model(tmp_path_factory, "shared", vocab, share_embeddings=True)


@pytest.fixture(scope="session")
def trained_numbers_model(trained_numbers_checkpoint):
    """The same as (model, source vocabulary, target vocabulary, test pairs, decode config)."""
    checkpoint, test = trained_numbers_checkpoint
    vocabs = checkpoint.src_vocab, checkpoint.tgt_vocab
    return checkpoint.model, *vocabs, test, checkpoint.config.decode


@pytest.fixture(scope="module")
def seed_model(seed_run) -> TorchEngine:
    return TorchEngine(load_checkpoint(seed_run / "best.pt"))


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server for the session (tests/databases.py): its URL without a database."""
    if databases.POSTGRES_BIN is None:
        pytest.skip("no PostgreSQL server (apt install postgresql)")
    pytest.importorskip("psycopg", reason="PostgreSQL is the extra seq2seq[replicas]")
    port = free_port()
    process, folder = databases.start_postgres(port)
    yield f"postgresql://postgres@127.0.0.1:{port}"
    databases.stop_postgres(process)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def postgresql(postgres_server) -> str:
    """A new, empty PostgreSQL database: its URL."""
    return databases.new_database(postgres_server)


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path) -> str:
    """Where a store keeps its state, once in each kind of database: an SQLite file's path, a
    new PostgreSQL database's URL."""
    if request.param == "sqlite":
        return str(tmp_path / "state.db")
    return request.getfixturevalue("postgresql")
