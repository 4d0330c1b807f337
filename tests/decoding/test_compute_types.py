"""decode.compute_type: auto picks, for a checkpoint's export, the fastest type within the
bound of float32's BLEU on the validation split, measured once and kept in the export; an
explicit type (or --compute-type) is used as it is. Which type wins on this CPU is not
asserted anywhere: the choice is tested on given figures."""

import json
import shutil
import subprocess

import pytest
import torch

from seq2seq import export
from seq2seq.config import Config, ConfigError, decode_overrides
from seq2seq.decoding import compute_types
from seq2seq.decoding.compute_types import Figures, chosen
from seq2seq.decoding.engine_choice import load_engine
from seq2seq.decoding.exported import export_folder
from seq2seq.exports.ctranslate2_reader import read_model_bin
from seq2seq.serving.loaders import load_models
from seq2seq.support.errors import UserError
from seq2seq.support.paths import EXPORT_COMPUTE_TYPE

from helpers import ENV, HANG, call, command, running

ctranslate2 = pytest.importorskip(
    "ctranslate2", reason='CTranslate2 is an optional extra: pip install ".[export]"'
)


def test_the_choice_is_the_fastest_type_within_the_bound_of_float32s_bleu():
    figures = {
        "float32": Figures(30.0, 30.0),
        "int8": Figures(29.7, 120.0),  # 0.3 below: within 0.3, though 30.0 - 29.7 > 0.3
        "int8_float32": Figures(29.6, 135.0),
    }
    assert chosen(figures, 0.3) == "int8"
    assert chosen(figures, 0.4) == "int8_float32"
    assert chosen(figures, 0.0) == "float32"
    assert chosen({**figures, "int16": Figures(30.5, 140.0)}, 0.0) == "int16"  # better, faster
    assert chosen({"float32": Figures(30.0, 30.0), "int8": Figures(10.0, 999.0)}, 0.3) == "float32"


@pytest.fixture
def trained_here(seed_run, tmp_path, monkeypatch):
    """A copy of the seed run's best.pt, in the directory where its corpus was made (its
    validation split in data/seed/ relative to it), as the working directory."""
    monkeypatch.chdir(seed_run.parent.parent)
    return shutil.copy(seed_run / "best.pt", tmp_path / "best.pt")


def test_auto_measures_once_keeps_the_figures_in_the_export_and_says_its_choice(
    trained_here, seed_run, monkeypatch
):
    engine = load_engine(checkpoint=trained_here)
    kept = export_folder(trained_here) / EXPORT_COMPUTE_TYPE
    record = json.loads(kept.read_text())
    assert set(record["figures"]) == ctranslate2.get_supported_compute_types("cpu")
    assert record["checkpoint_sha256"] == engine.checkpoint.sha256
    assert record["sentences"] == 9 and record["compute_type_bleu_loss"] == 0.3
    figures = {kind: Figures(**f) for kind, f in record["figures"].items()}
    assert record["chosen"] == chosen(figures, 0.3)
    said = engine.facts()["compute_type"]
    runs = as_ctranslate2_runs(kept.parent, record["chosen"])
    assert said.startswith(f"{runs} (auto: the fastest within 0.3 BLEU of float32")
    assert said.endswith(f"on 9 validation sentences, {kept})")

    def measured_again(*args):
        raise AssertionError("measured again")

    with monkeypatch.context() as patched:  # the same checkpoint, machine: read, not measured
        patched.setattr(compute_types, "measured", measured_again)
        again = load_engine(checkpoint=trained_here, decode={"compute_type_bleu_loss": 100.0})
        fastest = max(figures, key=lambda kind: figures[kind].sentences_per_second)
        runs = as_ctranslate2_runs(kept.parent, fastest)
        assert again.facts()["compute_type"].startswith(f"{runs} (auto: the fastest within 100")
    shutil.copy(seed_run / "last.pt", trained_here)  # another checkpoint: a new export, measured
    other = load_engine(checkpoint=trained_here)
    assert json.loads(kept.read_text())["checkpoint_sha256"] == other.checkpoint.sha256


def as_ctranslate2_runs(folder, kind):
    """The type CTranslate2 says it decodes in when asked for `kind` (on a CPU, int8 is
    int8_float32: the two may be measured within a hair of each other, either chosen)."""
    return ctranslate2.Translator(str(folder), "cpu", compute_type=kind).compute_type


def test_figures_from_another_machine_are_measured_again(trained_here, monkeypatch):
    load_engine(checkpoint=trained_here)
    kept = export_folder(trained_here) / EXPORT_COMPUTE_TYPE
    monkeypatch.setattr(compute_types, "cpu_name", lambda: "another CPU")
    load_engine(checkpoint=trained_here)
    assert json.loads(kept.read_text())["machine"] == "another CPU"


def test_an_explicit_type_is_used_as_it_is_measuring_nothing(trained_here):
    int8 = {"compute_type": "int8_float32"}  # int8 is that on a CPU, as CTranslate2 says
    engine = load_engine(checkpoint=trained_here, decode=int8)
    assert engine.facts()["compute_type"] == "int8_float32 (as set)"
    assert not (export_folder(trained_here) / EXPORT_COMPUTE_TYPE).exists()
    (loader,) = load_models([str(trained_here)], Config(), "auto", "cpu", int8)  # serve's
    with running(loader.load()) as server:
        assert call(server.url, "GET", "/info")[1]["compute_type"] == "int8_float32 (as set)"
    done = subprocess.run(
        command("seq2seq.translate", "--checkpoint", str(trained_here), "--compute-type",
                "float32", "five is five"),
        capture_output=True, text=True, env=ENV, timeout=HANG,
    )  # fmt: skip
    said = (
        "decoding with ctranslate2 (translations), torch (attention) on cpu in float32 (as set), "
        "a batch at a time, 1 thread each"
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "5 la 5\n", said + "\n")


@pytest.mark.parametrize(
    ("int8_bleu", "saved"),
    [(29.8, "int8"), (29.6, "float32")],  # 0.2 and 0.4 below float32
)
def test_an_export_saves_int8_where_it_loses_at_most_the_bound(
    trained_here, monkeypatch, capsys, int8_bleu, saved
):
    """export --quantization auto (the default): the same measures as decode.compute_type
    auto, kept beside the checkpoint; the line says the choice and why."""
    figures = {"float32": Figures(30.0, 30.0), "int8": Figures(int8_bleu, 120.0)}
    monkeypatch.setattr(compute_types, "measured", lambda *args: figures)
    export.main(
        ["ctranslate2", "--checkpoint", str(trained_here), str(trained_here.parent / "out")]
    )
    kept = export_folder(trained_here) / EXPORT_COMPUTE_TYPE
    loss = round(30.0 - int8_bleu, 2)
    assert capsys.readouterr().out.endswith(
        f"(CTranslate2, {saved}: auto: int8 loses {loss} BLEU on 9 validation sentences, "
        f"0.3 allowed, {kept})\n"
    )
    types = read_model_bin(trained_here.parent / "out/model.bin").types.values()
    assert (torch.int8 in types) == (saved == "int8")


def test_a_model_given_with_model_keeps_its_own_type(trained_here):
    folder = load_engine(checkpoint=trained_here, decode={"compute_type": "float32"}).folder
    given = load_engine(model=folder, choice="ctranslate2").facts()["compute_type"]
    assert given == "float32 (auto: a model given with --model keeps its own, as saved)"


def test_a_bad_compute_type_is_one_line_naming_it(seed_run):
    with pytest.raises(ConfigError, match=r"'decode.compute_type' is 'int9'; choose one of"):
        decode_overrides(["decode.compute_type=int9"])
    with pytest.raises(UserError, match=r"^decode.compute_type: not for .*: our torch code"):
        load_engine(
            checkpoint=seed_run / "best.pt", choice="torch", decode={"compute_type": "int8"}
        )
    done = subprocess.run(
        command("seq2seq.translate", "--compute-type", "int9", "five is five"),
        capture_output=True, text=True, env=ENV, timeout=HANG,
    )  # fmt: skip
    assert done.returncode == 2 and "--compute-type: invalid choice: 'int9'" in done.stderr
