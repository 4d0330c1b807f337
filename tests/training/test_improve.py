"""python -m seq2seq.improve: a small numbers model fine-tuned on a few corrections for a few
steps, gated, kept as a version; served (versions/current) or kept aside; listed; rolled back."""

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from seq2seq import data, improve
from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import Language, load_config
from seq2seq.decoding.engine_choice import ctranslate2_runs_on
from seq2seq.decoding.exported import export_folder, made_from
from seq2seq.localization.suggestions import Suggestions
from seq2seq.support.errors import UserError
from seq2seq.support.files import file_hash
from seq2seq.support.paths import IMPROVING, VERSIONS, served_checkpoint
from seq2seq.train import train
from seq2seq.training import gate, improvement

from helpers import ENV, ROOT, TRAINING_DEVICE, wait_until

SMALL = """base: config.yaml
experiment: small
corpus: {name: small, train_size: 1500, valid_size: 40, test_size: 40}
model: {d_model: 32, enc_layers: 1, dec_layers: 1, d_ff: 64}
train: {warmup_steps: 5, max_steps: 30, eval_every: 30, average_last: 0}
"""
CORRECTIONS = [("three is three", "3 la 3"), ("four is five", "4 la 5"), ("two is two", "2 la 2")]
RUN = Path("runs/small")


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A folder holding small.yaml, its corpus and model (trained for seconds) and a
    suggestions file with CORRECTIONS from en to digits (the numbers corpus's pair)."""
    directory = tmp_path_factory.mktemp("improve")
    before = Path.cwd()
    os.chdir(directory)
    try:
        Path("config.yaml").write_text((ROOT / "config.yaml").read_text())
        Path("small.yaml").write_text(SMALL)
        data.main(["--config", "small.yaml"])
        train(load_config("small.yaml"))
        suggestions = Suggestions(Path("suggestions.db"))
        for q, s in CORRECTIONS:
            suggestions.add(q, s, "en", "digits")
        suggestions.close()
    finally:
        os.chdir(before)
    return directory


@pytest.fixture(scope="module")
def improved(trained, tmp_path_factory) -> Path:
    """A copy of `trained` improved twice: 0001 served, then 0002 kept aside (a max test loss
    of -100: no model can pass)."""
    directory = tmp_path_factory.mktemp("improved")
    shutil.copytree(trained, directory, dirs_exist_ok=True)
    before = Path.cwd()
    os.chdir(directory)
    try:
        improve_with("--max-test-loss", "100")
        improve_with("--max-test-loss", "-100")
    finally:
        os.chdir(before)
    return directory


def copy_of(folder: Path, tmp_path: Path, monkeypatch) -> Path:
    """A copy of `folder`, the test's working directory."""
    shutil.copytree(folder, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def improve_with(*args: str) -> None:
    improve.main(["--config", "small.yaml", "--suggestions", "suggestions.db", *args,
                  "train.max_steps=3"])  # fmt: skip


def about(name: str) -> dict:
    return json.loads((RUN / VERSIONS / name / "version.json").read_text())


@pytest.mark.slow
def test_an_improvement_that_passes_the_gate_is_served(trained, improved, monkeypatch):
    original = file_hash(trained / RUN / "best.pt")
    monkeypatch.chdir(improved)
    version = about("0001")
    assert version["verdict"] == "served"
    assert version["started_from"] == {"path": str(RUN / "best.pt"), "sha256": original}
    assert version["compared_with"] == version["started_from"]  # nothing served before it
    assert version["trained_on"]["corrections"] == 3
    assert version["trained_on"]["held_out"] == 0  # too few to hold one out
    assert version["steps"] == 3
    assert version["scores"]["held_out"] is None
    assert version["scores"]["test"]["sentences"] == 40
    assert file_hash(RUN / "best.pt") == original  # the experiment's own files untouched
    assert not Path("runs/small.improve").exists() and not Path("data/small.improve").exists()
    if ctranslate2_runs_on(TRAINING_DEVICE):  # made before current named it: a swap loads
        served = RUN / VERSIONS / "0001/best.pt"
        assert made_from(export_folder(served)) == load_checkpoint(served).sha256
        assert not export_folder(RUN / VERSIONS / "0002/best.pt").exists()  # kept aside


@pytest.mark.slow
def test_one_that_fails_is_kept_aside_and_starts_from_the_original_again(improved, monkeypatch):
    monkeypatch.chdir(improved)
    version = about("0002")
    assert version["verdict"] == "kept aside"
    assert "test BLEU" in version["reason"] and "a loss over -100" in version["reason"]
    assert (RUN / VERSIONS / "current").read_text() == "0001\n"  # unchanged
    assert served_checkpoint(RUN) == RUN / VERSIONS / "0001/best.pt"
    assert version["started_from"]["path"] == str(RUN / "best.pt")  # not the served version
    assert version["compared_with"]["path"] == str(RUN / VERSIONS / "0001/best.pt")


@pytest.mark.slow
def test_list_and_rollback(improved, tmp_path, monkeypatch, capsys):
    copy_of(improved, tmp_path, monkeypatch)
    improve.main(["--config", "small.yaml", "--list"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("  original")
    assert lines[1].startswith("* 0001") and "served" in lines[1]
    assert lines[2].startswith("  0002") and "kept aside" in lines[2]
    with pytest.raises(UserError, match="0002 was kept aside"):
        improve.main(["--config", "small.yaml", "--rollback", "2"])
    improve.main(["--config", "small.yaml", "--rollback", "2", "--force"])
    assert served_checkpoint(RUN) == RUN / VERSIONS / "0002/best.pt"
    improve.main(["--config", "small.yaml", "--rollback"])  # the original
    assert served_checkpoint(RUN) == RUN / "best.pt"
    improve.main(["--config", "small.yaml", "--rollback", "0001"])
    assert served_checkpoint(RUN) == RUN / VERSIONS / "0001/best.pt"
    with pytest.raises(UserError, match="no such version"):
        improve.main(["--config", "small.yaml", "--rollback", "7"])


@pytest.mark.slow
def test_one_improvement_at_a_time(trained, tmp_path, monkeypatch):
    copy_of(trained, tmp_path, monkeypatch)
    (RUN / VERSIONS).mkdir(parents=True)
    with (RUN / VERSIONS / IMPROVING).open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with pytest.raises(UserError, match="another improvement is under way"):
            improve_with()
    assert not (RUN / VERSIONS / "0001").exists()


def test_one_improvement_at_a_time_across_machines_that_share_a_database(postgresql, tmp_path):
    """Two machines (each its own folder, its own lock file) improving the same experiment,
    sharing the service's PostgreSQL: the second is refused while the first runs, and may go
    once it has ended, or once its process died (its connection gone, the lock with it)."""
    here, there = tmp_path / "a/runs/numbers", tmp_path / "b/runs/numbers"
    with improve.one_at_a_time(here, postgresql):
        assert not may_improve(there, postgresql)
    assert may_improve(there, postgresql)  # the first ended
    holding = "\n".join([
        "import sys, time", "from seq2seq.support.database import held_lock",
        "with held_lock(sys.argv[1], 'improving numbers') as taken:",
        "    print(taken, flush=True)", "    time.sleep(600)",
    ])  # fmt: skip
    holder = subprocess.Popen(
        [sys.executable, "-c", holding, postgresql], stdout=subprocess.PIPE, env=ENV
    )
    assert holder.stdout.readline() == b"True\n"
    assert not may_improve(there, postgresql)
    holder.kill()
    holder.wait()
    wait_until(lambda: may_improve(there, postgresql), "the dead process's lock let go")


def may_improve(run_dir: Path, database: str) -> bool:
    """Whether an improvement of run_dir's experiment may start, or is refused as another's
    lock in `database` is held."""
    try:
        with improve.one_at_a_time(run_dir, database):
            return True
    except UserError as error:
        assert f"another improvement is under way (its lock in {database})" in str(error)
        return False


def test_a_text_is_always_on_the_same_side(tmp_path):
    config = load_config(ROOT / "config.yaml")
    path = tmp_path / "suggestions.db"
    suggestions = Suggestions(path)
    texts = [f"{word} is {word}" for word in "one two three four five six seven eight".split()]
    for text in texts:
        suggestions.add(text, "x", "en", "digits")
    suggestions.add("  one   is one ", "y", "en", "digits")  # one's text, normalised
    suggestions.add("nine is nine", "bad\nline", "en", "digits")  # make data would drop it
    found = improvement.corrections(path, config)
    held = {q for q, _ in found.held_out}
    assert held - {"  one   is one "} == {
        t for t in texts if improvement.held_out(t, config.corpus.seed)
    }
    assert held and len(held) < len(texts)
    assert ("  one   is one " in held) == ("one is one" in held)
    assert found.read == 10 and len(found.train) + len(found.held_out) == 9
    few = tmp_path / "few.db"
    Suggestions(few).add("one is one", "x", "en", "digits")
    assert improvement.corrections(few, config).held_out == []
    config.serve.source_language = Language("fr", "French")
    with pytest.raises(UserError, match="no corrections from fr to digits"):
        improvement.corrections(few, config)


def test_the_gate_asks_no_worse_on_the_corrections_and_little_lost_on_the_test_set():
    test = {"bleu_original": 30.0, "bleu_new": 29.5}
    better = {"chrf_old": 50.0, "chrf_new": 60.0}
    assert gate.verdict(better, test, 1.0)[0]
    assert gate.verdict(None, test, 1.0) == (
        True, "no held-out corrections: the test set alone; test BLEU 30.00 -> 29.50"
    )  # fmt: skip
    passed, reason = gate.verdict({"chrf_old": 50.0, "chrf_new": 49.0}, test, 1.0)
    assert not passed and "held-out chrF 49.00 < 50.00" in reason
    passed, reason = gate.verdict(better, test, 0.4)
    assert not passed and "test BLEU 30.00 -> 29.50: a loss over 0.4" in reason


@pytest.mark.slow
def test_the_gate_scores_held_out_corrections_by_the_model_served_and_the_new_one(
    improved, tmp_path, monkeypatch
):
    copy_of(improved, tmp_path, monkeypatch)
    config, folder = load_config("small.yaml"), RUN / VERSIONS / "0002"
    for path, text in zip(improvement.pair_files(config, folder, "held_out"),
                          ["one is one\nsix is six", "1 la 1\n6 la 6"], strict=True):  # fmt: skip
        path.write_text(text + "\n")
    served, start = RUN / VERSIONS / "0001/best.pt", about("0001")["started_from"]["sha256"]
    scores = improve.gate_scores(config, folder, served, folder / "best.pt", start)
    held = scores["held_out"]
    assert held["sentences"] == 2
    assert all(0 <= held[key] <= 100 for key in ("chrf_old", "chrf_new", "bleu_old", "bleu_new"))
    assert scores["test"] == about("0002")["scores"]["test"]  # the same models, the same sample


@pytest.mark.slow
def test_the_original_is_scored_on_the_test_sample_once(improved, monkeypatch, capsys):
    monkeypatch.chdir(improved)
    first, second = (about(name)["scores"]["test"] for name in ("0001", "0002"))
    assert first["sample_sha256"] == second["sample_sha256"]
    assert first["bleu_original"] == second["bleu_original"]
    start = about("0001")["started_from"]["sha256"]
    assert improve.scored_before(RUN, start, first["sample_sha256"]) == {
        "bleu": first["bleu_original"]
    }
    assert "(version 0002's gate)" in capsys.readouterr().err
    assert improve.scored_before(RUN, "another original", first["sample_sha256"]) is None
    assert improve.scored_before(RUN, start, "another sample") is None


@pytest.mark.slow
def test_a_fault_is_said_before_a_version_is_made(trained, tmp_path, monkeypatch):
    copy_of(trained, tmp_path, monkeypatch)
    with pytest.raises(UserError, match="none.db: no such suggestions file"):
        improve.main(["--config", "small.yaml", "--suggestions", "none.db"])
    shutil.rmtree("data/small")
    with pytest.raises(UserError, match="data/small/train.src is not found"):
        improve_with()
    assert list((RUN / VERSIONS).iterdir()) == [RUN / VERSIONS / IMPROVING]


def test_a_version_that_cannot_be_prepared_is_served_all_the_same(monkeypatch, capsys):
    """Its export not made ahead (a full disk, say): said; the service makes it as it swaps."""

    def full_disk(checkpoint: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(improve, "prepare", full_disk)
    improve.prepared(Path("runs/small/versions/0001/best.pt"))
    said = capsys.readouterr().err
    assert "runs/small/versions/0001/best.pt: not prepared for the service" in said
    assert "No space left on device" in said


def test_ask_prints_the_least_sure_translations_first(trained, tmp_path, monkeypatch, capsys):
    copy_of(trained, tmp_path, monkeypatch)
    texts = ["three is three", "four hundred and two is nine", "", "one is one", "two is two"]
    Path("texts.txt").write_text("\n".join(texts) + "\n")
    improve.main(["--config", "small.yaml", "--ask", "texts.txt", "--count", "3"])
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 3 and all(len(line) == 3 for line in lines)
    sure = [float(confidence) for confidence, _, _ in lines]
    assert sure == sorted(sure) and all(0 <= p <= 1 for p in sure)
    assert {text for _, text, _ in lines} < set(texts) - {""}
    with pytest.raises(UserError, match="cannot read missing.txt"):
        improve.main(["--config", "small.yaml", "--ask", "missing.txt"])
