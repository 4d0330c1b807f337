"""The loss of a batch: teacher-forced cross-entropy with label smoothing, padding ignored.

    src (B, S), tgt_in (B, T) -> the model -> logits (B, T, V)
    logits vs tgt_out (B, T)  -> cross-entropy against the smoothed target -> one number

Label smoothing trains towards 1 - eps on the reference token and eps spread evenly over the
ordinary tokens: not over PAD and BOS, which are never an output, nor over EOS. Spread over
EOS too (as torch's cross_entropy(label_smoothing=eps) does), it teaches the model that a
sentence may end anywhere with probability eps / V: with a small vocabulary EOS is then among
the few best candidates at nearly every step, and a beam search that stops once beam_size
hypotheses have ended (CTranslate2's with a length penalty, so Argos Translate's and
LibreTranslate's) returns a cut-off sentence (docs/export.md, Argos Translate).

Training takes the sum over the target tokens of a step (seq2seq/train.py divides it by their
count over all micro-batches and processes); validation the sum without label smoothing.
"""

import torch
import torch.nn.functional as F

from seq2seq.text.special import BOS, EOS, PAD


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
    return smoothed_cross_entropy(
        logits.flatten(0, 1), tgt_out.flatten(), label_smoothing, reduction
    )


def smoothed_cross_entropy(
    logits: torch.Tensor, targets: torch.Tensor, eps: float, reduction: str
) -> torch.Tensor:
    """logits (N, V), targets (N,) -> -(1 - eps) log p(target) - eps * the mean of log p over
    the ordinary tokens (all but PAD, BOS, EOS); rows whose target is PAD do not count."""
    dtype = torch.promote_types(logits.dtype, torch.float32)  # fp32 at least, under autocast too
    log_probs = F.log_softmax(logits.to(dtype), dim=-1)  # (N, V)
    kept = targets != PAD  # (N,)
    nll = -log_probs.gather(1, targets[:, None])[:, 0]  # (N,)
    if eps:  # the mean over the V - 3 ordinary tokens: the sum over all, less PAD, BOS, EOS
        special = log_probs[:, [PAD, BOS, EOS]].sum(-1)  # (N,)
        spread = -(log_probs.sum(-1) - special) / (logits.size(-1) - 3)  # (N,)
        nll = (1 - eps) * nll + eps * spread
    total = nll[kept].sum()
    return total if reduction == "sum" else total / kept.sum().clamp(min=1)
