"""Dropout: in training, each value is zeroed with probability p and the others are scaled by
1 / (1 - p), so that the expected output is the input; outside training, nothing.

    x (any shape) -> x * mask,  mask = 0 where dropped, 1 / (1 - p) where kept

torch's own dropout on the CPU draws one random float per value (`bernoulli_`): in a training
step of the Multi30k recipe's model that is an eighth of the step's time. Here, on the CPU,
one 64-bit random number from torch's generator gives the masks of four values, 16 bits each
(p is rounded to a multiple of 1 / 65,536): about a third of the time, forward and backward.
The masks follow from torch's seed as torch's do, so a resumed run draws the same ones. On a
GPU, torch's fused kernel is the faster, and is what runs.
"""

import torch
from torch import nn

LEVELS = 1 << 16  # a 16-bit draw: p is rounded to a multiple of 1 / LEVELS


def kept(shape: torch.Size, p: float) -> torch.Tensor:
    """A boolean mask of `shape`, True with probability 1 - p (to the nearest 1 / LEVELS)."""
    count = shape.numel()
    bits = torch.empty((count + 3) // 4, dtype=torch.int64).random_(-(2**63), None)
    draws = bits.view(torch.int16)[:count].view(shape)  # uniform in [-32768, 32767]
    return draws >= round(p * LEVELS) - LEVELS // 2


class Dropout(nn.Module):
    """nn.Dropout, with the cheaper masks above on the CPU."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.device.type != "cpu":
            return nn.functional.dropout(x, self.p, training=True)
        mask = (kept(x.shape, self.p) * (1 / (1 - self.p))).to(x.dtype)
        return x * mask

    def extra_repr(self) -> str:
        return f"p={self.p}"
