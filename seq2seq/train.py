"""`make train`: train the model of config.yaml and keep its best checkpoint.

    python -m seq2seq.train [--config config.yaml] [key.sub=value ...]

One step: a batch of about `train.batch_tokens` tokens, teacher-forced cross-entropy with
label smoothing (padding ignored), gradient clipping, an AdamW update. The learning rate
rises linearly for `warmup_steps`, then follows a cosine down to `min_lr` at `max_steps` (or
`max_epochs` passes over the data, if fewer), or at the end of the time budget `max_minutes`
if that comes first: then training stops there.

    TokenPairs (memory-mapped ids) -> EpochSampler (batches of lengths) -> Prefetcher (a
    thread collating the next steps) -> the loop below, a step at a time:
      learning rate -> micro-steps (forward, backward) -> clip -> AdamW step -> log
      -> every eval_every steps: validate, keep the best (best.pt), save where training
         stands (last.pt)

Every `eval_every` steps the model is validated: loss on the valid split, and the exact
match and BLEU of its translations (greedy, or `train.valid_beam_size` beams) against the
reference text. The best checkpoint by `train.best_metric` is written atomically to
runs/<experiment>/best.pt; each validation appends a line to runs/<experiment>/metrics.jsonl.
With `train.average_last: N`, the last N validations' models are kept (step-<N>.pt) and, at
the end, their average is validated too: best.pt if it is better (training/averaging.py).
With `train.keep_valid` (a fine-tune's general set: what it must not lose), the start is
validated at step 0 and every validation scores that set's BLEU too: one more than
`train.keep_bleu_drop` below the start's is never best.pt, and counts as a validation without
gain (train.patience stops training after that many in a row).

Resuming: at each validation, and when stopped by Ctrl-C (SIGINT) or SIGTERM, the whole
training state goes to runs/<experiment>/last.pt: weights, optimizer, gradient scaler, step,
the sampler's position (epoch, steps done in it), the best result so far, and every random
state (seq2seq/training/resume.py); a validation under way when the signal comes is cut short
and runs again on resuming. Running the command again continues from it, exactly: on
the CPU the parameters end bit-for-bit as if training had never stopped (with a time budget,
train.max_minutes, the learning rate follows the clock instead, and the time stopped does not
count). `--restart` starts over.

Fine-tuning: with `train.init_from`, a fresh run starts from that checkpoint's weights instead
of random ones (seq2seq/training/finetune.py), and is an ordinary run from there; the
parameters `train.freeze` names do not learn (training/optimizer.py).

Progress shows on stderr (seq2seq/training/report.py). What the loop leans on is in
seq2seq/training/: run.py the parts of a run, optimizer.py AdamW and the schedule, loss.py the
loss of a batch, validation.py, best_and_last.py best.pt, last.pt and the divergence check,
finetune.py the start of a fine-tuning run.
"""

import json
import signal
import time
from contextlib import nullcontext

import torch

from seq2seq.config import Config, add_config_arguments, load_config
from seq2seq.support.device import (
    allocator_line,
    autocast,
    bound_onednn_kernels,
    keep_freed_memory,
    release_freed_memory,
    start_with_allocator,
)
from seq2seq.support.errors import Interrupted, command_parser, run_cli, warn
from seq2seq.support.files import append_line
from seq2seq.support.paths import LAST
from seq2seq.tokens.batching import Prefetcher
from seq2seq.tokens.special import PAD
from seq2seq.training import distributed
from seq2seq.training.averaging import average_at_end, keep_recent
from seq2seq.training.best_and_last import checked_loss, keep_if_best, resume_from_last, save_last
from seq2seq.training.distributed import World
from seq2seq.training.finetune import pull_toward_start, start_from_source, start_model
from seq2seq.training.loss import batch_loss
from seq2seq.training.memory import peak_memory
from seq2seq.training.optimizer import learning_rate, schedule_warning
from seq2seq.training.report import Report, Throughput
from seq2seq.training.resume import CutShort, StopOnSignal
from seq2seq.training.run import Run, set_up
from seq2seq.training.validation import keep_lost, validate


def training_loop(run: Run, stop_after: int | None = None) -> dict:
    """Steps until train.max_steps, train.max_minutes, train.patience or a signal; the best
    validation."""
    train_cfg, progress = run.train_cfg, run.progress
    budget_s = 60 * train_cfg.max_minutes
    report = Report(train_cfg.max_steps, progress.step, run.world.main, budget_s)
    meter = Throughput(progress.step + 1)  # the steps since the last validation
    started = time.perf_counter() - progress.elapsed_s  # as if trained in one go since then
    batches = Prefetcher(run.sampler, run.data, run.device)
    run.model.train()
    try:
        with StopOnSignal() as stop:
            if run.keep and progress.step == 0 and progress.keep_start is None:  # the start's
                evaluate_and_save(run, meter, 0.0, report, True, started, stop)
            if progress.cut_validation:  # a signal cut it short before: it runs again first
                evaluate_and_save(run, meter, 0.0, report, True, started, stop)
                if progress.cut_validation:
                    raise interrupted(run, stop, as_asked=False)
            while not run.finished:
                # the learning rate of this step, from the schedule
                lr = learning_rate(progress.step, train_cfg, progress.elapsed_s)
                # micro-steps, clip, AdamW step (train_step, below)
                micro_batches, progress.sampler = next(batches)
                loss, tokens = train_step(run, micro_batches, lr)
                progress.step += 1
                # the clock, and a signal: the same in every process
                at_stop_step = progress.step == stop_after
                stopping, progress.elapsed_s = clock_and_stop(
                    stop, at_stop_step, started, run.world
                )
                # log: the loss stays on the device until a report reads it
                meter.add(loss, tokens)
                report.update(progress.step, loss, lr, meter.tokens_per_s, progress.elapsed_s)
                # evaluate and save: every eval_every steps and at the end (max_steps or
                # max_minutes); save on a signal (which cuts a validation short)
                end = run.finished
                validating = progress.step % train_cfg.eval_every == 0 or end
                if validating or stopping:
                    evaluate_and_save(run, meter, lr, report, validating, started, stop)
                    meter = Throughput(progress.step + 1)
                if (stopping or progress.cut_validation) and not run.finished:
                    raise interrupted(run, stop, as_asked=progress.step == stop_after)
    finally:
        batches.close()
        report.close()
    return progress.best


def train_step(run: Run, micro_batches: list[tuple], lr: float) -> tuple[torch.Tensor, int]:
    """One optimizer step at learning rate `lr` over this process's micro-batches: their
    gradients, clipped to train.clip_norm, then AdamW. Returns the step's loss per target
    token (0-dim, still on the device: nothing here waits for the GPU) and its source and
    target tokens, both over all processes."""
    for group in run.optimizer.param_groups:
        group["lr"] = lr
    loss, tokens = micro_steps(run, micro_batches)
    run.scaler.unscale_(run.optimizer)  # clip the true gradients (fp16 scales them up)
    torch.nn.utils.clip_grad_norm_(run.model.parameters(), run.train_cfg.clip_norm)
    run.scaler.step(run.optimizer)
    run.scaler.update()
    if run.train_cfg.keep_weights:
        pull_toward_start(run.model, run.start, lr * run.train_cfg.keep_weights)
    return loss, tokens


def micro_steps(run: Run, micro_batches: list[tuple]) -> tuple[torch.Tensor, int]:
    """Forward and backward, a micro-batch at a time, from zero gradients: the gradient of
    the step's loss, the sum over all its target tokens, in every process, divided by their
    number (the same step whatever the split into micro-batches). The counts come from the
    batches on the host."""
    world, device = run.world, run.device
    local_targets = sum(int((tgt_out != PAD).sum()) for _, _, tgt_out in micro_batches)
    local_tokens = local_targets + sum(int((src != PAD).sum()) for src, _, _ in micro_batches)
    targets, tokens = distributed.sum_over_processes([local_targets, local_tokens], world)
    run.optimizer.zero_grad(set_to_none=True)
    loss_sum = torch.zeros((), device=device)
    for i, micro_batch in enumerate(micro_batches):
        batch = tuple(t.to(device, non_blocking=True) for t in micro_batch)
        last = i == len(micro_batches) - 1  # DDP exchanges gradients at the last backward
        sync = run.wrapped.no_sync() if world.distributed and not last else nullcontext()
        with sync, autocast(device, run.autocast_dtype):
            teacher = run.start if run.train_cfg.keep_teacher else None
            loss = batch_loss(run.wrapped, batch, run.train_cfg.label_smoothing, "sum",
                              teacher, run.train_cfg.keep_teacher)  # fmt: skip
        # DDP averages over the processes: scaling by their number makes it a sum
        run.scaler.scale(loss * (world.size / targets)).backward()
        loss_sum += loss.detach().float()
    return distributed.sum_on_device(loss_sum / targets, world), int(tokens)


def evaluate_and_save(
    run: Run,
    meter: Throughput,
    lr: float,
    report: Report,
    validating: bool,
    started: float,
    stop: StopOnSignal,
) -> None:
    """Every save goes through here: first the losses since the last save are checked (a
    diverged step is never saved) and the training time brought up to date; then, if
    `validating`, a validation (best.pt if it is the best; a signal cuts it short); then
    last.pt."""
    train_loss = checked_loss(run, meter)
    _, run.progress.elapsed_s = clock_and_stop(None, False, started, run.world)
    if validating:
        figures = {"train_loss": train_loss, "lr": lr, "tokens_per_s": meter.tokens_per_s}
        validate_and_keep_best(run, run.progress.cut_validation or figures, report, stop)
    save_last(run)
    if run.device.type == "cpu":
        release_freed_memory()  # what the steps and the validation left between their blocks


def validate_and_keep_best(run: Run, figures: dict, report: Report, stop: StopOnSignal) -> None:
    """Rank 0 validates: a signal cuts the decoding short, the step's `figures` (train_loss,
    lr, tokens_per_s) kept for the resumed run to validate again; else it keeps what the
    validation found (keep_validation), which no signal cuts. Every process takes the
    decisions (best, patience, cut short), so that all stop together."""
    progress = run.progress
    progress.cut_validation = None
    if run.world.main:
        try:
            with stop.at_once():
                scores = validate(
                    run.model, run.config, run.vocabs, run.valid, run.device, run.keep
                )
        except CutShort:
            progress.cut_validation = figures
            report.write(f"step {progress.step:>6}  validation stopped: it runs again on resuming")
        else:
            keep_validation(run, {**figures, **scores}, report)
    decided = distributed.from_main({key: getattr(progress, key) for key in DECISIONS}, run.world)
    vars(progress).update(decided)


# What rank 0 decides at a validation and every process follows (Progress's fields)
DECISIONS = ("best", "validations_without_gain", "stopped_early", "cut_validation", "keep_start")


def keep_validation(run: Run, figures: dict, report: Report) -> None:
    """A validation's results (rank 0): best.pt if it is the best, step-<N>.pt to average,
    the report's line and metrics.jsonl's; at the end, the average's."""
    progress, train_cfg = run.progress, run.train_cfg
    result = {
        "step": progress.step,
        "epoch": run.epoch,
        **figures,
        "elapsed_s": progress.elapsed_s,
        **peak_memory(run.device),  # the process's peak so far (training/memory.py)
    }
    if "keep_bleu" in result and progress.keep_start is None:
        progress.keep_start = result["keep_bleu"]  # the start's, at step 0: the bound
    lost = keep_lost(result, progress.keep_start, train_cfg.keep_bleu_drop)
    improved = keep_if_best(run, result, eligible=lost is None)
    if not lost:
        keep_recent(run, run.info(result))  # step-<N>.pt (average_last)
    kept = f"  keep BLEU {result['keep_bleu']:.2f}" if "keep_bleu" in result else ""
    report.write(
        f"step {progress.step:>6}  valid loss {result['valid_loss']:.4f}  "
        f"exact match {result['valid_exact_match']:.4f}  "
        f"BLEU {result['valid_bleu']:.2f}{kept}" + ("  (best, saved)" if improved else "")
    )
    if lost:
        report.write(lost)
    if train_cfg.patience and progress.validations_without_gain >= train_cfg.patience:
        report.write(f"no gain in {train_cfg.patience} validations: stopping early")
        progress.stopped_early = True
    append_line(run.log_path, json.dumps(result))
    if run.finished and (verdict := average_at_end(run, result)):
        report.write(verdict)


def clock_and_stop(
    stop: StopOnSignal | None, at_stop_step: bool, started: float, world: World
) -> tuple[bool, float]:
    """Whether a signal reached any process, or training was asked to stop at this step (then
    every process stops after it), and the training time so far: the processes' mean, so that
    every process sees train.max_minutes run out at the same step. One exchange for both."""
    asked = (stop is not None and stop.received is not None) or at_stop_step
    clock = time.perf_counter() - started
    asked_anywhere, clocks = distributed.sum_over_processes([float(asked), clock], world)
    return bool(asked_anywhere), clocks / world.size


def interrupted(run: Run, stop: StopOnSignal, as_asked: bool) -> Interrupted:
    if as_asked:
        why, number = "as asked", signal.SIGINT
    else:
        number = stop.received or signal.SIGTERM  # (another process got it)
        why = signal.Signals(number).name
    return Interrupted(
        f"stopped at step {run.progress.step:,} ({why}); "
        f"saved {run.last_path}: run the same command again to resume",
        number,
    )


def announce(run: Run) -> None:
    """What is about to train, on what (rank 0)."""
    if run.world.main:
        processes = f" x {run.world.size} processes" if run.world.distributed else ""
        minutes = run.train_cfg.max_minutes
        budget = f" or {minutes:g} minutes" if minutes else ""
        print(
            f"training {run.model.num_parameters():,} parameters on {run.device}{processes} "
            f"({run.autocast_dtype or torch.float32}), {len(run.data):,} training pairs, "
            f"up to {run.train_cfg.max_steps:,} steps{epochs(run)}{budget}"
        )
        if run.memory_mib:
            print(
                f"train.max_memory_mib {run.train_cfg.max_memory_mib:,}: about "
                f"{run.memory_mib:,} MiB measured with {run.train_cfg.accumulate} micro-batch(es) "
                "a step (train.accumulate)"
            )
        if warning := schedule_warning(run.train_cfg):
            warn(warning)


def epochs(run: Run) -> str:
    """How many epochs train.max_steps is, where train.max_epochs set it."""
    train_cfg = run.train_cfg
    if not train_cfg.max_epochs:
        return ""
    return f" ({train_cfg.max_steps / run.sampler.first_epoch_steps:.3g} epochs)"


def start_process(config: Config) -> tuple[World, torch.device]:
    """This process's place among the training processes and its device, with the CPU's
    threads (train.threads) and allocator set for training."""
    if config.train.threads:
        torch.set_num_threads(config.train.threads)
    world, device = distributed.start(config.train.device)
    if device.type == "cpu":
        if world.main:
            print(allocator_line(config.train.allocator))
        keep_freed_memory(config.train.keep_freed_mib)
        bound_onednn_kernels(config.train.onednn_kernels)
    return world, device


def train(config: Config, restart: bool = False, stop_after: int | None = None) -> dict:
    """Train, resuming from runs/<experiment>/last.pt unless `restart`; returns the best
    validation result. Under torchrun, every process runs this (seq2seq/training/distributed.py).
    `stop_after` stops training after that step as a signal would (last.pt saved, Interrupted
    raised): for tests and benchmarks that stop a run at a known step."""
    world, device = start_process(config)
    try:
        run = set_up(config, world, device)
        if not resume_from_last(run, restart):
            start_from_source(run)  # train.init_from's weights, when fine-tuning
        run.start = start_model(run)  # what keeps the start's knowledge, if asked for
        if run.finished:
            if world.main:
                print(
                    f"{run.last_path}: training already finished at step {run.progress.step:,} "
                    f"({run.progress.elapsed_s / 60:.1f} minutes); raise train.max_steps (or "
                    "train.max_minutes) to train on, or pass --restart to start over"
                )
            return run.progress.best
        announce(run)
        best = training_loop(run, stop_after)
        if world.main:
            print(
                f"best: step {best['step']}, valid exact match {best['valid_exact_match']:.4f}, "
                f"valid BLEU {best['valid_bleu']:.2f}, valid loss {best['valid_loss']:.4f}; "
                f"saved to {config.checkpoint_path} ({run.progress.elapsed_s:.0f} s of training)"
            )
        return best
    finally:
        distributed.stop(world)


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("seq2seq.train", __doc__.splitlines()[0])
    add_config_arguments(parser)
    parser.add_argument(
        "--restart", action="store_true", help=f"start over, ignoring runs/<experiment>/{LAST}"
    )
    args = parser.parse_intermixed_args(argv)  # options before or after the overrides
    config = load_config(args.config, args.overrides)
    if argv is None:  # the command itself, not called from Python: the allocator can change
        start_with_allocator(config.train.allocator)
    train(config, restart=args.restart)


if __name__ == "__main__":
    run_cli(main)
