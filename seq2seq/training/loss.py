"""The loss of a batch: teacher-forced cross-entropy, padding ignored.

    src (B, S), tgt_in (B, T) -> the model -> logits (B, T, V)
    logits vs tgt_out (B, T)  -> cross-entropy with label smoothing -> one number

Training takes the sum over the target tokens of a step (seq2seq/train.py divides it by their
count over all micro-batches and processes); validation the sum without label smoothing.
"""

import torch
import torch.nn.functional as F

from seq2seq.text.special import PAD


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
