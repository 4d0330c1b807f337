"""Argos Translate packages: installed and run by Argos Translate's own code, they translate as
we do (greedy and beam 4: as we decode at Argos's settings),
and what a package cannot represent is refused; loaded by our Argos engine (the service's),
ours and one laid out as Argos publishes them translate as Argos Translate does."""

import dataclasses
import json
import subprocess
import zipfile
from pathlib import Path

import ctranslate2
import pytest

from benchmarks.speed.exports import run_argos  # Argos Translate in a child process
from seq2seq import export
from seq2seq.checkpoint import save_checkpoint
from seq2seq.config import Language
from seq2seq.decoding.argos_engine import ArgosEngine
from seq2seq.decoding.confidence import Calibration
from seq2seq.decoding.ctranslate2_engine import CTranslate2Engine
from seq2seq.exports.argos import export_argos
from seq2seq.exports.argos_package import package_folders
from seq2seq.exports.ctranslate2 import export_ctranslate2
from seq2seq.exports.importing import import_model
from seq2seq.support.errors import UserError
from seq2seq.tokens.special import EOS

from helpers import (
    ENV,
    ROOT,
    assert_same_or_tied,
    command,
    greedy_ids,
    length_limits,
    next_token_log_probs,
    wait_until,
)

pytest.importorskip("argostranslate", reason='Argos Translate is an optional extra: ".[argos]"')

CALIBRATION = Calibration(1.5, 2.0, sentences=40, acceptable=0.7)


def messy(sentences: list[str]) -> list[str]:
    """The same sentences as a user may type them: capitals and hyphens, which the model's
    normalisation (vocab.lowercase, hyphens_as_spaces) turns back into the corpus's form."""
    return [s.title() if i % 2 else s.upper().replace(" ", "-") for i, s in enumerate(sentences)]


@pytest.fixture(scope="module")
def argos(trained_joint_numbers_checkpoint, tmp_path_factory):
    """The package, the sentences, Argos Translate's outputs at beams 1 and 4. Its CTranslate2
    runs on one thread, as our CTranslate2 engine does: the same computation, the same bits."""
    checkpoint, test = trained_joint_numbers_checkpoint
    tmp = tmp_path_factory.mktemp("argos")
    package = tmp / "numbers.argosmodel"
    calibrated = {**checkpoint.info, "confidence": CALIBRATION.to_dict()}  # Argos ignores it
    export_argos(dataclasses.replace(checkpoint, info=calibrated), package)
    long = " ".join(["seven hundred"] * 600)  # 1,200 pieces: past CTranslate2's cut at 1,024
    sentences = [s for s, _ in test] + messy([s for s, _ in test[:200]]) + [long]
    home = tmp / "home"
    return package, sentences, run_argos(package, ("en", "digits"), sentences, home, (1, 4), 1)


@pytest.mark.same_outputs
@pytest.mark.slow
def test_argos_translates_as_our_greedy_decoding(argos, trained_joint_numbers_checkpoint):
    """Our outputs without decode.no_repeat_ngram (Argos has no such setting), but where our
    model hesitates (helpers.TIE), and but for the outputs that never end: Argos stops them at
    256 pieces, we at decode.max_len_a * length + max_len_b."""
    checkpoint = trained_joint_numbers_checkpoint[0]
    _, sentences, results = argos
    sentences, theirs = sentences[:-1], results["1"][:-1]
    ours = greedy_ids(checkpoint, sentences, no_repeat_ngram=0)
    assert len(set(checkpoint.tgt_vocab.detokenize(ours))) > 100, "the outputs should vary"
    limits = length_limits(checkpoint, sentences)
    cut = [
        ids[:limit] for ids, limit in zip(checkpoint.tgt_vocab.encode(theirs), limits, strict=True)
    ]
    assert_same_or_tied(checkpoint, sentences, ours, cut, no_repeat=0)
    assert results["1"][-1], "a source past the model's position table still translates"


@pytest.mark.same_outputs
@pytest.mark.slow
def test_argos_beam_search_gives_our_outputs_at_its_settings(
    argos, trained_joint_numbers_checkpoint
):
    """Argos Translate decodes one sentence a call at beam 4, length_penalty 0.2, up to 256
    pieces, without decode.no_repeat_ngram: our outputs at those settings, from our CTranslate2
    engine on one thread as Argos's runs here, so the same computation, tie or no tie (its
    search is ours, tests/exports/test_ctranslate2.py). But where an empty output is among the
    4 best of the first step: Argos forbids it (CTranslate2's min_decoding_length 1), we do not,
    and it takes a beam's place."""
    checkpoint = trained_joint_numbers_checkpoint[0]
    package, sentences, results = argos
    sentences, theirs = sentences[:-1], results["4"][:-1]
    export_ctranslate2(checkpoint, package.with_name("ct2"))
    engine = CTranslate2Engine.load(package.with_name("ct2"), compute_type="float32")
    argos_settings = dataclasses.replace(
        checkpoint.config.decode, beam_size=4, length_penalty=0.2, max_len_a=0, max_len_b=255,
        no_repeat_ngram=0, batch_size=1,
    )  # fmt: skip
    ours = engine.translate(sentences, argos_settings).outputs
    model = checkpoint.model.eval()
    first_steps = [
        next_token_log_probs(model, ids, []) for ids in engine.src_vocab.encode(sentences)
    ]
    may_end_at_once = {i for i, step in enumerate(first_steps) if EOS in step.topk(4).indices}
    assert len(set(ours)) > 100, "the outputs should vary"
    assert {
        i for i, (o, t) in enumerate(zip(ours, theirs, strict=True)) if o != t
    } <= may_end_at_once


@pytest.mark.same_outputs
@pytest.mark.slow
def test_a_model_with_shared_embeddings_translates_as_ours(
    trained_shared_numbers_checkpoint, tmp_path
):
    """model.share_embeddings: the package (CTranslate2's one matrix, with the -inf bias of
    its output projection) still gives our greedy outputs without decode.no_repeat_ngram, on
    the first 300 test sentences."""
    checkpoint, test = trained_shared_numbers_checkpoint
    export_argos(checkpoint, tmp_path / "shared.argosmodel")
    sentences = [s for s, _ in test[:300]]
    theirs = run_argos(tmp_path / "shared.argosmodel", ("en", "digits"), sentences, tmp_path)["1"]
    limits = length_limits(checkpoint, sentences)
    cut = [
        ids[:limit] for ids, limit in zip(checkpoint.tgt_vocab.encode(theirs), limits, strict=True)
    ]
    ours = greedy_ids(checkpoint, sentences, no_repeat_ngram=0)
    assert_same_or_tied(checkpoint, sentences, ours, cut, no_repeat=0)


def test_the_package_is_what_argos_reads(argos):
    package, _, results = argos
    with zipfile.ZipFile(package) as archive:
        names = archive.namelist()
        folder = names[0].split("/")[0]
        metadata = json.loads(archive.read(f"{folder}/metadata.json"))
    assert folder == "translate-en_digits-1_0" and all(n.startswith(folder + "/") for n in names)
    assert {f"{folder}/sentencepiece.model", f"{folder}/model/model.bin"} <= set(names)
    assert (metadata["from_code"], metadata["to_name"]) == ("en", "Digits")
    assert results["to_code"] == "digits"
    assert "parameters" in results["readme"] and "Not evaluated" in results["readme"]
    # the calibration travels in the metadata, which Argos Translate read past (above)
    assert metadata["confidence"] == CALIBRATION.to_dict()
    assert ArgosEngine.load(package).calibration == CALIBRATION
    assert import_model(package).checkpoint.info["confidence"] == CALIBRATION.to_dict()


def test_what_a_package_cannot_hold_is_refused(
    trained_numbers_checkpoint, trained_joint_numbers_checkpoint, tmp_path
):
    checkpoint = trained_numbers_checkpoint[0]  # two vocabularies
    with pytest.raises(UserError, match="train it with vocab.joint: true"):
        export_argos(checkpoint, tmp_path / "x.argosmodel")
    with pytest.raises(UserError, match="an Argos package's name ends in .argosmodel"):
        export_argos(trained_joint_numbers_checkpoint[0], tmp_path / "x.zip")
    assert not list(tmp_path.iterdir()), "nothing written"


@pytest.mark.same_outputs
@pytest.mark.slow
def test_an_int8_package_translates_as_ctranslate2_on_its_int8_weights(
    argos, trained_joint_numbers_checkpoint, tmp_path
):
    """export --quantization int8: the package's matrices are int8 (its model.bin well under
    float32's; the position tables stay float32, most of so small a model), Argos Translate
    installs it, and its greedy outputs are CTranslate2's on the package's own model, called
    as Argos calls it: the same computation."""
    checkpoint = trained_joint_numbers_checkpoint[0]
    package, sentences, _ = argos
    int8 = tmp_path / "int8.argosmodel"
    export_argos(checkpoint, int8, quantization="int8")
    sizes = {}
    for path in (package, int8):
        with zipfile.ZipFile(path) as archive:
            sizes[path] = next(
                i.file_size for i in archive.infolist() if i.filename.endswith(".bin")
            )
            if path == int8:
                archive.extractall(tmp_path / "unzipped")
    assert sizes[int8] < 0.7 * sizes[package]
    sentences = sentences[:300]
    theirs = run_argos(int8, ("en", "digits"), sentences, tmp_path / "home", (1,), 1)["1"]
    model = ctranslate2.Translator(
        str(tmp_path / "unzipped/translate-en_digits-1_0/model"), compute_type="float32",
        intra_threads=1,
    )  # fmt: skip
    ours = []
    for ids in checkpoint.src_vocab.encode(sentences):
        result = model.translate_batch([checkpoint.src_vocab.pieces(ids)], beam_size=1)
        ours.append(checkpoint.tgt_vocab.sp.decode_pieces(result[0].hypotheses[0]))
    assert len(set(theirs)) > 100, "the outputs should vary"
    assert theirs == ours


def test_export_defaults_to_the_runs_best_checkpoint_and_a_package_beside_it(
    trained_joint_numbers_checkpoint, tmp_path, monkeypatch, capsys
):
    """`export argos --config C key=value`: the best.pt of that run, the package beside it,
    named by its languages; the weights' type in the card; int8 only where CTranslate2's."""
    checkpoint = trained_joint_numbers_checkpoint[0]
    monkeypatch.chdir(tmp_path)
    parts = (checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab, {"step": 1})
    save_checkpoint(Path("runs/mine/best.pt"), checkpoint.config, *parts)
    config = str(ROOT / "config.yaml")
    export.main(["argos", "--config", config, "experiment=mine", "--quantization", "int8"])
    package = Path("runs/mine/en_digits.int8.argosmodel")  # not the float32 one's name
    assert f"exported runs/mine/best.pt to {package}" in capsys.readouterr().out
    with zipfile.ZipFile(package) as archive:
        card = archive.read("translate-en_digits-1_0/README.md").decode()
    assert "its CTranslate2 weights int8" in card
    written = package.stat().st_mtime_ns
    export.main(["argos", "--config", config, "experiment=mine", "--quantization", "int8"])
    assert capsys.readouterr().out == (
        f"{package} is up to date (made from runs/mine/best.pt, with the same card)\n"
    )
    assert package.stat().st_mtime_ns == written
    export.main(["argos", "--config", config, "experiment=mine"])  # auto, nothing to measure on
    assert capsys.readouterr().out.endswith(
        "(an Argos Translate package, float32: auto: no "
        "validation split in data/numbers/ to measure on)\n"
    )
    assert zipfile.is_zipfile("runs/mine/en_digits.argosmodel")  # float32: its own file
    with pytest.raises(SystemExit):
        export.main(["huggingface", "--checkpoint", "runs/mine/best.pt", "--quantization", "int8"])
    assert "the huggingface export is float32" in capsys.readouterr().err


@pytest.mark.slow
def test_what_a_killed_export_left_is_removed_by_the_next_export(
    trained_joint_numbers_checkpoint, tmp_path
):
    """kill -9 while the package is being written leaves its staging folder beside it; the
    next export of the same package removes it."""
    checkpoint = trained_joint_numbers_checkpoint[0]
    parts = (checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab, {"step": 1})
    save_checkpoint(tmp_path / "best.pt", checkpoint.config, *parts)
    package = tmp_path / "mine.argosmodel"
    process = subprocess.Popen(
        command("seq2seq.export", "argos", "--checkpoint", str(tmp_path / "best.pt"), str(package)),
        env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip

    def left() -> list[str]:
        return [p.name for p in tmp_path.iterdir() if p.name.startswith(".mine.argosmodel.")]

    wait_until(lambda: left(), "the export's staging folder", process)
    process.kill()
    process.wait()
    assert left() and not package.exists()
    export_argos(checkpoint, package)
    assert left() == [] and zipfile.is_zipfile(package)


# Our Argos engine (seq2seq/decoding/argos_engine.py): a package served by seq2seq.serve


def published_layout(package: Path, out: Path) -> Path:
    """The package laid out as Argos's published packages are (its documented layout): its
    own folder name, a Stanza sentence splitter in stanza/, a LICENSE and more metadata, no
    checkpoint.sha256 (ours alone writes one). Returns the new .argosmodel."""
    staging = out.with_suffix(".d")
    with zipfile.ZipFile(package) as archive:
        archive.extractall(staging)
    (folder,) = staging.iterdir()
    folder = folder.rename(staging / "en_digits")
    (folder / "checkpoint.sha256").unlink()
    (folder / "stanza/en/tokenize").mkdir(parents=True)
    (folder / "stanza/en/tokenize/combined.pt").write_bytes(b"not read")
    (folder / "stanza/resources.json").write_text("{}")
    (folder / "LICENSE").write_text("CC0\n")
    metadata = json.loads((folder / "metadata.json").read_text())
    metadata |= {"type": "translate", "links": [], "languages": [], "dependencies": []}
    (folder / "metadata.json").write_text(json.dumps(metadata))
    with zipfile.ZipFile(out, "w") as archive:
        for path in sorted(folder.rglob("*")):
            archive.write(path, path.relative_to(staging))
    return out


def one_at_a_time(engine: ArgosEngine, sentences: list[str], beam: int) -> list[str]:
    """As Argos Translate calls its model: one sentence a call."""
    decoding = dataclasses.replace(engine.config.decode, beam_size=beam)
    return [engine.translate([sentence], decoding).outputs[0] for sentence in sentences]


@pytest.mark.same_outputs
@pytest.mark.slow
def test_our_argos_engine_gives_argos_translates_outputs(argos):
    """The package loaded by our engine: Argos Translate's outputs at beam 1 and at its
    default, beam 4, every one (the same calls on one thread: the same bits)."""
    package, sentences, results = argos
    engine = ArgosEngine.load(package, compute_type="float32")
    assert engine.languages == (Language("en", "English"), Language("digits", "Digits"))
    for beam in (1, 4):
        assert one_at_a_time(engine, sentences, beam) == results[str(beam)], beam


@pytest.mark.same_outputs
@pytest.mark.slow
def test_a_package_laid_out_as_argos_publishes_them_loads_and_translates_as_argos(argos, tmp_path):
    """Published packages hold more than ours (a Stanza model, a licence, more metadata) under
    a folder of their own name: installed by Argos Translate and loaded by our engine, from
    the file or from the folder as Argos installs it, they translate alike."""
    package, sentences, _ = argos
    published = published_layout(package, tmp_path / "en_digits.argosmodel")
    sentences = sentences[:200]
    theirs = run_argos(published, ("en", "digits"), sentences, tmp_path / "home", (4,), 1)["4"]
    installed = tmp_path / "home/data/argos-translate/packages"
    assert [p.name for p in package_folders(installed)] == ["en_digits"]
    for source in (published, installed / "en_digits"):
        engine = ArgosEngine.load(source, compute_type="float32")
        assert one_at_a_time(engine, sentences, 4) == theirs, source


def test_what_is_not_an_argos_package_is_one_line(tmp_path, argos):
    (tmp_path / "not.argosmodel").write_text("text")
    with pytest.raises(UserError, match=r"not.argosmodel: not an Argos package"):
        ArgosEngine.load(tmp_path / "not.argosmodel")
    folder = tmp_path / "bpe"
    with zipfile.ZipFile(argos[0]) as archive:
        archive.extractall(folder)
    (package,) = folder.iterdir()
    (package / "sentencepiece.model").rename(package / "bpe.model")
    with pytest.raises(UserError, match=r"bpe.model: not a BPE codes file"):
        ArgosEngine.load(package)
    (package / "bpe.model").unlink()
    with pytest.raises(UserError, match=r"no sentencepiece.model nor bpe.model"):
        ArgosEngine.load(package)
    (package / "metadata.json").write_text('{"from_code": "en"}')
    with pytest.raises(UserError, match=r"metadata.json: no to_code"):
        ArgosEngine.load(package)


@pytest.mark.same_outputs
@pytest.mark.slow
def test_a_package_imported_and_packaged_again_translates_as_the_original(argos, tmp_path):
    """Back to LibreTranslate: a package imported (python -m seq2seq.import_model) and
    exported again is a newer version of the same pair, its README naming where it came from,
    and Argos Translate's outputs on it are those of the original, at beams 1 and 4."""
    pytest.importorskip("google.protobuf", reason="the import rewrites a sentencepiece model")
    from seq2seq.exports.importing import import_model

    package, sentences, results = argos
    imported = import_model(package).checkpoint
    assert imported.info["origin"] == {"name": package.name, "quantization": "float32",
                                       "package_version": "1.0"}  # fmt: skip
    again = tmp_path / "again.argosmodel"
    export_argos(imported, again)
    with zipfile.ZipFile(again) as archive:
        [metadata] = [n for n in archive.namelist() if n.endswith("/metadata.json")]
        about = json.loads(archive.read(metadata))
        readme = archive.read(metadata.replace("metadata.json", "README.md")).decode()
    assert metadata.startswith("translate-en_digits-1_0_1/")
    assert (about["package_version"], about["from_code"], about["to_code"]) == (
        "1.0.1", "en", "digits")  # fmt: skip
    assert f"Imported by seq2seq from {package.name} (version 1.0)." in readme
    theirs = run_argos(again, ("en", "digits"), sentences, tmp_path / "home", (1, 4), 1)
    assert theirs["1"] == results["1"] and theirs["4"] == results["4"]
