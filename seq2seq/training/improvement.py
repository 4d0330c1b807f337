"""An improvement's data and config (python -m seq2seq.improve): the pair's corrections, a
held-out share of them for the gate (gate.py), the rest mixed with a replay of the original
training pairs, written as files into the version's folder, and the fine-tuning config that
reads them, `base:` the experiment's own, so that `make data` and `make train` do the rest.

    read_suggestions(FILE, the model's pair)   (q, s) pairs, oldest first
      -> those make data would keep (no control character, no empty side)
      -> split by keyed_hash(normalised q) % HOLD_OUT: 1 in 5 held out, a text always on the
         same side (none held out from fewer than HOLD_OUT texts)
    runs/<experiment>/versions/<NNNN>/  (support/paths.py)
      corrections.<src>, .<tgt>   the training share, each copied (weight) so that they are
                                  SHARE of what the run reads, the replay the rest
      replay.<src>, .<tgt>        REPLAY pairs of data/<corpus>/train.*    } a seeded sample
      valid.<src>, .<tgt>         VALID pairs of data/<corpus>/valid.*     } (cleaning.sample)
      test.<src>, .<tgt>          GATE_TEST pairs of data/<corpus>/test.*  } the gate's
      held_out.<src>, .<tgt>      the held-out share                         the gate's
      config.yaml                 experiment and corpus.name <experiment>.improve (a run and
                                  corpus of their own), those files as its sources, train:
                                  init_from the experiment's best.pt, the import's fine-tuning
                                  schedule (exports/importing.py) at a fifth of its learning
                                  rate (SCHEDULE), max_minutes, one validation
                                  at the end (its model is best.pt)
"""

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from seq2seq.config import Config, translation_pair
from seq2seq.corpora.cleaning import CONTROL, sample
from seq2seq.exports.importing import FINE_TUNING
from seq2seq.localization.suggestions import normalised, read_suggestions
from seq2seq.support.database import shown
from seq2seq.support.errors import UserError
from seq2seq.support.files import atomic_write, write_lines
from seq2seq.support.paths import BEST, IMPROVE_RUN, VERSION_CONFIG, text_files
from seq2seq.text.parallel import iter_parallel, keyed_hash

HOLD_OUT = 5  # one text in this many is held out for the gate
REPLAY = 5000  # original training pairs replayed, at most
SHARE = 0.5  # of what the run reads, the corrections (their copies): the replay the rest
SCHEDULE = {**FINE_TUNING, "lr": 1e-4, "min_lr": 1e-5}  # the import's, lower: less forgotten
VALID = 100  # original validation pairs: the run's one validation
GATE_TEST = 500  # original test pairs the gate scores on, at most
STEPS = 100_000  # train.max_steps: out of reach, the budget (max_minutes) ends the run

Pair = tuple[str, str]


@dataclass
class Corrections:
    """A pair's corrections as an improvement uses them: `train` and `held_out`, and what
    they came from (`read`: all of the file's for the pair; `sha256`: of them, in order)."""

    train: list[Pair]
    held_out: list[Pair]
    read: int
    sha256: str


def corrections(path: str | Path, config: Config) -> Corrections:
    """The file's corrections for the config's pair, split: a held-out share for the gate
    (none from fewer than HOLD_OUT different texts), the rest to train on."""
    pair = [language.code for language in translation_pair(config, config.serve)]
    read = read_suggestions(path, *pair)
    usable = [(q, s) for q, s in read if kept_by_data(q, s)]
    some = len({normalised(q) for q, _ in usable}) >= HOLD_OUT
    sides = [some and held_out(q, config.corpus.seed) for q, _ in usable]
    held = [p for p, out in zip(usable, sides, strict=True) if out]
    train = [p for p, out in zip(usable, sides, strict=True) if not out]
    if not train:
        raise UserError(
            f"{shown(str(path))}: no corrections from {pair[0]} to {pair[1]} to learn from "
            f"({len(read)} for the pair, {len(held)} of them held out for the gate)"
        )
    digest = hashlib.sha256("\n".join(f"{q}\t{s}" for q, s in read).encode()).hexdigest()
    return Corrections(train, held, len(read), digest)


def kept_by_data(q: str, s: str) -> bool:
    """Whether `make data` keeps the pair (a control character, a line break among them,
    would also break the line files it goes through)."""
    return bool(q.strip() and s.strip()) and not (CONTROL.search(q) or CONTROL.search(s))


def held_out(text: str, seed: int) -> bool:
    """Whether a text is in the held-out share: by a hash of its normalised form."""
    return keyed_hash(normalised(text), seed) % HOLD_OUT == 0


def gathered(config: Config, found: Corrections) -> dict[str, list[Pair]]:
    """What the version's run reads and its gate scores on, by the name of its files."""
    return {
        "corrections": found.train,
        "held_out": found.held_out,
        "replay": original(config, "train", REPLAY),
        "valid": original(config, "valid", VALID),
        "test": original(config, "test", GATE_TEST),
    }


def write_data(config: Config, taken: dict[str, list[Pair]], folder: Path) -> None:
    """gathered's pairs, as a Moses pair of files each, in `folder`."""
    for name, pairs in taken.items():
        for side, path in zip((0, 1), pair_files(config, folder, name), strict=True):
            write_lines(path, [pair[side] for pair in pairs])


def original(config: Config, split: str, size: int) -> list[Pair]:
    """A seeded sample of `size` pairs of the experiment's own split (data/<corpus>/)."""
    files = text_files(config.data_dir, split)
    if not all(path.is_file() for path in files):
        raise UserError(
            f"{files[0]} is not found: the improvement replays and tests on the experiment's "
            f"corpus: run {config.make_command('data')} first"
        )
    return sample(iter_parallel(*files), size, config.corpus.seed)


def pair_files(config: Config, folder: Path, name: str) -> list[Path]:
    """folder/name.<src>, folder/name.<tgt>: a Moses pair, as a {file: "name.{lang}"} source
    reads it."""
    return [
        folder / f"{name}.{language.code}" for language in translation_pair(config, config.serve)
    ]


def write_config(config: Config, folder: Path, weight: int, minutes: float) -> Path:
    """The version's fine-tuning config, in `folder`: the experiment's, with the files of
    write_data as its corpus, from its best.pt, for `minutes` of training."""
    source, target = translation_pair(config, config.serve)
    name = config.experiment + IMPROVE_RUN
    files = {split: {"file": f"{split}.{{lang}}"} for split in ("valid", "test")}
    raw = {
        "base": os.path.relpath(config.file, folder),
        "experiment": name,
        "corpus": {
            "type": "sources", "name": name, "src_lang": source.code, "tgt_lang": target.code,
            "train": None, "valid": None, "test": None,
            "train_sources": [
                {"file": "corrections.{lang}", "weight": weight},
                {"file": "replay.{lang}"},
            ],
            "valid_source": files["valid"], "test_source": files["test"],
        },
        "train": {
            **SCHEDULE, "init_from": os.path.relpath(config.run_dir / BEST, folder),
            "max_minutes": minutes, "max_steps": STEPS, "eval_every": STEPS,
            "average_last": 0, "patience": 0,
        },
        "serve": {"source_language": vars(source), "target_language": vars(target)},
    }  # fmt: skip
    path = folder / VERSION_CONFIG
    with atomic_write(path) as file:
        yaml.safe_dump(raw, file, sort_keys=False, allow_unicode=True)
    return path


def weight_of(taken: dict[str, list[Pair]]) -> int:
    """Copies of each training correction: SHARE of the pairs read, in all."""
    copies = SHARE / (1 - SHARE) * len(taken["replay"]) / len(taken["corrections"])
    return max(1, round(copies))
