"""What laptop.py and target.py share: a work folder where a package is imported and a corpus
encoded with its pieces, and fine-tuning runs on top of it, each in a process of its own run
in that folder (common.run's cwd: data/, runs/ and the configs are there).

    fresh(work); prepare(work, package, config)   `work` emptied; the package imported to
                                     imported/best.pt, the corpus of `config` encoded (data/)
    fine_tuning(corpus, train)       a config on top of the imported package's
    train(work, name, config)        one setting trained -> Trained: runs/<name>/, the
                                     process's wall seconds and peak RSS, metrics.jsonl's records
    the_start(results)               a table's first note: the package the fine-tunes start from
    chrf_bleu(row, *tests)           a table's cells: each test set's "chrF / BLEU" of a row
"""

import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from benchmarks.common import ROOT, Ran, run
from seq2seq.support.files import read_log
from seq2seq.support.paths import METRICS

MULTI30K = ROOT.parent / "shared/corpora/multi30k"  # the adapt scripts' default Multi30k
IMPORTED = "imported/best.pt"  # in the work folder; its config.yaml beside it


@dataclass(frozen=True)
class Trained:
    folder: Path  # runs/<experiment>/: best.pt, metrics.jsonl
    ran: Ran  # the training process: wall seconds, peak resident memory
    metrics: list[dict]  # metrics.jsonl's records


def fresh(work: Path) -> Path:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return work


def prepare(work: Path, package: Path, config: dict) -> Path:
    """The package (an Argos package or its folder) imported to IMPORTED, and the corpus of
    `config` (fine_tuning's) encoded with its pieces: `config`'s file, data.yaml."""
    python(work, "seq2seq.import_model", str(package), IMPORTED)
    path = write_config(work, "data", config)
    python(work, "seq2seq.data", "--config", str(path))
    return path


def fine_tuning(corpus: dict, train: dict) -> dict:
    """A config on top of the imported package's: `corpus`, and `train` from its weights
    (`train` may set init_from None: random weights)."""
    return {"base": "imported/config.yaml", "corpus": corpus,
            "train": {"init_from": IMPORTED, **train}}  # fmt: skip


def write_config(work: Path, name: str, config: dict) -> Path:
    """`config` as <name>.yaml in `work` (the name made a file name), experiment that stem."""
    path = work / f"{re.sub(r'[^a-z0-9]+', '_', name).strip('_')}.yaml"
    path.write_text(yaml.safe_dump({**config, "experiment": path.stem}, sort_keys=False), "utf-8")
    return path


def train(work: Path, name: str, config: dict) -> Trained:
    """The setting `name` trained with `config` (fine_tuning's) in a process of its own, from
    an empty runs/<name>/."""
    path = write_config(work, name, config)
    folder = work / "runs" / path.stem
    shutil.rmtree(folder, ignore_errors=True)
    ran = python(work, "seq2seq.train", "--config", str(path))
    return Trained(folder, ran, read_log(folder / METRICS))


def python(work: Path, module: str, *args: str) -> Ran:
    return run([sys.executable, "-m", module, *args], cwd=work)


def the_start(results: dict) -> str:
    """A results table's first note: the package every fine-tune starts from, and its size."""
    return f"The start: {results['package']} ({results['start']})."


def chrf_bleu(row: dict, *tests: str) -> list[str]:
    """A results row's "chrF / BLEU" on each of `tests` (its chrf_<test> and bleu_<test>)."""
    return [f"{row[f'chrf_{test}']} / {row[f'bleu_{test}']}" for test in tests]
