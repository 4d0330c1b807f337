"""The training loss: torch's cross-entropy without smoothing; with it, the smoothed target
spares PAD, BOS and EOS, so that the model never learns that a sentence may end anywhere."""

import pytest
import torch
import torch.nn.functional as F

from seq2seq.tokens.special import BOS, EOS, PAD
from seq2seq.training.loss import smoothed_cross_entropy


def example(vocab: int = 12) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(50, vocab, generator=generator, dtype=torch.float64)
    targets = torch.randint(0, vocab, (50,), generator=generator)
    targets[:5] = PAD  # padding: never counts
    return logits, targets


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_without_smoothing_it_is_torchs_cross_entropy(reduction):
    logits, targets = example()
    expected = F.cross_entropy(logits, targets, ignore_index=PAD, reduction=reduction)
    assert torch.allclose(smoothed_cross_entropy(logits, targets, 0.0, reduction), expected)


def test_smoothing_spreads_eps_over_the_ordinary_tokens_only():
    """Against the smoothed target written out: 1 - eps on the reference, eps / (V - 3) on
    every token but PAD, BOS and EOS, and nothing on those three."""
    logits, targets = example()
    eps, vocab = 0.1, logits.size(-1)
    target = torch.full_like(logits, eps / (vocab - 3))
    target[:, [PAD, BOS, EOS]] = 0.0
    target[torch.arange(len(targets)), targets] += 1 - eps
    kept = targets != PAD
    expected = -(target * F.log_softmax(logits, -1)).sum(-1)[kept].sum()
    assert torch.allclose(smoothed_cross_entropy(logits, targets, eps, "sum"), expected)


def trained_eos_probability(loss) -> float:
    """The probability of EOS that minimising `loss` over free logits settles at, for a
    token whose reference is an ordinary one."""
    logits = torch.zeros(1, 12, requires_grad=True)
    optimizer = torch.optim.Adam([logits], lr=0.1)
    for _ in range(500):
        optimizer.zero_grad()
        loss(logits, torch.tensor([5])).backward()
        optimizer.step()
    return float(logits.detach().softmax(-1)[0, EOS])


def test_trained_on_it_eos_goes_to_zero_where_a_sentence_does_not_end():
    """torch's smoothing keeps eps / V on EOS everywhere (0.1 / 12 here); ours drives it
    towards 0."""
    ours = trained_eos_probability(lambda x, t: smoothed_cross_entropy(x, t, 0.1, "sum"))
    torchs = trained_eos_probability(lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1))
    assert torchs == pytest.approx(0.1 / 12, rel=0.05)
    assert ours < 0.1 * torchs  # 0.0003 after these 500 steps, and falling


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_its_gradient_is_autograds_through_log_softmax(eps):
    """The gradient written out in SmoothedCrossEntropy.backward against autograd's through
    the loss as a formula (the smoothed target of the test above)."""
    logits, targets = example()
    logits.requires_grad_(True)
    smoothed_cross_entropy(logits, targets, eps, "mean").backward()
    ours, logits.grad = logits.grad, None
    vocab = logits.size(-1)
    target = torch.full_like(logits, eps / (vocab - 3))
    target[:, [PAD, BOS, EOS]] = 0.0
    target[torch.arange(len(targets)), targets] += 1 - eps
    kept = targets != PAD
    (-(target * F.log_softmax(logits, -1)).sum(-1)[kept].mean()).backward()
    assert torch.allclose(ours, logits.grad)
    few = logits.detach()[:10].clone().requires_grad_()  # 5 PAD rows, 5 others
    assert torch.autograd.gradcheck(
        lambda x: smoothed_cross_entropy(x, targets[:10], eps, "sum"), (few,)
    )


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_a_teacher_mixes_its_distribution_into_the_target(eps):
    """train.keep_teacher = k: the loss and its gradient are those of the target (1 - k) x
    the smoothed one + k x the teacher's softmax, written out and differentiated by autograd."""
    logits, targets = example()
    teacher = torch.randn(logits.shape, generator=torch.Generator().manual_seed(1),
                          dtype=logits.dtype)  # fmt: skip
    keep, vocab = 0.4, logits.size(-1)
    logits.requires_grad_(True)
    loss = smoothed_cross_entropy(logits, targets, eps, "sum", teacher, keep)
    loss.backward()
    ours, logits.grad = logits.grad, None
    target = torch.full_like(logits, eps / (vocab - 3))
    target[:, [PAD, BOS, EOS]] = 0.0
    target[torch.arange(len(targets)), targets] += 1 - eps
    target = (1 - keep) * target + keep * teacher.softmax(-1)
    kept = targets != PAD
    expected = -(target * F.log_softmax(logits, -1)).sum(-1)[kept].sum()
    expected.backward()
    assert torch.allclose(loss, expected)
    assert torch.allclose(ours, logits.grad)
