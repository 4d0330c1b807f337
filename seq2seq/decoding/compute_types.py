"""The type CTranslate2 decodes a model's weights in (its compute type): decode.compute_type, or
--compute-type in its place (engine_choice.py).

    float32, int8, int8_float32, ...   that type, as CTranslate2 names them
    default                            the model's own, as saved (float32 for our exports, int8
                                       for the published Argos packages)
    auto (the default)
      a checkpoint decoded from its export beside it (exported.py):
        its first MEASURED validation sentences (data/<corpus>/valid.src, .tgt), translated
        greedily, BATCH a call, in each type CTranslate2 supports on the device, each timed
        and scored (sacreBLEU)
        -> the fastest type whose BLEU is at most decode.compute_type_bleu_loss below
           float32's (`chosen`; float32 itself at worst)
        kept in the export (runs/<experiment>/best.ct2/compute_type.json: the figures, the
        choice, the machine and the checkpoint's checksum), so measured once per checkpoint
        and machine: a new checkpoint gets a new export, measured again
      no validation split to read (a checkpoint moved from where it was trained, a package
      imported): int8 if the package it came from was (checkpoint info's origin), else as
      default
      an export or an Argos package given with --model: as default
    the weights an export saves (`weights_type`: export ctranslate2 and argos, --quantization
    auto, the default): the same measures on this CPU -> int8 where int8's BLEU is within
    decode.compute_type_bleu_loss of float32's, else float32

The type in force, and why, is in the engine's facts: translate's first line, /info.
"""

import itertools
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import torch
from sacrebleu.metrics import BLEU

from seq2seq.config import Config, DecodeConfig
from seq2seq.decoding.ctranslate2_engine import CTranslate2Engine, ctranslate2_device
from seq2seq.decoding.exported import made_from
from seq2seq.exports.ctranslate2 import import_ctranslate2
from seq2seq.support.device import cpu_name
from seq2seq.support.errors import say, warn
from seq2seq.support.files import write_json
from seq2seq.support.paths import EXPORT_COMPUTE_TYPE, text_files
from seq2seq.text.parallel import iter_parallel

MEASURED = 200  # validation sentences each type translates
BATCH = 16  # of them a call: a service's batch, not one of decode.batch_size
WARM_UP = 8  # sentences translated once, untimed, before the timed ones


class ComputeType(NamedTuple):
    """The type CTranslate2 decodes a model in, and why that one (the facts say both)."""

    name: str  # CTranslate2's: float32, int8, ...; default: the model's own, as saved
    why: str


class Figures(NamedTuple):
    """One type's measure: sacreBLEU's BLEU of its translations and their speed."""

    bleu: float
    sentences_per_second: float


AS_SET = "as set"  # an explicit decode.compute_type, or --compute-type
GIVEN = "auto: a model given with --model keeps its own, as saved"


def given_type(compute_type: str) -> ComputeType:
    """The compute type of a model given with --model (an export, an Argos package), whose
    decode.compute_type in force is `compute_type`."""
    if compute_type == "auto":
        return ComputeType("default", GIVEN)
    return ComputeType(compute_type, AS_SET)


def checkpoint_type(
    folder: Path, config: Config, decoding: DecodeConfig, device: str, origin: dict
) -> ComputeType:
    """The compute type of a checkpoint's export in `folder` (its config `config`, decoding
    with `decoding`, on `device`; `origin`: what its info says it came from): the one
    decode.compute_type names, or auto's choice, measured the first time and kept in the
    export."""
    if decoding.compute_type != "auto":
        return ComputeType(decoding.compute_type, AS_SET)
    bound = decoding.compute_type_bleu_loss
    found = measures(folder, config, device, bound)
    if found is None and origin.get("quantization") == "int8":
        return ComputeType("int8", f"auto: {no_validation(config)}; int8 as its package was")
    if found is None:
        return ComputeType("default", f"auto: {no_validation(config)}, as saved")
    within = f"within {bound} BLEU of float32 on {found.sentences} validation sentences"
    return ComputeType(chosen(found.figures, bound), f"auto: the fastest {within}, {found.path}")


def weights_type(folder: Path, config: Config) -> ComputeType:
    """auto for the weights an export saves (export ctranslate2, export argos: the packages
    LibreTranslate runs on CPUs): int8 where the measures on this CPU of the checkpoint's
    export in `folder` put it within config.decode.compute_type_bleu_loss BLEU of float32,
    else float32."""
    bound = config.decode.compute_type_bleu_loss
    found = measures(folder, config, "cpu", bound)
    if found is None or "int8" not in found.figures:
        return ComputeType("float32", f"auto: {no_validation(config)}")
    loss = round(found.figures["float32"].bleu - found.figures["int8"].bleu, 2)
    kind = "int8" if loss <= bound else "float32"
    why = f"auto: int8 loses {loss} BLEU on {found.sentences} validation sentences, {bound} allowed"
    return ComputeType(kind, f"{why}, {found.path}")


class Measures(NamedTuple):
    """auto's measures of an export: each type's figures, on how many sentences, kept where."""

    figures: dict[str, Figures]
    sentences: int
    path: Path


def measures(folder: Path, config: Config, device: str, bound: float) -> Measures | None:
    """Every type CTranslate2 supports on `device`, measured on the export in `folder` (the
    figures kept there if they were measured for this checkpoint on this machine; else
    measured now and kept, with the choice at `bound`); None: no validation split to read."""
    pairs = validation(config)
    if not pairs:
        return None
    path = folder / EXPORT_COMPUTE_TYPE
    ct2 = import_ctranslate2()
    where, index = ctranslate2_device(device, ct2.get_cuda_device_count())
    here = {"checkpoint_sha256": made_from(folder), "machine": machine(where, index)}
    figures = kept(path, here)
    if figures is None:
        say(f"measuring CTranslate2's compute types (once): {path}")
        types = sorted(ct2.get_supported_compute_types(where))
        figures = measured(folder, config, device, pairs, types)
        keep(path, here, len(pairs), figures, bound)
    return Measures(figures, len(pairs), path)


def no_validation(config: Config) -> str:
    """Why auto measured nothing."""
    return f"no validation split in {config.data_dir}/ to measure on"


def chosen(figures: dict[str, Figures], bleu_loss: float) -> str:
    """The fastest type of `figures` whose BLEU is at most `bleu_loss` below float32's (BLEU
    compared to two decimals, as sacreBLEU prints it)."""
    reference = figures["float32"].bleu
    near = [kind for kind, f in figures.items() if round(reference - f.bleu, 2) <= bleu_loss]
    return max(near, key=lambda kind: figures[kind].sentences_per_second)


def validation(config: Config) -> list[tuple[str, str]]:
    """The first MEASURED pairs of the validation split of `config`'s corpus (none if it is
    not there)."""
    src, tgt = text_files(config.data_dir, "valid")
    if not (src.is_file() and tgt.is_file()):
        return []
    return list(itertools.islice(iter_parallel(src, tgt), MEASURED))


def machine(where: str, index: int) -> str:
    """The device CTranslate2 decodes on, by name: its measures hold there alone."""
    return torch.cuda.get_device_name(index) if where == "cuda" else cpu_name()


def measured(
    folder: Path, config: Config, device: str, pairs: list[tuple[str, str]], types: list[str]
) -> dict[str, Figures]:
    """Each of `types` on `device`: the BLEU and speed of the export in `folder` translating
    the sources of `pairs` greedily, BATCH a call."""
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    greedy = replace(config.decode, beam_size=1, batch_size=BATCH)
    figures = {}
    for kind in types:
        engine = CTranslate2Engine.load(folder, device, kind)
        engine.translate(sources[:WARM_UP], greedy)
        start = time.perf_counter()
        outputs = engine.translate(sources, greedy).outputs
        speed = len(sources) / (time.perf_counter() - start)
        bleu = BLEU().corpus_score(outputs, [references]).score
        figures[kind] = Figures(round(bleu, 2), round(speed, 1))
    return figures


def kept(path: Path, here: dict) -> dict[str, Figures] | None:
    """The figures kept at `path`, if they were measured `here` (this checkpoint, this
    machine)."""
    figures = kept_record(path, here)
    try:
        return None if figures is None else {k: Figures(**f) for k, f in figures.items()}
    except TypeError:
        return None


def kept_record(path: Path, here: dict) -> dict | None:
    """The figures of the measures kept at `path` (compute_type.json, threads.json), if they
    were measured `here` (this checkpoint, this machine...)."""
    try:
        record = json.loads(path.read_text("utf-8"))
        if {key: record[key] for key in here} == here:
            return dict(record["figures"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def keep(path: Path, here: dict, sentences: int, figures: dict[str, Figures], bound: float):
    """The figures written at `path`, with what they hold for and the choice at `bound`."""
    keep_record(path, {
        **here, "sentences": sentences, "decoding": f"greedy, {BATCH} sentences a call",
        "figures": {kind: f._asdict() for kind, f in figures.items()},
        "compute_type_bleu_loss": bound, "chosen": chosen(figures, bound),
    })  # fmt: skip


def keep_record(path: Path, record: dict) -> None:
    """A record of measures written at `path`; a warning if it cannot be (measured again next
    time)."""
    try:
        write_json(path, record)
    except OSError as error:
        warn(f"cannot keep the measures in {path} ({error}): measured again next time")
