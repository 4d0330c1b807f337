"""End to end: data, train, eval and translate on the seed preset, in a temporary directory."""

import json
import math
import re
import resource
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from seq2seq import data, evaluate, plot, serve, train, translate
from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.config import TrainConfig
from seq2seq.support.errors import UserError
from seq2seq.training.optimizer import learning_rate, schedule_warning

from helpers import ENV, HANG, ROOT, command, damage


def run_module(module: str, *args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        command(module, *args),
        cwd=cwd,
        env=ENV,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=HANG,
    )


def test_learning_rate_warms_up_then_decays_to_min_lr():
    cfg = TrainConfig(lr=1e-3, min_lr=1e-5, warmup_steps=10, max_steps=110)
    assert learning_rate(0, cfg) == pytest.approx(1e-4)
    assert learning_rate(9, cfg) == pytest.approx(1e-3)
    assert learning_rate(60, cfg) == pytest.approx((1e-3 + 1e-5) / 2)
    assert learning_rate(110, cfg) == pytest.approx(1e-5)
    rates = [learning_rate(s, cfg) for s in range(10, 111)]
    assert all(a >= b for a, b in zip(rates[:-1], rates[1:], strict=True)) and not math.isnan(
        sum(rates)
    )


def test_with_a_time_budget_the_decay_ends_with_it_or_at_max_steps():
    """train.max_minutes lays the cosine over the budget; max_steps still ends it if nearer."""
    cfg = TrainConfig(lr=1e-3, min_lr=1e-5, warmup_steps=10, max_steps=100_000, max_minutes=10)
    assert learning_rate(5, cfg, elapsed_s=300) == pytest.approx(6e-4)  # warming up: by step
    assert learning_rate(20, cfg, elapsed_s=300) == pytest.approx((1e-3 + 1e-5) / 2)
    assert learning_rate(20, cfg, elapsed_s=600) == pytest.approx(1e-5)
    assert learning_rate(20, cfg, elapsed_s=900) == pytest.approx(1e-5)  # past it: min_lr
    steps_first = TrainConfig(lr=1e-3, min_lr=1e-5, warmup_steps=10, max_steps=110, max_minutes=10)
    assert learning_rate(60, steps_first, elapsed_s=1) == pytest.approx((1e-3 + 1e-5) / 2)


@pytest.mark.slow
def test_seed_preset_end_to_end(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "configs/seed.yaml", tmp_path / "config.yaml")

    data.main([])
    assert (tmp_path / "data/seed/train.src").read_text().splitlines()[2] == "three is three"
    train.main([])
    assert (tmp_path / "runs/seed/best.pt").exists()
    log = [
        json.loads(line) for line in (tmp_path / "runs/seed/metrics.jsonl").read_text().splitlines()
    ]
    assert log[-1]["valid_exact_match"] == 1.0
    assert log[-1]["valid_loss"] < log[0]["valid_loss"]

    capsys.readouterr()
    evaluate.main(["decode.beam_size=3"])
    said, *printed = capsys.readouterr().out.splitlines()  # the figures are in eval.json
    assert said == "decoding 9 test sentences with torch on cpu"
    assert [line.split()[:5] for line in printed[:2]] == [
        ["greedy", "exact", "match", "100.0%", "BLEU"],
        ["beam", "3", "exact", "match", "100.0%"],
    ]
    assert printed[2:] == [
        "wrote runs/seed/test.hyp, runs/seed/test.beam.hyp and runs/seed/eval.json"
    ]
    result = json.loads((tmp_path / "runs/seed/eval.json").read_text())
    assert result["beam"]["exact_match"] == 1.0 and result["beam"]["beam_size"] == 3
    assert result["exact_match"] == 1.0 and result["n_sentences"] == 9
    assert result["engine"] == "torch"
    assert result["chrf"] == pytest.approx(100.0)  # (BLEU is 0: no 4-grams in 3 tokens)
    assert set(result) >= {"token_accuracy", "bleu", "bleu_signature", "decode_seconds"}
    assert (tmp_path / "runs/seed/test.hyp").read_text().splitlines()[6] == "7 la 7"
    written = (tmp_path / "runs/seed/eval.json").stat().st_mtime_ns
    evaluate.main(["decode.beam_size=3"])  # the same checkpoint, test split and decoding
    again = capsys.readouterr().out.splitlines()
    assert again == ["runs/seed/eval.json is up to date (--again to decode anyway):", *printed[:2]]
    assert (tmp_path / "runs/seed/eval.json").stat().st_mtime_ns == written
    evaluate.main(["decode.beam_size=2"])  # other settings: decoded
    assert capsys.readouterr().out.splitlines()[2].startswith("beam 2 ")

    capsys.readouterr()
    translate.main(["three is three", "nine is nine"])
    assert capsys.readouterr().out == "3 la 3\n9 la 9\n"
    translate.main(["--beam-size", "3", "--length-penalty", "0.6", "four is four", "two is two"])
    assert capsys.readouterr().out == "4 la 4\n2 la 2\n"
    translate.main(["--no-repeat-ngram", "1", "four is four"])  # 1: no piece twice
    output = capsys.readouterr().out
    assert output.startswith("4 la") and output != "4 la 4\n"
    translate.main(["--nbest", "2", "four is four", "two is two"])
    nbest = [line.split(" ||| ") for line in capsys.readouterr().out.splitlines()]
    assert [(n, text) for n, text, _ in nbest][::2] == [("0", "4 la 4"), ("1", "2 la 2")]
    assert [n for n, _, _ in nbest] == ["0", "0", "1", "1"]
    assert float(nbest[0][2]) >= float(nbest[1][2]) and float(nbest[2][2]) >= float(nbest[3][2])
    # every validation fitted a confidence: all nine right, so each is sure, and says so
    translate.main(["--confidence", "three is three", "nine is nine"])
    assert capsys.readouterr().out == "3 la 3\t0.99\n9 la 9\t0.99\n"
    sure = (tmp_path / "runs/seed/test.hyp.confidence").read_text().splitlines()
    assert sure == ["0.9900"] * 9 and result["confidence"]["acceptable"] == 1.0
    assert not list(tmp_path.rglob("*.tmp")), "a temporary file was left behind"

    # The checkpoint is self-contained: no config file or data directory needed.
    shutil.move(tmp_path / "runs/seed/best.pt", tmp_path / "model.pt")
    shutil.rmtree(tmp_path / "data")
    (tmp_path / "config.yaml").unlink()
    done = run_module(
        "seq2seq.translate",
        "--checkpoint",
        "model.pt",
        cwd=tmp_path,
        stdin="one is one\nfive is five\n",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "1 la 1\n5 la 5\n"


@pytest.mark.slow
def test_translate_without_a_trained_model_says_what_to_run(tmp_path):
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    done = run_module("seq2seq.translate", "three is three", cwd=tmp_path)
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        == "error: no trained model at runs/numbers/best.pt: run `make train` first"
    )


@pytest.mark.parametrize(
    ("module", "args", "missing"),
    [
        (translate, ["three is three"], "no trained model at runs/seed/best.pt: run `make train"),
        (plot, ["curves"], "no training log at runs/seed/metrics.jsonl: run `make train"),
        (
            plot,
            ["attention", "one is one"],
            "no trained model at runs/seed/best.pt: run `make train",
        ),
        (serve, [], "no trained model at runs/seed/best.pt: run `make train"),
        (evaluate, [], "no test split in data/seed/: run `make data"),
        (train, [], "no vocabulary data/seed/src.model: run `make data"),
    ],
)
def test_what_to_run_first_names_the_config(module, args, missing, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").mkdir()
    shutil.copy(ROOT / "configs/seed.yaml", tmp_path / "configs/seed.yaml")
    with pytest.raises(UserError) as error:
        module.main(["--config", "configs/seed.yaml", *args])
    assert str(error.value) == f"{missing} CONFIG=configs/seed.yaml` first"


def test_translate_refuses_a_config_override_instead_of_translating_it(tmp_path):
    with pytest.raises(UserError, match=r"^'experiment=bt' sets a config option, which "
                       r"translate does not take: .*--checkpoint"):  # fmt: skip
        translate.main(["experiment=bt", "seven is seven"])


def test_training_that_stops_during_the_warmup_is_warned(tmp_path):
    assert schedule_warning(TrainConfig(max_steps=200, warmup_steps=200)) is None
    warning = schedule_warning(TrainConfig(lr=1e-3, max_steps=50, warmup_steps=200))
    assert warning == (
        "train.max_steps (50) is below train.warmup_steps (200): the learning rate stops at "
        "2.50e-04, never reaching train.lr (1.00e-03); lower train.warmup_steps"
    )


def test_a_damaged_checkpoint_is_refused_naming_the_file(seed_run, tmp_path):
    shutil.copy(seed_run / "best.pt", tmp_path / "best.pt")
    damage(tmp_path / "best.pt")
    done = run_module(
        "seq2seq.translate", "--checkpoint", "best.pt", "seven is seven", cwd=tmp_path
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "error: best.pt is damaged: its contents do not match their checksum (a disk or copy "
        "error): use another copy, or train again\n"
    )


def test_no_checkpoint_with_a_non_finite_weight_is_written(seed_run, tmp_path):
    checkpoint = load_checkpoint(seed_run / "best.pt")
    with torch.no_grad():
        next(checkpoint.model.parameters())[0, 0] = float("inf")
    parts = (checkpoint.config, checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab)
    with pytest.raises(ValueError, match=r"not writing .*best.pt: .* is not finite"):
        save_checkpoint(tmp_path / "best.pt", *parts, checkpoint.info)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_corrupt_checkpoint_is_a_clear_error(tmp_path):
    (tmp_path / "broken.pt").write_bytes(b"not a checkpoint")
    done = run_module("seq2seq.translate", "--checkpoint", "broken.pt", "x", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("error: broken.pt is not a readable checkpoint (not a zip")
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


@pytest.mark.slow
def test_a_config_mistake_is_one_line_naming_the_key(tmp_path):
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    done = run_module("seq2seq.train", "train.max_stesp=3", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "error: override train.max_stesp=3: unknown key 'train.max_stesp' "
        "(did you mean 'train.max_steps'?)"
    )
    done = run_module("seq2seq.train", cwd=tmp_path)
    assert done.returncode == 1 and "run `make data` first" in done.stderr


@pytest.mark.parametrize("module", [data, train, evaluate, translate, plot])
def test_help_names_the_command_as_it_is_typed(module, capsys):
    with pytest.raises(SystemExit) as exit_:
        module.main(["--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: python -m {module.__name__} ")


def with_file_size_limit(limit: int) -> Callable[[], None]:
    """For a subprocess: the kernel refuses to write files past `limit` bytes (EFBIG), as a
    full disk refuses (ENOSPC), for root too (Python ignores the SIGXFSZ that comes with it)."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))


@pytest.mark.slow
def test_a_file_system_refusal_is_one_line_and_loses_nothing(seed_run, tmp_path):
    """Training on from a finished run with a file-size limit that the checkpoints exceed: one
    line naming the checkpoint, no temporary file left, the earlier checkpoints intact."""
    shutil.copytree(seed_run.parent.parent, tmp_path / "work")
    work, run = tmp_path / "work", tmp_path / "work/runs/seed"
    before = {name: (run / name).read_bytes() for name in ("best.pt", "last.pt")}
    done = subprocess.run(
        command("seq2seq.train", "train.max_steps=300", "train.eval_every=10"),
        cwd=work, env=ENV, capture_output=True, text=True, timeout=HANG,
        preexec_fn=with_file_size_limit(min(map(len, before.values())) // 2),
    )  # fmt: skip
    error = done.stderr.splitlines()[-1]
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert re.fullmatch(r"error: runs/seed/(best|last)\.pt: File too large: .*", error), error
    assert [path.name for path in run.iterdir() if path.name.endswith(".tmp")] == []
    assert {name: (run / name).read_bytes() for name in before} == before
    assert load_checkpoint(run / "last.pt").info["step"] == 150  # the finished run, still whole


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, path",
    [
        (["seq2seq.data", "corpus.seed=2"], "data/seed/train.src"),
        (["seq2seq.evaluate"], "runs/seed/eval.json"),
        (
            [
                "seq2seq.export",
                "ctranslate2",
                "--checkpoint",
                "runs/seed/best.pt",
                "ct2",
                "--quantization",
                "float32",
            ],
            "ct2",
        ),  # as chosen: auto would write best.ct2 first
        (["seq2seq.export", "huggingface", "--checkpoint", "runs/seed/best.pt", "hf"], "hf"),
    ],
)
def test_data_eval_and_export_refused_by_the_file_system_say_so_in_a_line(
    seed_run, tmp_path, args, path
):
    """The same file-size limit for the other commands that write: one line naming what was
    being written, no temporary file or folder left, the files already there unchanged."""
    shutil.copytree(seed_run.parent.parent, tmp_path / "work")
    work = tmp_path / "work"
    before = {file: file.read_bytes() for file in work.rglob("*") if file.is_file()}
    done = subprocess.run(
        command(*args), cwd=work, env=ENV, capture_output=True, text=True, timeout=HANG,
        preexec_fn=with_file_size_limit(100),
    )  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"error: {path}: File too large: "), done.stderr
    assert len(done.stderr.splitlines()) == 1
    after = {file: file.read_bytes() for file in work.rglob("*") if file.is_file()}
    assert {file: after.get(file) for file in before} == before
    assert [path.name for path in work.rglob(".*")] == []  # no temporary file or folder
