"""Dropout with the CPU's cheaper masks: it drops a share p of the values, scales the others by
1 / (1 - p) as torch's does, passes its gradient through the same mask, follows torch's seed,
keeps the input's dtype, and does nothing outside training."""

import pytest
import torch
import torch.nn.functional as F

from seq2seq.model.dropout import Dropout


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_it_drops_a_share_p_and_scales_the_rest(p):
    torch.manual_seed(0)
    x = torch.ones(1000, 1001)  # an odd count: the last draw is used in part
    y = Dropout(p).train()(x)
    dropped = float((y == 0).float().mean())
    assert dropped == pytest.approx(p, abs=0.003)  # 1M draws: the standard error is < 0.0005
    assert torch.allclose(y[y != 0], torch.tensor(1 / (1 - p)))
    assert float(y.mean()) == pytest.approx(1.0, abs=0.01)
    torch_dropped = float((F.dropout(x, p) == 0).float().mean())  # the same share as torch's
    assert dropped == pytest.approx(torch_dropped, abs=0.004)


def test_its_draws_are_independent_of_the_position():
    """Each of the four 16-bit parts of a 64-bit draw masks its own value: neighbours are
    dropped together no more often than chance says."""
    torch.manual_seed(0)
    y = Dropout(0.5).train()(torch.ones(400_000))
    kept = (y != 0).float().view(-1, 4)
    assert torch.allclose(kept.mean(0), torch.tensor(0.5), atol=0.005)
    together = (kept[:, :-1] == kept[:, 1:]).float().mean()
    assert float(together) == pytest.approx(0.5, abs=0.005)


def test_the_gradient_goes_through_the_kept_values_only():
    x = torch.randn(64, 32, requires_grad=True)
    torch.manual_seed(1)
    y = Dropout(0.3).train()(x)
    y.sum().backward()
    assert torch.equal(x.grad, (y != 0).float() / 0.7)


def test_the_seed_fixes_the_mask_and_the_dtype_stays():
    x = torch.randn(8, 16, dtype=torch.bfloat16)
    torch.manual_seed(3)
    first = Dropout(0.2).train()(x)
    torch.manual_seed(3)
    assert torch.equal(first, Dropout(0.2).train()(x)) and first.dtype == torch.bfloat16
    assert not torch.equal(first, Dropout(0.2).train()(x))  # the next draw differs


def test_outside_training_or_at_zero_it_is_the_identity():
    x = torch.randn(8, 16)
    assert Dropout(0.5).eval()(x) is x
    assert Dropout(0.0).train()(x) is x
