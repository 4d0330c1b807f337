"""`make train`: train the model of config.yaml and keep its best checkpoint.

    python -m seq2seq.train [--config config.yaml] [key.sub=value ...]

One step: a batch of about `train.batch_tokens` tokens, teacher-forced cross-entropy with
label smoothing (padding ignored), gradient clipping, an AdamW update. The learning rate
rises linearly for `warmup_steps`, then follows a cosine down to `min_lr` at `max_steps`.

    TokenPairs (memory-mapped ids) -> EpochSampler (batches of lengths) -> Prefetcher (a
    thread collating the next steps) -> Trainer.step -> every eval_every steps: validate,
    keep the best (best.pt), save where training stands (last.pt)

Every `eval_every` steps the model is validated: loss on the valid split, and the exact
match and BLEU of its translations (greedy, or `train.valid_beam_size` beams) against the
reference text. The best checkpoint by `train.best_metric` is written atomically to
runs/<experiment>/best.pt; each validation appends a line to runs/<experiment>/metrics.jsonl.

Resuming: at each validation, and when stopped by Ctrl-C (SIGINT) or SIGTERM, the whole
training state goes to runs/<experiment>/last.pt: weights, optimizer, gradient scaler, step,
the sampler's position (epoch, steps done in it), the best result so far, and every random
state (seq2seq/training/resume.py). Running the command again continues from it, exactly: on the CPU
the parameters end bit-for-bit as if training had never stopped. `--restart` starts over.
Progress shows on stderr (seq2seq/training/report.py).
"""

import json
import math
import signal
import time
from contextlib import nullcontext
from dataclasses import asdict, replace
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from seq2seq.checkpoint import non_finite, read_state, save_checkpoint
from seq2seq.config import Config, TrainConfig, add_config_arguments, load_config
from seq2seq.decoding.greedy import evaluating, translate_sentences
from seq2seq.model.transformer import Transformer
from seq2seq.support.device import autocast, autocast_dtype
from seq2seq.support.errors import Interrupted, UserError, command_parser, run_cli, warn
from seq2seq.support.files import append_line, remove_stale_temporaries, write_lines
from seq2seq.support.paths import LAST, METRICS, vocab_files
from seq2seq.text.batching import EpochSampler, Prefetcher, token_batches
from seq2seq.text.corpus import load_split
from seq2seq.text.dataset import TokenPairs
from seq2seq.text.special import PAD
from seq2seq.text.vocab import Vocab, load_vocabs
from seq2seq.training import distributed
from seq2seq.training.distributed import World
from seq2seq.training.metrics import exact_match, sacrebleu_scores
from seq2seq.training.report import Report, Throughput
from seq2seq.training.resume import (
    Progress,
    StopOnSignal,
    check_resumable,
    random_states,
    restore_scaler,
    set_random_states,
)


def learning_rate(step: int, cfg: TrainConfig) -> float:
    """Linear warmup to cfg.lr, then cosine decay to cfg.min_lr at cfg.max_steps."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(1, cfg.max_steps - cfg.warmup_steps)
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * min(progress, 1.0)))


def schedule_warning(cfg: TrainConfig) -> str | None:
    """What is odd about the learning-rate schedule, if anything: training that stops during
    the warmup never reaches cfg.lr."""
    if cfg.max_steps >= cfg.warmup_steps:
        return None
    peak = learning_rate(cfg.max_steps - 1, cfg)
    return (
        f"train.max_steps ({cfg.max_steps:,}) is below train.warmup_steps "
        f"({cfg.warmup_steps:,}): the learning rate stops at {peak:.2e}, never reaching "
        f"train.lr ({cfg.lr:.2e}); lower train.warmup_steps"
    )


def make_optimizer(model: Transformer, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW; weight decay on matrices only (not on biases and LayerNorm gains). The fused
    implementation (one kernel for all parameters) where the device has it."""
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    vectors = [p for p in model.parameters() if p.dim() < 2]
    groups = [
        {"params": matrices, "weight_decay": cfg.weight_decay},
        {"params": vectors, "weight_decay": 0.0},
    ]
    fused = next(model.parameters()).device.type in ("cpu", "cuda")
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.98), eps=1e-9, fused=fused)


def batch_loss(
    model: torch.nn.Module,
    batch: tuple[torch.Tensor, ...],
    label_smoothing: float,
    reduction: str = "mean",
) -> torch.Tensor:
    """Cross-entropy of one (src, tgt_in, tgt_out) batch: the mean per target token, or with
    reduction="sum" the sum over them (padding never counts)."""
    src, tgt_in, tgt_out = batch
    logits = model(src, tgt_in)  # (B, T, V)
    return F.cross_entropy(
        logits.flatten(0, 1),
        tgt_out.flatten(),
        ignore_index=PAD,
        label_smoothing=label_smoothing,
        reduction=reduction,
    )


@torch.no_grad()
def validate(
    model: Transformer, config: Config, vocabs: tuple[Vocab, Vocab], valid: "ValidSplit", device
) -> dict:
    """Per-token cross-entropy (no label smoothing) on the valid split, and the exact match
    and BLEU of its translations against the reference text, as `make eval` scores them."""
    ids, pairs = valid
    total, tokens = torch.zeros((), device=device), 0
    decoding = replace(config.decode, beam_size=config.train.valid_beam_size)
    with evaluating(model, decoding.precision):
        rng = np.random.default_rng(0)
        for indices in token_batches(
            ids.src_lengths, ids.tgt_lengths, config.train.batch_tokens, rng
        ):
            src, tgt_in, tgt_out = ids.batch(indices)
            tokens += int((tgt_out != PAD).sum())  # counted on the host, before the copy
            batch = tuple(t.to(device) for t in (src, tgt_in, tgt_out))
            total += batch_loss(model, batch, 0.0, reduction="sum").float()
    hypotheses = translate_sentences(model, *vocabs, [s for s, _ in pairs], decoding)
    references = [t for _, t in pairs]
    return {
        "valid_loss": total.item() / tokens,
        "valid_exact_match": exact_match(hypotheses, references),
        "valid_bleu": sacrebleu_scores(hypotheses, references)["bleu"],
    }


ValidSplit = tuple[TokenPairs, list[tuple[str, str]]]  # its ids (the loss), its text (scores)


def quality(result: dict, best_metric: str) -> tuple[float, float]:
    """Which validation is better: the higher train.best_metric (exact match or BLEU), then
    the lower loss; or the lower loss alone."""
    if best_metric == "loss":
        return -result["valid_loss"], 0.0
    return result[f"valid_{best_metric}"], -result["valid_loss"]


def batch_settings(config: Config, world: World) -> dict:
    """What fixes the epoch's batches and their split into steps: resuming needs the same."""
    return {
        "batch_tokens": config.train.batch_tokens,
        "micro_batches_per_step": world.size * config.train.accumulate,
    }


class StepResult(NamedTuple):
    loss: torch.Tensor  # 0-dim, on the device: the step's loss per target token, all processes
    tokens: int  # source and target tokens of the step, all processes
    lr: float


class Trainer:
    """One training run in one process (of `world`): the parts `train` loops over."""

    def __init__(
        self, config: Config, world: World, device: torch.device, stop_after: int | None = None
    ):
        self.config, self.cfg, self.world, self.device = config, config.train, world, device
        self.stop_after = stop_after
        torch.manual_seed(self.cfg.seed)
        self.vocabs = load_vocabs(config)
        vocabs_on_disk = vocab_files(config.data_dir)
        self.data = TokenPairs(config.data_dir, "train", vocabs_on_disk)
        self.valid: ValidSplit = (
            TokenPairs(config.data_dir, "valid", vocabs_on_disk),
            load_split(config, "valid"),
        )
        self.example = self.valid[1][0][0]  # a source sentence, kept in the checkpoints
        self.model = Transformer(config.model, *map(len, self.vocabs), pad_id=PAD).to(device)
        if world.distributed:
            torch.manual_seed(self.cfg.seed + world.rank)  # same weights, own dropout
        self.optimizer = make_optimizer(self.model, self.cfg)
        self.autocast_dtype = autocast_dtype(self.cfg.precision, device, "train.precision")
        # fp16 needs its loss scaled up so that small gradients do not underflow; bf16 does not
        fp16 = self.autocast_dtype == torch.float16
        self.scaler = torch.amp.GradScaler(device.type, enabled=fp16)
        # DistributedDataParallel averages the gradients of all processes during backward()
        self.parallel = DistributedDataParallel(self.model) if world.distributed else self.model
        compiled = self.cfg.compile
        self.step_model = torch.compile(self.parallel, dynamic=True) if compiled else self.parallel
        self.batch_settings = batch_settings(config, world)
        per_step = self.batch_settings["micro_batches_per_step"]
        self.sampler = EpochSampler(
            self.data.src_lengths, self.data.tgt_lengths,
            max(1, self.cfg.batch_tokens // per_step), per_step, world, self.cfg.seed,
        )  # fmt: skip
        self.progress = Progress()
        self.last_path = config.run_dir / LAST
        self.saved_at: int | None = None  # the step last.pt holds, once there is one
        self.log_path = config.run_dir / METRICS

    def resume(self, restart: bool) -> None:
        """Continue from last.pt if there is one (unless `restart`)."""
        world = self.world
        if world.main:
            self.config.run_dir.mkdir(parents=True, exist_ok=True)
            remove_stale_temporaries(self.config.run_dir)  # from a process killed while writing
            if restart:
                self.last_path.unlink(missing_ok=True)
        if not distributed.from_main(self.last_path.exists(), world):
            if world.main:
                write_lines(self.log_path, [])
            return
        try:
            state = read_state(self.last_path, self.device)
        except UserError as error:
            raise UserError(f"{error}; pass --restart to train from scratch") from None
        data_hash, batches = self.data.content_hash, self.batch_settings
        check_resumable(state, self.config, self.vocabs, data_hash, batches, self.last_path)
        self.model.load_state_dict(state["model"])
        training = state["training"]
        self.optimizer.load_state_dict(training["optimizer"])
        restore_scaler(self.scaler, training["scaler"])
        states = training["random"]  # one per process of the run that saved them
        set_random_states(states[world.rank % len(states)], self.device)
        self.progress = Progress(**training["progress"])
        self.saved_at = self.progress.step
        self.sampler.load_state_dict(self.progress.sampler)
        if world.main and not self.finished:  # drop what was logged after the state was saved
            logged = self.log_path.read_text("utf-8").splitlines() if self.log_path.exists() else []
            kept = [line for line in logged if json.loads(line)["step"] <= self.progress.step]
            write_lines(self.log_path, kept)
            print(
                f"resuming {self.last_path} at step {self.progress.step:,} "
                "(--restart to start over)"
            )

    @property
    def finished(self) -> bool:
        return self.progress.stopped_early or self.progress.step >= self.cfg.max_steps

    def step(self, micro_batches: list[tuple]) -> StepResult:
        """One optimizer step over this process's micro-batches. Nothing here waits for the
        GPU: the loss stays on the device, and the counts come from the batches on the host."""
        cfg, world, device = self.cfg, self.world, self.device
        lr = learning_rate(self.progress.step, cfg)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        # The loss of the step is the sum over all its target tokens, in every process,
        # divided by their number: the same step whatever the split into micro-batches.
        local_targets = sum(int((tgt_out != PAD).sum()) for _, _, tgt_out in micro_batches)
        local_tokens = local_targets + sum(int((src != PAD).sum()) for src, _, _ in micro_batches)
        targets, tokens = distributed.sum_over_processes([local_targets, local_tokens], world)
        self.optimizer.zero_grad(set_to_none=True)
        loss_sum = torch.zeros((), device=device)
        for i, micro_batch in enumerate(micro_batches):
            batch = tuple(t.to(device, non_blocking=True) for t in micro_batch)
            last = i == len(micro_batches) - 1  # DDP exchanges gradients at the last backward
            sync = self.parallel.no_sync() if world.distributed and not last else nullcontext()
            with sync, autocast(device, self.autocast_dtype):
                loss = batch_loss(self.step_model, batch, cfg.label_smoothing, reduction="sum")
            # DDP averages over the processes: scaling by their number makes it a sum
            self.scaler.scale(loss * (world.size / targets)).backward()
            loss_sum += loss.detach().float()
        self.scaler.unscale_(self.optimizer)  # clip the true gradients
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        loss = distributed.sum_on_device(loss_sum / targets, world)
        return StepResult(loss, int(tokens), lr)

    def validate_and_keep_best(
        self, train_loss: float, meter: Throughput, lr: float, report: Report
    ) -> None:
        """Rank 0 validates, keeps the best checkpoint and logs; every process takes its
        decisions (best, patience), so that all stop together."""
        progress, cfg = self.progress, self.cfg
        if self.world.main:
            result = {
                "step": progress.step,
                "epoch": self.sampler.epoch,
                "train_loss": train_loss,
                "lr": lr,
                "tokens_per_s": meter.tokens_per_s,
                **validate(self.model, self.config, self.vocabs, self.valid, self.device),
                "elapsed_s": progress.elapsed_s,
            }
            best = progress.best
            metric = cfg.best_metric
            improved = best is None or quality(result, metric) > quality(best, metric)
            if improved:
                progress.best, progress.validations_without_gain = result, 0
                info = {**result, "example": self.example}
                save_checkpoint(
                    self.config.checkpoint_path, self.config, self.model, *self.vocabs, info
                )
            else:
                progress.validations_without_gain += 1
            report.write(
                f"step {progress.step:>6}  valid loss {result['valid_loss']:.4f}  "
                f"exact match {result['valid_exact_match']:.4f}  "
                f"BLEU {result['valid_bleu']:.2f}" + ("  (best, saved)" if improved else "")
            )
            if cfg.patience and progress.validations_without_gain >= cfg.patience:
                report.write(f"no gain in {cfg.patience} validations: stopping early")
                progress.stopped_early = True
            append_line(self.log_path, json.dumps(result))
        progress.best, progress.validations_without_gain, progress.stopped_early = (
            distributed.from_main(
                (progress.best, progress.validations_without_gain, progress.stopped_early),
                self.world,
            )
        )

    def save_last(self) -> None:
        """Everything resuming needs, to last.pt (written by rank 0, atomically)."""
        random_of_all = distributed.gather(random_states(self.device), self.world)
        if not self.world.main:
            return
        training = {
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict(),
            "random": random_of_all,
            "progress": asdict(self.progress),
            "data_sha256": self.data.content_hash,
            "batching": self.batch_settings,
        }
        info = {"step": self.progress.step, "epoch": self.sampler.epoch, "example": self.example}
        save_checkpoint(self.last_path, self.config, self.model, *self.vocabs, info, training)
        self.saved_at = self.progress.step

    def run(self) -> dict:
        """The training loop: steps, validations, checkpoints, until max_steps, patience or a
        signal."""
        cfg, progress = self.cfg, self.progress
        if self.finished:
            if self.world.main:
                print(
                    f"{self.last_path}: training already finished at step {progress.step:,}; raise "
                    "train.max_steps to train on, or pass --restart to start over"
                )
            return progress.best
        self.announce()
        report = Report(cfg.max_steps, progress.step, enabled=self.world.main)
        meter, start = Throughput(progress.step + 1), time.perf_counter()
        batches = Prefetcher(self.sampler, self.data, self.device)
        self.model.train()
        try:
            with StopOnSignal() as stop:
                while not self.finished:
                    micro_batches, sampler_state = next(batches)
                    result = self.step(micro_batches)
                    progress.step += 1
                    progress.sampler = sampler_state
                    meter.add(result.loss, result.tokens)
                    report.update(progress.step, result.loss, result.lr, meter.tokens_per_s)
                    if progress.step % cfg.eval_every == 0 or progress.step == cfg.max_steps:
                        train_loss = self.checked_loss(meter)
                        progress.elapsed_s += time.perf_counter() - start
                        start = time.perf_counter()
                        self.validate_and_keep_best(train_loss, meter, result.lr, report)
                        self.save_last()
                        meter = Throughput(progress.step + 1)
                    if self.stop_asked(stop) and not self.finished:
                        self.checked_loss(meter)
                        progress.elapsed_s += time.perf_counter() - start
                        self.save_last()
                        raise self.interrupted(stop)
        finally:
            batches.close()
            report.close()
        best = progress.best
        if self.world.main:
            print(
                f"best: step {best['step']}, valid exact match {best['valid_exact_match']:.4f}, "
                f"valid BLEU {best['valid_bleu']:.2f}, valid loss {best['valid_loss']:.4f}; "
                f"saved to {self.config.checkpoint_path} ({progress.elapsed_s:.0f} s of training)"
            )
        return best

    def stop_asked(self, stop: StopOnSignal) -> bool:
        """Whether a signal reached any process, or training was asked to stop at this step:
        then every process stops after it."""
        asked = stop.received is not None or self.progress.step == self.stop_after
        return bool(distributed.sum_over_processes([float(asked)], self.world)[0])

    def announce(self) -> None:
        if self.world.main:
            processes = f" x {self.world.size} processes" if self.world.distributed else ""
            print(
                f"training {self.model.num_parameters():,} parameters on {self.device}{processes} "
                f"({self.autocast_dtype or torch.float32}), {len(self.data):,} training pairs, "
                f"up to {self.cfg.max_steps:,} steps"
            )
            if warning := schedule_warning(self.cfg):
                warn(warning)

    def checked_loss(self, meter: Throughput) -> float:
        """The mean training loss since the last validation; an error naming the first step
        whose loss was not finite, or the first weight that is not. Every save comes after
        this check, so nothing of a diverged step is saved."""
        losses = meter.read_losses()
        for step, loss in enumerate(losses, meter.first_step):
            if not math.isfinite(loss):
                raise self.diverged(f"the loss is {loss} at step {step:,}")
        if name := non_finite(self.model.state_dict()):
            raise self.diverged(f"{name} is not finite after step {self.progress.step:,}")
        return sum(losses) / max(1, len(losses))

    def diverged(self, what: str) -> UserError:
        """The error of a divergence, saying which checkpoints are kept, as they are on disk."""
        best = self.progress.best
        if self.saved_at is None:
            kept = "nothing saved"
        elif best is None:
            kept = f"{self.last_path} (step {self.saved_at:,}) is kept"
        else:
            kept = (
                f"{self.last_path} (step {self.saved_at:,}) and {self.config.checkpoint_path} "
                f"(step {best['step']:,}) are kept"
            )
        return UserError(
            f"training diverged: {what}; {kept}. "
            "Lower train.lr or raise train.warmup_steps, then --restart"
        )

    def interrupted(self, stop: StopOnSignal) -> Interrupted:
        if self.progress.step == self.stop_after:
            why, number = "as asked", signal.SIGINT
        else:
            number = stop.received or signal.SIGTERM  # (another process got it)
            why = signal.Signals(number).name
        return Interrupted(
            f"stopped at step {self.progress.step:,} ({why}); "
            f"saved {self.last_path}: run the same command again to resume",
            number,
        )


def train(config: Config, restart: bool = False, stop_after: int | None = None) -> dict:
    """Train, resuming from runs/<experiment>/last.pt unless `restart`; returns the best
    validation result. Under torchrun, every process runs this (seq2seq/training/distributed.py).
    `stop_after` stops training after that step as a signal would (last.pt saved, Interrupted
    raised): for tests and benchmarks that stop a run at a known step."""
    if config.train.threads:
        torch.set_num_threads(config.train.threads)
    world, device = distributed.start(config.train.device)
    try:
        trainer = Trainer(config, world, device, stop_after)
        trainer.resume(restart)
        return trainer.run()
    finally:
        distributed.stop(world)


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("seq2seq.train", __doc__.splitlines()[0])
    add_config_arguments(parser)
    parser.add_argument(
        "--restart", action="store_true", help=f"start over, ignoring runs/<experiment>/{LAST}"
    )
    args = parser.parse_intermixed_args(argv)  # options before or after the overrides
    train(load_config(args.config, args.overrides), restart=args.restart)


if __name__ == "__main__":
    run_cli(main)
