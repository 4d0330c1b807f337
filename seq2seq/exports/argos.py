"""Export a trained model as an Argos Translate package, the format LibreTranslate serves.

    python -m seq2seq.export argos --checkpoint runs/numbers/best.pt numbers.argosmodel

An .argosmodel file is a zip archive holding one folder (the layout: argos_package.py):

    translate-en_digits-1_0/
        metadata.json          from_code/from_name -> to_code/to_name, versions
        model/                 the CTranslate2 model (ctranslate2.py's, three changes below)
        sentencepiece.model    ONE model that splits the source and joins the output (or, for
                               a BPE package imported, bpe.model: its codes)
        README.md              the data, sizes and test scores (seq2seq/exports/model_card.py)
        checkpoint.sha256      the checksum of the checkpoint it was made from

Argos Translate reads a sentence like this (argostranslate/translate.py, version 1.11):

    text -> its sentence splitter -> sentencepiece.model: pieces (no </s>)
         -> ctranslate2.Translator(model/).translate_batch(beam_size=4, length_penalty=0.2)
         -> sentencepiece.model: text, "_" -> " "

so the package must hold what our own code adds around the model:

* One vocabulary: the model must have been trained with vocab.joint: true.
* Our source normalisation (vocab.lowercase, vocab.hyphens_as_spaces) compiled into the
  sentencepiece model's rules (vocab.self_normalizing_model).
* The </s> our batches end every source with: the CTranslate2 config's add_source_eos.
* PAD and BOS are never outputs (special.non_output_logits): Argos passes no option that
  says so, so the output projection gets a bias of -inf at those ids, 0 elsewhere.
* A position table for any input: CTranslate2 truncates sources to 1,024 pieces
  (translate_batch's max_input_length) and stops after 256 output pieces (max_decoding_length);
  past its table it fails. The sinusoidal table is extended to cover both: its first rows are
  the trained model's, so translations that fitted before are unchanged.

Argos decodes with CTranslate2's beam search, which is ours (seq2seq/decoding/beam.py), at
beam size 4 and length_penalty 0.2 (log-probability / length ** 0.2), up to 256 pieces; it
forbids an empty output (CTranslate2's default min_decoding_length, 1), where we do not. So
translate with decode.beam_size 4 and length_penalty 0.2 for its outputs: they differ only
where an output is empty or reaches our length limit (tests/exports/test_argos.py).
Argos Translate decodes with the device and compute type of its own settings
(ARGOS_DEVICE_TYPE, ARGOS_COMPUTE_TYPE; LibreTranslate's fork does not pass on its default,
"auto", so the weights are used as exported: int8 or float32, as export.py chose).
"""

import json
import tempfile
import zipfile
from pathlib import Path

import torch

from seq2seq.checkpoint import Checkpoint
from seq2seq.config import translation_pair
from seq2seq.exports.argos_package import (
    BPE,
    LONGEST_INPUT,
    LONGEST_OUTPUT,
    METADATA,
    MODEL,
    README,
    SENTENCEPIECE,
    SUFFIX,
    archive_name,
)
from seq2seq.exports.ctranslate2 import save_spec, transformer_spec
from seq2seq.exports.model_card import facts
from seq2seq.model.transformer import sinusoidal_positions
from seq2seq.support.errors import UserError
from seq2seq.support.files import atomic_write, remove_leftovers, stand_in
from seq2seq.support.paths import EXPORT_SOURCE
from seq2seq.tokens.bpe import BPEVocab
from seq2seq.tokens.special import non_output_logits
from seq2seq.tokens.vocab import self_normalizing_model

ARGOS_VERSION = "1.11"  # the Argos Translate whose package format this writes (and is tested)
PACKAGE_VERSION = "1.0"


def check_exportable(checkpoint: Checkpoint) -> None:
    if not checkpoint.one_vocabulary:
        raise UserError(
            "an Argos package holds one sentencepiece model for both languages and this model "
            "has two vocabularies: train it with vocab.joint: true"
        )
    rules = checkpoint.config.vocab
    if isinstance(checkpoint.src_vocab, BPEVocab) and (rules.lowercase or rules.hyphens_as_spaces):
        raise UserError(
            "a BPE package's tokenizer (Moses's) cannot hold vocab.lowercase or "
            "hyphens_as_spaces: fine-tune an imported BPE package without them"
        )


def tokenizer(checkpoint: Checkpoint) -> tuple[str, bytes]:
    """The package's tokenizer file, its name and bytes: sentencepiece.model with our source
    normalisation compiled in, or (a BPE package imported) bpe.model, its BPE codes."""
    vocab = checkpoint.src_vocab
    if isinstance(vocab, BPEVocab):
        return BPE, vocab.codes.encode("utf-8")
    return SENTENCEPIECE, self_normalizing_model(vocab)


def argos_spec(checkpoint: Checkpoint):
    """seq2seq/exports/ctranslate2.py's CTranslate2 spec, with the changes Argos Translate needs."""
    spec = transformer_spec(checkpoint)
    spec.config.add_source_eos = checkpoint.model.cfg.source_eos  # model.source_eos
    cfg = checkpoint.model.cfg
    rows = max(LONGEST_INPUT + 1, LONGEST_OUTPUT + 1, cfg.max_positions)
    table = sinusoidal_positions(rows, cfg.d_model, cfg.positions).numpy()  # (rows, D)
    spec.encoder.position_encodings.encodings = table
    spec.decoder.position_encodings.encodings = table
    never = non_output_logits(torch.zeros(()), len(checkpoint.tgt_vocab))  # (V,): 0 or -inf
    projection = spec.decoder.projection  # model.output_bias: its own bias, plus these
    projection.bias = never.numpy() + (projection.bias if projection.has_bias() else 0)
    return spec


def package_version(origin: dict) -> str:
    """PACKAGE_VERSION; for a model imported from a package (or fine-tuned from one), a
    version newer than that package's: 1.9 -> 1.9.1, 1.9.1 -> 1.9.2."""
    if "package_version" not in origin:
        return PACKAGE_VERSION
    parts = origin["package_version"].split(".")
    if len(parts) >= 3 and parts[-1].isdigit():
        return ".".join([*parts[:-1], str(int(parts[-1]) + 1)])
    return ".".join([*parts, "1"])


def metadata(checkpoint: Checkpoint) -> dict:
    """metadata.json: the versions, and the languages' codes and names (config.translation_pair);
    for a model taught terms (train.terms), "terms": "annotate" (Argos Translate ignores it; our
    engine follows glossaries the way the model was taught: localization/terms.py); and its
    "confidence" calibration, where it has one (decoding/confidence.py; ignored as well)."""
    source, target = translation_pair(checkpoint.config, checkpoint.config.serve)
    taught = {"terms": "annotate"} if checkpoint.config.train.terms else {}
    info = checkpoint.info
    calibrated = {"confidence": info["confidence"]} if "confidence" in info else {}
    return {
        "package_version": package_version(checkpoint.info.get("origin", {})),
        "argos_version": ARGOS_VERSION,
        "from_code": source.code,
        "from_name": source.name,
        "to_code": target.code,
        "to_name": target.name,
        **taught,
        **calibrated,
    }


def readme(
    checkpoint: Checkpoint, checkpoint_path: Path | None, about: dict, file: str,
    quantization: str,
) -> str:  # fmt: skip
    return "\n".join([
        f"# {about['from_name']} to {about['to_name']}",
        "",
        "An Argos Translate package exported by seq2seq (python -m seq2seq.export argos), "
        f"its CTranslate2 weights {quantization}.",
        "",
        facts(checkpoint, checkpoint_path),
        "",
        "## Installing",
        "",
        "```",
        f"python -c 'import argostranslate.package as p; p.install_from_path(\"{file}\")'",
        "```",
        "",
        "LibreTranslate serves the packages installed there: (re)start it, e.g.",
        f"`libretranslate --load-only {about['from_code']},{about['to_code']}`.",
        "",
        "Offline, LibreTranslate 1.9.6 needs an empty local package index",
        "(`ARGOS_PACKAGE_INDEX=file:///DIR/` with `DIR/index.json` holding `[]`), else it retries",
        "the remote one about 1,000 times at start-up; `--load-only` as above; and a sentence",
        "splitter that downloads nothing (`ARGOS_CHUNK_TYPE=SPACY` with a blank spaCy pipeline",
        "in Argos's cache), since its default, MiniSBD, fetches a model at the first",
        "translation. It decodes at beam 4 with the weights as they are in this package.",
        "",
    ])  # fmt: skip


def export_argos(
    checkpoint: Checkpoint, out_file: Path, checkpoint_path: Path | None = None,
    quantization: str = "float32",
) -> bool:  # fmt: skip
    """Write the package to out_file (.argosmodel), atomically: an earlier file there is
    replaced only by a complete one. `checkpoint_path`: for the test scores beside it;
    `quantization`: the CTranslate2 weights' type (ctranslate2.QUANTIZATIONS). Returns False,
    writing nothing, if out_file is already this package: made from the same checkpoint
    (its checksum, in the package as checkpoint.sha256) with the same card (the settings and
    scores)."""
    check_exportable(checkpoint)
    if out_file.suffix != SUFFIX:
        raise UserError(f"{out_file}: an Argos package's name ends in .argosmodel")
    about = metadata(checkpoint)
    name = archive_name(about["from_code"], about["to_code"], about["package_version"])
    card = readme(checkpoint, checkpoint_path, about, out_file.name, quantization)
    made_of = {f"{name}/{EXPORT_SOURCE}": checkpoint.sha256, f"{name}/{README}": card}
    if packaged(out_file) == made_of:
        return False
    out_file.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(out_file.parent, out_file.name)  # of an export killed before its end
    with tempfile.TemporaryDirectory(dir=out_file.parent, prefix=stand_in(out_file)) as staging:
        folder = Path(staging) / name
        folder.mkdir()
        save_spec(argos_spec(checkpoint), folder / MODEL, quantization)
        tokenizer_name, tokenizer_bytes = tokenizer(checkpoint)
        (folder / tokenizer_name).write_bytes(tokenizer_bytes)
        (folder / METADATA).write_text(json.dumps(about, indent=2) + "\n")
        (folder / README).write_text(card)
        (folder / EXPORT_SOURCE).write_text(checkpoint.sha256)
        with atomic_write(out_file, "wb") as file, zipfile.ZipFile(file, "w") as archive:
            for path in sorted(folder.rglob("*")):
                archive.write(path, path.relative_to(staging), zipfile.ZIP_DEFLATED)
    return True


def packaged(out_file: Path) -> dict[str, str]:
    """The checkpoint's checksum and the card in the package at out_file, by their names in
    it ({} if there is none, or it cannot be read)."""
    try:
        with zipfile.ZipFile(out_file) as archive:
            names = [
                n for n in archive.namelist() if n.endswith((f"/{README}", f"/{EXPORT_SOURCE}"))
            ]
            return {n: archive.read(n).decode("utf-8") for n in names}
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError):
        return {}
