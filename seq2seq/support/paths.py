"""Where the pipeline keeps its files: every name under data/ and runs/ is defined here, once.

data/<corpus.name>/                  `make data` (Config.data_dir)
    {train,valid,test}.{src,tgt}     the corpus as text, one sentence a line
    report.json                      pairs read, removed by each filter, kept (corpora/cleaning.py)
    src.model  tgt.model             sentencepiece vocabularies (seq2seq/tokens/vocab.py)
    vocab.json                       what they were trained on, and with which settings
    {split}.{side}.ids  .idx         token ids and their offsets (seq2seq/tokens/dataset.py)
    ids.json                         what the ids were encoded from
    raw/                             downloaded files (corpus.type: multi30k, sources)
        manifest.json                each one's URL, size and SHA-256 (corpora/download.py)
runs/<experiment>/                   `make train`, `make eval`, seq2seq.plot (Config.run_dir)
    best.pt  last.pt  metrics.jsonl  best checkpoint, where training stands, its log
    step-<N>.pt                      the last validations' checkpoints, to average
                                     (train.average_last; seq2seq/training/averaging.py)
    test.hyp  test.beam.hyp          translations of the test split (greedy, beam search)
    eval.json                        their scores
    attention.png  curves.png        pictures
    versions/                        `python -m seq2seq.improve`: the model made better on its
        <NNNN>/best.pt version.json  service's corrections, each try numbered from 0001, served
        current                      or kept aside; `current` names the one served (one line:
                                     its folder's name); none: the experiment's own best.pt
        <NNNN>/config.yaml           the try's fine-tuning config (base: the experiment's) and
        <NNNN>/*.<lang>              what it read: corrections, held_out, replay, valid, test
        improving.lock  improve.log  held by the try under way; the service's tries' output
runs/<experiment>.improve/           the try under way's run (data/<experiment>.improve/ its
                                     corpus), removed once its best.pt is in its version
an exported folder (seq2seq/exports/ctranslate2.py, huggingface.py)
    seq2seq.json                     the experiment config, beside the other program's files
"""

from pathlib import Path

SIDES = ("src", "tgt")  # the source and the target language

VOCAB_STAMP = "vocab.json"
IDS_STAMP = "ids.json"
RAW = "raw"
REPORT = "report.json"

BEST = "best.pt"
LAST = "last.pt"
METRICS = "metrics.jsonl"
HYPOTHESES = "test.hyp"
BEAM_HYPOTHESES = "test.beam.hyp"
CONFIDENCES = ".confidence"  # test.hyp.confidence: each test sentence's (decoding/confidence.py)
EVAL = "eval.json"

VERSIONS = "versions"
VERSION_ABOUT = "version.json"  # what a version was trained on, its scores, its verdict
VERSION_CONFIG = "config.yaml"  # a version's fine-tuning config
CURRENT = "current"
IMPROVING = "improving.lock"  # held (flock) by the improvement under way
IMPROVE_LOG = "improve.log"  # the output of the improvements the service starts
STARTED_BY = "SEQ2SEQ_STARTED_BY"  # their environment's: the service's process (its pid)
IMPROVE_RUN = ".improve"  # runs/<experiment>.improve/, data/<experiment>.improve/: a try's own

EXPORT_CONFIG = "seq2seq.json"
CONFIDENCE = "confidence.json"  # an export's confidence calibration (decoding/confidence.py)
EXPORT_SOURCE = "checkpoint.sha256"  # the checksum of the checkpoint an export was made from
EXPORT_COMPUTE_TYPE = "compute_type.json"  # decode.compute_type auto's measures (compute_types.py)
EXPORT_THREADS = "threads.json"  # serve.threads 0's measures (decoding/threads.py)


def text_files(data_dir: Path, split: str) -> tuple[Path, Path]:
    """The split's source and target text."""
    return data_dir / f"{split}.src", data_dir / f"{split}.tgt"


def vocab_files(data_dir: Path) -> list[Path]:
    """The source and target sentencepiece models."""
    return [data_dir / f"{side}.model" for side in SIDES]


def id_files(data_dir: Path, split: str, side: str) -> tuple[Path, Path]:
    """A split's token ids of one side, and their offsets."""
    return data_dir / f"{split}.{side}.ids", data_dir / f"{split}.{side}.idx"


def kept_checkpoint(run_dir: Path, step: int) -> Path:
    """The checkpoint of step `step`'s validation, kept to be averaged."""
    return run_dir / f"step-{step}.pt"


def kept_checkpoints(run_dir: Path) -> dict[int, Path]:
    """The kept checkpoints in run_dir, by step, oldest first."""
    found = {}
    for path in run_dir.glob("step-*.pt"):
        step = path.stem.removeprefix("step-")
        if step.isdigit():
            found[int(step)] = path
    return dict(sorted(found.items()))


def picture(run_dir: Path, what: str) -> Path:
    """attention.png or curves.png."""
    return run_dir / f"{what}.png"


def served_version(run_dir: Path) -> str | None:
    """The name of the version `versions/current` names; None: none, the experiment's own
    best.pt is served."""
    current = run_dir / VERSIONS / CURRENT
    if current.is_file() and (name := current.read_text().strip()):
        return name
    return None


def version_checkpoint(run_dir: Path, version: str | None) -> Path:
    """The checkpoint of a version of the experiment (None: the experiment's own best.pt)."""
    return run_dir / VERSIONS / version / BEST if version else run_dir / BEST


def served_checkpoint(run_dir: Path) -> Path:
    """The checkpoint a service serves for an experiment: the version `versions/current`
    names, else the experiment's own best.pt."""
    return version_checkpoint(run_dir, served_version(run_dir))


def version_folder(run_dir: Path, number: int) -> Path:
    """runs/<experiment>/versions/<NNNN>/: the version numbered `number`."""
    return run_dir / VERSIONS / f"{number:04d}"


def experiment_of(checkpoint: Path) -> Path | None:
    """The experiment (its run folder) whose own best.pt `checkpoint` is; None for any other
    checkpoint (a step's, a version's, one copied elsewhere under another name)."""
    if checkpoint.name == BEST and checkpoint.parent.parent.name != VERSIONS:
        return checkpoint.parent
    return None
