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

Fine-tuning with train.keep_teacher = k trains toward (1 - k) x that smoothed target + k x the
start model's own distribution for the token (Khayrallah et al. 2018: what it knew, kept
without its training data): `teacher` is that model, frozen, run on the same batch.

Training takes the sum over the target tokens of a step (seq2seq/train.py divides it by their
count over all micro-batches and processes); validation the sum without label smoothing.
"""

import torch
import torch.nn.functional as F

from seq2seq.tokens.special import BOS, EOS, PAD


def batch_loss(
    model: torch.nn.Module,
    batch: tuple[torch.Tensor, ...],
    label_smoothing: float,
    reduction: str = "mean",
    teacher: torch.nn.Module | None = None,
    keep: float = 0.0,
) -> torch.Tensor:
    """Cross-entropy of one (src, tgt_in, tgt_out) batch: the mean per target token, or with
    reduction="sum" the sum over them (padding never counts); with a teacher, toward its
    distribution for a share `keep` of the target (train.keep_teacher)."""
    src, tgt_in, tgt_out = batch
    logits = model(src, tgt_in)  # (B, T, V)
    taught = None
    if teacher is not None:
        with torch.no_grad():
            taught = teacher(src, tgt_in).flatten(0, 1)  # (B*T, V)
    return smoothed_cross_entropy(
        logits.flatten(0, 1), tgt_out.flatten(), label_smoothing, reduction, taught, keep
    )


def smoothed_cross_entropy(
    logits: torch.Tensor,
    targets: torch.Tensor,
    eps: float,
    reduction: str,
    teacher_logits: torch.Tensor | None = None,
    keep: float = 0.0,
) -> torch.Tensor:
    """logits (N, V), targets (N,) -> -(1 - eps) log p(target) - eps * the mean of log p over
    the ordinary tokens (all but PAD, BOS, EOS); with teacher_logits (N, V), that times
    1 - keep, plus keep x the cross-entropy toward the teacher's softmax. Rows whose target is
    PAD do not count."""
    losses = SmoothedCrossEntropy.apply(logits, targets, eps, teacher_logits, keep)  # (N,)
    total = losses.sum()
    return total if reduction == "sum" else total / (targets != PAD).sum().clamp(min=1)


class SmoothedCrossEntropy(torch.autograd.Function):
    """The loss of each row and its gradient, written out, with q the smoothed target
    (1 - eps on the reference, eps / (V - 3) on each ordinary token; with a teacher, that
    times 1 - keep plus keep x the teacher's softmax) and p = softmax(logits):

        loss_i = -sum_v q_v log p_v          d loss_i / d logits = p - q

    Autograd through log_softmax, gather and indexing would make and add up four (N, V)
    tensors in the backward pass; here it is one exp and two in-place updates. N x V is the
    largest tensor of a training step (2,000 target tokens x 10,000 pieces: 80 MB), so this
    takes a fifth off a CPU step. The sums run in fp32 at least, under autocast too.
    """

    @staticmethod
    def forward(ctx, logits, targets, eps: float, teacher_logits=None, keep: float = 0.0):
        log_p = F.log_softmax(logits, dim=-1, dtype=at_least_fp32(logits))  # (N, V)
        loss = -log_p.gather(1, targets[:, None])[:, 0]  # (N,)
        if eps:  # -mean log p over the V - 3 ordinary tokens: all of them, less PAD, BOS, EOS
            ordinary = log_p.sum(-1) - log_p[:, [PAD, BOS, EOS]].sum(-1)
            loss = (1 - eps) * loss - eps * ordinary / (log_p.size(-1) - 3)
        teacher_p = None
        if teacher_logits is not None:  # (1 - keep) x the above + keep x -sum p_teacher log p
            teacher_p = F.softmax(teacher_logits, dim=-1, dtype=log_p.dtype)
            loss = (1 - keep) * loss - keep * (teacher_p * log_p).sum(-1)
        kept = targets != PAD
        ctx.save_for_backward(log_p, targets, kept, teacher_p)
        ctx.eps, ctx.keep, ctx.dtype = eps, keep, logits.dtype
        return loss * kept

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        log_p, targets, kept, teacher_p = ctx.saved_tensors
        eps, vocab = ctx.eps, log_p.size(-1)
        share = 1 - ctx.keep if teacher_p is not None else 1.0  # the smoothed target's
        gradient = log_p.exp()  # p, then p - q
        if eps:
            gradient -= share * eps / (vocab - 3)
            gradient[:, [PAD, BOS, EOS]] += share * eps / (vocab - 3)
        minus_reference = gradient.new_full((len(targets), 1), -share * (1 - eps))
        gradient.scatter_add_(1, targets[:, None], minus_reference)
        if teacher_p is not None:
            gradient -= ctx.keep * teacher_p
        gradient *= (grad * kept)[:, None]
        return gradient.to(ctx.dtype), None, None, None, None


def at_least_fp32(x: torch.Tensor) -> torch.dtype:
    return torch.promote_types(x.dtype, torch.float32)
