"""How `make bench-peers` measures every toolkit alike (benchmarks/README.md): validations read
from a file as it grows, the score of a decoding (exact match, or BLEU on a real corpus), and
the figures of a training run and of a decoding (its command run by benchmarks.common.run)."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import run
from seq2seq.config import Config
from seq2seq.support.errors import UserError
from seq2seq.training.metrics import exact_match, sacrebleu_scores

# valid scores to time, by metric: seconds_to_99, seconds_to_99_5 (exact match); none for BLEU,
# whose figure is the time to the best validation of the budget (seconds_to_best)
TARGETS = {"exact_match": {"99": 0.99, "99_5": 0.995}, "bleu": {}}
BATCH_SIZES = (64, 1)  # decoding
SIZES = ("parameters", "src_vocab_size", "tgt_vocab_size")  # of a model, beside its decoding


def appearing(folder: Path, pattern: str, step_of: Callable[[Path], int]):
    """A training's on_poll (common.run's) that notes when each file `pattern` in `folder`
    first appears, and what it notes: {step_of(file): wall seconds}, filled as the run goes."""
    appeared: dict[int, float] = {}

    def poll(elapsed: float) -> None:
        for path in folder.glob(pattern) if folder.is_dir() else ():
            appeared.setdefault(step_of(path), elapsed)

    return poll, appeared


def new_lines(path: Path, seen: int) -> list[str]:
    """The complete lines of a growing file after its first `seen` lines."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return []
    return text[: text.rfind("\n") + 1].splitlines()[seen:]


# ---------------------------------------------------------------- scores


def metric_of(config: Config) -> str:
    """What the peers are scored by: BLEU where the config picks its best checkpoint by BLEU
    (a real corpus), else exact match (the numbers corpus)."""
    return "bleu" if config.train.best_metric == "bleu" else "exact_match"


def score(hypotheses: list[str], references: list[str], metric: str) -> float:
    """Exact match (a fraction) or sacreBLEU's BLEU (cased, 13a) of detokenized outputs."""
    if metric == "bleu":
        return sacrebleu_scores(hypotheses, references)["bleu"]
    return exact_match(hypotheses, references)


# ---------------------------------------------------------------- training figures


def seconds_to(curve: list[dict], target: float, metric: str, clock: str = "wall_s"):
    """Seconds (by `clock`) of the first validation whose score reaches `target`, or None."""
    return next((v[clock] for v in curve if v[f"valid_{metric}"] >= target), None)


def curve_figures(curve: list[dict], wall: float, peak: float, metric: str) -> dict:
    """Figures of a training run from its validations (each with wall_s, step, valid_<metric>)."""
    key = f"valid_{metric}"
    best = max(curve, key=lambda v: v[key], default=None)
    last = curve[-1] if curve else None
    targets = TARGETS[metric].items()
    return {
        **{f"seconds_to_{name}": seconds_to(curve, t, metric) for name, t in targets},
        "seconds_to_best": best and best["wall_s"],
        f"best_{key}": best and best[key],
        "best_step": best and best["step"],
        "validated_steps": last and last["step"],
        "validated_steps_per_s": last and last["step"] / last["wall_s"],
        "train_run_seconds": wall,
        "train_peak_memory_mib": peak,
    }


# ---------------------------------------------------------------- decoding figures


@dataclass
class Scoring:
    """How one toolkit's translations of a split are scored: of `source` (the inputs as the
    toolkit reads them: our text, or a peer's pieces), against `refs`, by `metric`, after `text`
    makes them text (a peer's pieces: pieces.detokenizer; None: text already)."""

    source: Path
    refs: list[str]
    metric: str
    text: Callable[[list[str]], list[str]] | None = None

    def score(self, hyps: list[str]) -> float:
        return score(self.text(hyps) if self.text else hyps, self.refs, self.metric)

    def command_figures(self, command: list[str], stem: Path, env: dict | None = None) -> dict:
        """A translation command reading the source on stdin and writing its translations to
        stdout, or to the file its argument "{output}" stands for: wall time, peak RSS, score."""
        log, out, output = (stem.with_suffix(suffix) for suffix in (".log", ".out", ".hyps"))
        translations = output if "{output}" in command else out
        command = [str(output) if arg == "{output}" else arg for arg in command]
        ran = run(command, stdin=self.source, out=out, log=log, env=env)
        hyps = translations.read_text("utf-8").splitlines()
        if len(hyps) != len(self.refs):
            raise UserError(f"{out}: {len(hyps)} lines for {len(self.refs)} inputs (see {log})")
        return {
            "command_sentences_per_s": len(hyps) / ran.seconds,
            "command_seconds": ran.seconds,
            "command_peak_memory_mib": ran.peak_mib,
            f"command_{self.metric}": self.score(hyps),
        }

    def inprocess_figures(self, seconds: float, hyps: list[str]) -> dict:
        """The toolkit's own decoding of the split, timed in process."""
        return {
            "decode_sentences_per_s": len(hyps) / seconds,
            "decode_seconds": seconds,
            f"decode_{self.metric}": self.score(hyps),
        }

    def decoding(self, command: Callable[[int], list[str]], stem: Path, timed: Callable[[], dict],
                 env: dict | None = None) -> dict:  # fmt: skip
        """A toolkit's decoding figures: its translation command at each batch size
        (command(size), its files <stem>-batch<size>.*), then timed(), its decoding timed in
        process -> {"<size>": {"seconds", "hypotheses"}, and SIZES}; flat (key_batch<size>)."""
        figures = {}
        for size in BATCH_SIZES:
            batch_stem = stem.with_name(f"{stem.name}-batch{size}")
            figures[size] = self.command_figures(command(size), batch_stem, env)
        decoded = timed()
        for size in BATCH_SIZES:
            seconds, hyps = decoded[str(size)]["seconds"], decoded[str(size)]["hypotheses"]
            figures[size].update(self.inprocess_figures(seconds, hyps))
        flat = {
            f"{key}_batch{size}": value for size, f in figures.items() for key, value in f.items()
        }
        return {**flat, **{key: decoded[key] for key in SIZES}}
