"""Checkpoint averaging: the mean of the weights of the last few validations' checkpoints.
Late in a run the weights wander around a minimum; their mean often lies nearer it than any
one of them, and scores better (train.average_last).

    each validation   keep_recent: the model -> runs/<experiment>/step-<N>.pt; once it is
                      written, the oldest removed, so that the last train.average_last remain
    end of training   average_at_end: step-<N>.pt ... -> average_checkpoints (the mean of
                      each weight) -> validate, as training validates (validation.py)
                      -> best.pt if better by train.best_metric; a line in metrics.jsonl
    resuming          forget_kept_after: a step-<N>.pt from after last.pt is dropped (its
                      steps are trained again), and every one on a fresh start
    any time          python -m seq2seq.average OUT.pt IN.pt ... (seq2seq/average.py)

Each floating weight is averaged, summed in float64: exact for any handful of checkpoints,
so the mean of identical ones is that one and the mean of two the rounded midpoint; then it
is cast back to its own type. Other entries (integer buffers) come from the newest.
"""

import copy
import json
from collections.abc import Iterable
from pathlib import Path

import torch

from seq2seq.checkpoint import read_state, save_checkpoint
from seq2seq.config import Config
from seq2seq.support.errors import UserError
from seq2seq.support.files import append_line
from seq2seq.support.paths import kept_checkpoint, kept_checkpoints
from seq2seq.tokens.vocab import Vocab
from seq2seq.training.resume import model_mismatch
from seq2seq.training.run import Run
from seq2seq.training.validation import keep_lost, quality, validate

METRIC_NAMES = {"exact_match": "exact match", "bleu": "BLEU", "loss": "loss"}


def average_weights(
    weights: Iterable[dict[str, torch.Tensor]], shares: list[float] | None = None
) -> dict[str, torch.Tensor]:
    """The mean of each floating weight over the state dicts `weights` (read one at a time,
    so that only one is in memory besides the sums), or with `shares` (one each, summing to
    1) their weighted mean; the other entries of the last one."""
    sums: dict[str, torch.Tensor] = {}
    count, newest = 0, {}
    for newest in weights:
        share = 1.0 if shares is None else shares[count] * len(shares)
        count += 1
        for name, weight in newest.items():
            if weight.is_floating_point():
                total = sums.setdefault(name, torch.zeros_like(weight, dtype=torch.float64))
                total += weight.double() * share
    return {
        name: (sums[name] / count).to(weight.dtype) if name in sums else weight
        for name, weight in newest.items()
    }


def average_checkpoints(
    paths: list[Path], config: Config, vocabs: tuple[Vocab, Vocab], like: str,
    shares: list[float] | None = None,
) -> tuple[dict[str, torch.Tensor], list[int | None]]:  # fmt: skip
    """The averaged weights of the checkpoint files `paths` (oldest first; with `shares`,
    weighted: average_weights) and the step of each. Every one must hold the model of
    `config` on `vocabs`, those of `like` (a file): else an error naming the first that does
    not."""
    steps = []

    def each():
        for path in paths:
            state = read_state(path)
            check_same_model(state, path, config, vocabs, like)
            steps.append(state["info"].get("step"))
            yield state["model"]

    return average_weights(each(), shares), steps


def check_same_model(
    state: dict, path: Path, config: Config, vocabs: tuple[Vocab, Vocab], like: str
) -> None:
    """Only checkpoints of one model average: the same shape and vocabulary settings (those
    resuming needs the same, resume.py), on the same vocabularies."""
    if mismatch := model_mismatch(state, config, vocabs):
        what = (
            f"has other vocabularies than {like}"
            if len(mismatch) == 1
            else "holds another model than {} ({}: {!r}, there {!r})".format(like, *mismatch)
        )
        raise UserError(
            f"{path} {what}: only checkpoints of one model and vocabularies can be averaged"
        )


def keep_recent(run: Run, info: dict) -> None:
    """This validation's model, with `info`, to step-<N>.pt; then the oldest removed, so that
    the last train.average_last remain (rank 0; nothing when it is 0)."""
    run_dir, keep = run.config.run_dir, run.train_cfg.average_last
    if keep:
        path = kept_checkpoint(run_dir, run.progress.step)
        save_checkpoint(path, run.config, run.model, *run.vocabs, info)
        for old in list(kept_checkpoints(run_dir).values())[:-keep]:
            old.unlink()


def forget_kept_after(run_dir: Path, step: int) -> None:
    """Remove the kept checkpoints of the steps after `step`: on resuming, those saved after
    last.pt (training does them again); on a fresh start (step 0), an earlier run's."""
    for kept_step, path in kept_checkpoints(run_dir).items():
        if kept_step > step:
            path.unlink()


def average_at_end(run: Run, last: dict) -> str | None:
    """The end of training (rank 0), after the last validation, `last`: the kept checkpoints
    averaged and validated as a training validation is; if better by train.best_metric than
    best.pt, the average becomes best.pt and progress.best. Logged to metrics.jsonl as `last`
    with the average's valid figures and its steps (so every line has the same keys);
    returns the line saying which won and by how much (None: averaging is off, or fewer than
    two checkpoints are kept)."""
    config, progress, keep = run.config, run.progress, run.train_cfg.average_last
    paths = list(kept_checkpoints(config.run_dir).values())[-keep:] if keep else []
    if len(paths) < 2:
        return None
    weights, steps = average_checkpoints(paths, config, run.vocabs, like=str(paths[-1]))
    model = copy.deepcopy(run.model)  # not a new Transformer: that would draw random numbers
    model.load_state_dict(weights)
    result = {
        **last,
        **validate(model, config, run.vocabs, run.valid, run.device, run.keep),
        "averaged_steps": steps,
    }
    best, metric = progress.best, run.train_cfg.best_metric
    lost = keep_lost(result, progress.keep_start, run.train_cfg.keep_bleu_drop)
    won = not lost and quality(result, metric) > quality(best, metric)
    if won:
        progress.best = result
        info = run.info(result)
        save_checkpoint(config.checkpoint_path, config, model, *run.vocabs, info)
    append_line(run.log_path, json.dumps(result))
    return verdict(result, best, metric, won)


def verdict(average: dict, best: dict, metric: str, won: bool) -> str:
    """One line: the average's score against best.pt's, and which is best.pt now."""
    key = f"valid_{metric}"
    steps = average["averaged_steps"]
    outcome = "the average is best.pt now" if won else "best.pt stays as it was"
    return (
        f"average of steps {steps[0]}-{steps[-1]} ({len(steps)} checkpoints): valid "
        f"{METRIC_NAMES[metric]} {average[key]:.4f}, best.pt (step {best['step']}) "
        f"{best[key]:.4f}, {average[key] - best[key]:+.4f}: {outcome}"
    )
