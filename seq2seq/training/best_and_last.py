"""Training's two checkpoints, and the check that keeps a diverged step out of both.

    runs/<experiment>/best.pt   the best validation so far (train.best_metric): what evaluate,
                                translate, serve and export load
    runs/<experiment>/last.pt   where training stands: weights, optimizer, gradient scaler,
                                Progress and every process's random states (resume.py)

    each validation   checked_loss -> keep_if_best (best.pt) -> save_last (last.pt)
    Ctrl-C / SIGTERM  checked_loss -> save_last (a validation under way is cut short at once,
                      and runs again when training resumes: Progress.cut_validation)
    starting          resume_from_last: last.pt -> check_resumable -> everything put back;
                      without last.pt, a fine-tuning run starts from train.init_from (finetune.py)

(With train.average_last, each validation also keeps its model as step-<N>.pt, and the
average of the last ones may become best.pt at the end: averaging.py.)

Rank 0 alone writes, each file atomically (seq2seq/checkpoint.py), so a checkpoint on disk is
always whole: the one before, or the new one.
"""

import json
import math
from dataclasses import asdict

from seq2seq.checkpoint import non_finite, read_state, save_checkpoint
from seq2seq.support.errors import UserError
from seq2seq.support.files import read_log, remove_leftovers, write_lines
from seq2seq.training import distributed
from seq2seq.training.averaging import forget_kept_after
from seq2seq.training.report import Throughput
from seq2seq.training.resume import (
    Progress,
    check_resumable,
    random_states,
    restore_scaler,
    set_random_states,
)
from seq2seq.training.run import Run
from seq2seq.training.validation import quality


def keep_if_best(run: Run, result: dict, eligible: bool = True) -> bool:
    """Whether validation `result` is the best so far (and `eligible`: not below
    train.keep_bleu_drop): then it becomes progress.best and the model best.pt; else patience
    counts one more validation without gain (rank 0 only)."""
    progress, metric = run.progress, run.train_cfg.best_metric
    better = progress.best is None or quality(result, metric) > quality(progress.best, metric)
    improved = eligible and better
    if improved:
        progress.best, progress.validations_without_gain = result, 0
        info = run.info(result)
        save_checkpoint(run.config.checkpoint_path, run.config, run.model, *run.vocabs, info)
    else:
        progress.validations_without_gain += 1
    return improved


def save_last(run: Run) -> None:
    """Everything resuming needs, to last.pt (written by rank 0)."""
    random_of_all = distributed.gather(random_states(run.device), run.world)
    if not run.world.main:
        return
    training = {
        "optimizer": run.optimizer.state_dict(),
        "scaler": run.scaler.state_dict(),
        "random": random_of_all,
        "progress": asdict(run.progress),
        "data_sha256": run.data.content_hash,
        "batching": run.batch_settings,
    }
    info = run.info({"step": run.progress.step, "epoch": run.epoch})
    save_checkpoint(run.last_path, run.config, run.model, *run.vocabs, info, training)
    run.saved_at = run.progress.step


def resume_from_last(run: Run, restart: bool) -> bool:
    """Continue from last.pt if there is one (unless `restart`): every part of `run` as
    save_last left it, and metrics.jsonl and the kept checkpoints (averaging.py) cut back to
    the steps last.pt holds. Returns whether it did (False: a fresh start)."""
    world, last_path = run.world, run.last_path
    if world.main:
        run.config.run_dir.mkdir(parents=True, exist_ok=True)
        remove_leftovers(run.config.run_dir)  # of a process killed while writing
        if restart:
            last_path.unlink(missing_ok=True)
    if not distributed.from_main(last_path.exists(), world):
        if world.main:
            write_lines(run.log_path, [])
            forget_kept_after(run.config.run_dir, 0)
        return False
    try:
        state = read_state(last_path, run.device)
    except UserError as error:
        raise UserError(f"{error}; pass --restart to train from scratch") from None
    data_hash, batches = run.data.content_hash, run.batch_settings
    check_resumable(state, run.config, run.vocabs, data_hash, batches, last_path)
    run.model.load_state_dict(state["model"])
    run.origin = state["info"].get("origin", {})
    training = state["training"]
    run.optimizer.load_state_dict(training["optimizer"])
    restore_scaler(run.scaler, training["scaler"])
    states = training["random"]  # one per process of the run that saved them
    set_random_states(states[world.rank % len(states)], run.device)
    run.progress = Progress(**training["progress"])
    run.saved_at = run.progress.step
    run.sampler.load_state_dict(run.progress.sampler)
    cut = run.progress.cut_validation  # then its step's lines are done again too
    if world.main and not run.finished:  # drop what was logged after the state was saved
        logged, step = read_log(run.log_path), run.progress.step
        done = [r for r in logged if r["step"] < step or (r["step"] == step and not cut)]
        write_lines(run.log_path, [json.dumps(record) for record in done])
        forget_kept_after(run.config.run_dir, run.progress.step)
        print(f"resuming {last_path} at step {run.progress.step:,} (--restart to start over)")
    return True


def checked_loss(run: Run, meter: Throughput) -> float | None:
    """The mean training loss since the last validation (None: no step since, as at step 0
    of a run with train.keep_valid, where the start is validated); an error naming the first step
    whose loss was not finite, or the first weight that is not. Every save comes after
    this check, so nothing of a diverged step is saved."""
    losses = meter.read_losses()
    for step, loss in enumerate(losses, meter.first_step):
        if not math.isfinite(loss):
            raise diverged(run, f"the loss is {loss} at step {step:,}")
    if name := non_finite(run.model.state_dict()):
        raise diverged(run, f"{name} is not finite after step {run.progress.step:,}")
    return sum(losses) / len(losses) if losses else None


def diverged(run: Run, what: str) -> UserError:
    """The error of a divergence, saying which checkpoints are kept, as they are on disk."""
    best, last_path = run.progress.best, run.last_path
    if run.saved_at is None:
        kept = "nothing saved"
    elif best is None:
        kept = f"{last_path} (step {run.saved_at:,}) is kept"
    else:
        kept = (
            f"{last_path} (step {run.saved_at:,}) and {run.config.checkpoint_path} "
            f"(step {best['step']:,}) are kept"
        )
    return UserError(
        f"training diverged: {what}; {kept}. "
        "Lower train.lr or raise train.warmup_steps, then --restart"
    )
