"""One training run: the parts the loop (seq2seq/train.py) works on, built from the config.

    config -> vocabularies; the train split's ids; the valid split, ids and text   text/
           (and train.keep_valid's pairs, what must not be lost)
           -> model: the Transformer itself, what is saved, clipped, validated     model/
           -> wrapped: the model in DDP under torchrun, compiled with train.compile
           -> AdamW and the gradient scaler (fp16 only)                     optimizer.py
           -> train.max_memory_mib: a trial step measured, more micro-batches to fit  memory.py
           -> sampler: this process's micro-batches of each step        tokens/batching.py
              (train.max_epochs: max_steps lowered to that many of its epochs)
           -> progress: the step, the best validation, patience                resume.py

Resuming (best_and_last.py) then puts back what last.pt holds into these same parts.
"""

from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
from torch.nn.parallel import DistributedDataParallel

from seq2seq.config import Config, TrainConfig
from seq2seq.model.transformer import Transformer
from seq2seq.support.device import autocast_dtype, cpu_computes_bf16
from seq2seq.support.errors import UserError
from seq2seq.support.paths import LAST, METRICS, vocab_files
from seq2seq.text.parallel import Pairs, iter_files, load_split
from seq2seq.tokens.batching import EpochSampler
from seq2seq.tokens.dataset import Limits, TokenPairs
from seq2seq.tokens.special import PAD
from seq2seq.tokens.vocab import Vocab, load_vocabs
from seq2seq.training.distributed import World
from seq2seq.training.memory import within_memory
from seq2seq.training.optimizer import make_optimizer
from seq2seq.training.resume import Progress
from seq2seq.training.validation import ValidSplit, uses_ctranslate2


@dataclass
class Run:
    """One training run in one process (of `world`)."""

    config: Config
    world: World
    device: torch.device
    vocabs: tuple[Vocab, Vocab]
    data: TokenPairs  # the train split's ids
    valid: ValidSplit
    keep: Pairs | None  # train.keep_valid's pairs: what must not be lost (None: not measured)
    example: str  # a source sentence, kept in the checkpoints
    model: Transformer  # the one model: what is saved, clipped and validated
    wrapped: torch.nn.Module  # what a step calls: the model, in DDP and/or compiled
    optimizer: torch.optim.AdamW
    autocast_dtype: torch.dtype | None  # None: fp32
    scaler: torch.amp.GradScaler  # fp16 scales the loss up so small gradients do not underflow
    batch_settings: dict  # what resuming needs the same (batch_settings below)
    sampler: EpochSampler
    progress: Progress = field(default_factory=Progress)
    # train.init_from's model, frozen, for train.keep_teacher and keep_weights (finetune.py)
    start: Transformer | None = None
    # an imported model's origin (its package, version, weights' type), kept in every
    # checkpoint of the runs that fine-tune it, for the package made of them (exports/argos.py)
    origin: dict = field(default_factory=dict)
    saved_at: int | None = None  # the step last.pt holds, once there is one
    memory_mib: int = 0  # what train.max_memory_mib's trial measured (memory.py); 0: no budget

    def info(self, result: dict) -> dict:
        """A checkpoint's info: `result` (step, scores), the example, the origin if any."""
        return {**result, "example": self.example} | (
            {"origin": self.origin} if self.origin else {}
        )

    @property
    def train_cfg(self) -> TrainConfig:
        return self.config.train

    @property
    def last_path(self) -> Path:
        return self.config.run_dir / LAST

    @property
    def log_path(self) -> Path:
        return self.config.run_dir / METRICS

    @property
    def epoch(self) -> int:
        """The epoch of the last step taken (the sampler itself is ahead: the prefetcher's)."""
        return self.progress.sampler.get("epoch", 0)

    @property
    def finished(self) -> bool:
        progress, train_cfg = self.progress, self.train_cfg
        out_of_time = train_cfg.max_minutes and progress.elapsed_s >= 60 * train_cfg.max_minutes
        ended = progress.stopped_early or progress.step >= train_cfg.max_steps or out_of_time
        return ended and not progress.cut_validation  # the last validation is done too


def set_up(config: Config, world: World, device: torch.device) -> Run:
    """The parts of a run from scratch, in the order that fixes the random numbers: the
    initial weights (the same in every process), then each process's own dropout."""
    train_cfg = config.train
    torch.manual_seed(train_cfg.seed)
    vocabs = load_vocabs(config)
    on_disk = vocab_files(config.data_dir)
    eos, limits = config.model.source_eos, Limits.of(config)
    data, valid_ids = (
        TokenPairs(config.data_dir, split, on_disk, eos, limits) for split in ("train", "valid")
    )
    valid = (valid_ids, load_split(config, "valid"))
    keep = keep_pairs(train_cfg)
    model = Transformer(config.model, *map(len, vocabs), pad_id=PAD).to(device)
    if world.distributed:
        torch.manual_seed(train_cfg.seed + world.rank)  # same weights, own dropout
    optimizer = make_optimizer(model, train_cfg)
    dtype = autocast_dtype(train_cfg.precision, device, "train.precision", cpu_computes_bf16())
    uses_ctranslate2(train_cfg.valid_engine, device)  # a missing one is an error now, not later
    config, memory_mib = within_memory(config, model, data, dtype, device, world)
    train_cfg = config.train  # train.accumulate raised to fit train.max_memory_mib
    scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)
    # DistributedDataParallel averages the gradients of all processes during backward()
    wrapped = DistributedDataParallel(model) if world.distributed else model
    if train_cfg.compile:
        wrapped = torch.compile(wrapped, dynamic=True)
    settings = batch_settings(config, world)
    per_step = settings["micro_batches_per_step"]
    sampler = EpochSampler(
        data.src_lengths, data.tgt_lengths,
        max(1, train_cfg.batch_tokens // per_step), per_step, world, train_cfg.seed,
    )  # fmt: skip
    example = valid[1][0][0]
    return Run(
        within_epochs(config, sampler), world, device, vocabs, data, valid, keep, example, model,
        wrapped, optimizer, dtype, scaler, settings, sampler, memory_mib=memory_mib,
    )  # fmt: skip


def keep_pairs(train_cfg: TrainConfig) -> Pairs | None:
    """train.keep_valid's pairs, read before training starts (None: no keep_valid)."""
    if train_cfg.keep_valid is None:
        return None
    if not (pairs := list(iter_files(train_cfg.keep_valid))):
        raise UserError(f"train.keep_valid: {train_cfg.keep_valid.tsv or train_cfg.keep_valid.src} "
                        "holds no sentence pairs")  # fmt: skip
    return pairs


def within_epochs(config: Config, sampler: EpochSampler) -> Config:
    """The config with train.max_steps lowered to train.max_epochs passes over the data, if
    that is sooner: the schedule's end."""
    train_cfg = config.train
    if not train_cfg.max_epochs:
        return config
    steps = max(1, round(train_cfg.max_epochs * sampler.first_epoch_steps))
    return replace(config, train=replace(train_cfg, max_steps=min(train_cfg.max_steps, steps)))


def batch_settings(config: Config, world: World) -> dict:
    """What fixes the epoch's batches and their split into steps: resuming needs the same."""
    return {
        "batch_tokens": config.train.batch_tokens,
        "micro_batches_per_step": world.size * config.train.accumulate,
    }
