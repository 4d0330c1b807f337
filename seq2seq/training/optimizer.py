"""AdamW and its learning-rate schedule: the rate rises linearly for `train.warmup_steps`,
then follows a cosine down to `train.min_lr` at `train.max_steps`, or at the end of the time
budget `train.max_minutes`, whichever comes first.

    train.lr  |   .--.._
              |  /      ``-._
              | /            ``-.._
    min_lr    |/                   ``----
              +---|------------------|---> step
          warmup_steps        max_steps
"""

import math

import torch

from seq2seq.config import TrainConfig
from seq2seq.model.transformer import Transformer
from seq2seq.support.errors import UserError


def make_optimizer(model: Transformer, train_cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW over the parameters train.freeze leaves free (freeze); weight decay on matrices
    only (not on biases and LayerNorm gains). The fused implementation (one kernel for all
    parameters) where the device has it."""
    free = freeze(model, train_cfg.freeze)
    matrices = [p for p in free if p.dim() >= 2]
    vectors = [p for p in free if p.dim() < 2]
    groups = [
        {"params": matrices, "weight_decay": train_cfg.weight_decay},
        {"params": vectors, "weight_decay": 0.0},
    ]
    fused = next(model.parameters()).device.type in ("cpu", "cuda")
    return torch.optim.AdamW(groups, lr=train_cfg.lr, betas=(0.9, 0.98), eps=1e-9, fused=fused)


def freeze(model: Transformer, prefixes: list[str]) -> list[torch.nn.Parameter]:
    """Parameters whose names start with one of `prefixes` (train.freeze) no longer learn;
    -> the others. A prefix that names none is an error listing the top-level names."""
    named = dict(model.named_parameters())  # a shared matrix once, by its first name

    def under(name: str, prefix: str) -> bool:
        return name == prefix or name.startswith(prefix + ".")

    for prefix in prefixes:
        if not any(under(name, prefix) for name in named):
            tops = ", ".join(dict.fromkeys(name.split(".")[0] for name in named))
            raise UserError(f"train.freeze: no parameter is named {prefix!r} or under it ({tops})")
    for name, parameter in named.items():
        parameter.requires_grad_(not any(under(name, prefix) for prefix in prefixes))
    return [parameter for parameter in named.values() if parameter.requires_grad]


def learning_rate(step: int, train_cfg: TrainConfig, elapsed_s: float = 0.0) -> float:
    """Linear warmup to train.lr, then cosine decay to train.min_lr at train.max_steps, or
    at train.max_minutes of training (`elapsed_s` so far), whichever is nearer."""
    lr, min_lr, warmup = train_cfg.lr, train_cfg.min_lr, train_cfg.warmup_steps
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, train_cfg.max_steps - warmup)
    if train_cfg.max_minutes:
        progress = max(progress, elapsed_s / (60 * train_cfg.max_minutes))
    return min_lr + 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * min(progress, 1.0)))


def schedule_warning(train_cfg: TrainConfig) -> str | None:
    """What is odd about the learning-rate schedule, if anything: training that stops during
    the warmup never reaches train.lr."""
    if train_cfg.max_steps >= train_cfg.warmup_steps:
        return None
    peak = learning_rate(train_cfg.max_steps - 1, train_cfg)
    return (
        f"train.max_steps ({train_cfg.max_steps:,}) is below train.warmup_steps "
        f"({train_cfg.warmup_steps:,}): the learning rate stops at {peak:.2e}, never reaching "
        f"train.lr ({train_cfg.lr:.2e}); lower train.warmup_steps"
    )
