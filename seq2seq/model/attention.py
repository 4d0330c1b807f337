"""Scaled dot-product attention and multi-head attention.

Shapes, with B = batch, H = heads, Tq = queries, Tk = keys, D = d_model, Dh = D / H:

    q: (B, H, Tq, Dh)   k: (B, H, Tk, Dh)   v: (B, H, Tk, Dh)   mask: broadcasts to (B, H, Tq, Tk)

    scores  = q @ k^T / sqrt(Dh)                 (B, H, Tq, Tk)  how well query i matches key j
    weights = softmax(scores over the keys)      (B, H, Tq, Tk)  each row sums to 1
    output  = weights @ v                        (B, H, Tq, Dh)  a weighted average of values

The mask follows seq2seq/model/masks.py: True = may attend. Blocked scores are set to the most
negative finite number of the dtype (not -inf, and not a constant like -1e9 that overflows
in float16), so a query whose keys are all blocked gets a uniform row instead of NaN; its
weights are then zeroed, so it outputs zeros. That is what torch's fused kernel returns for
such rows too, and the two paths below agree on them.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from seq2seq.model.kv_cache import KVCache


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(d_k)) v, step by step; returns (output, weights)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (..., Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)  # fully blocked rows become zeros
    if dropout > 0.0:
        weights = F.dropout(weights, dropout)
    return weights @ v, weights


def fused_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, dropout: float
) -> torch.Tensor:
    """torch's fused kernel for the same computation; only the output. Under the CPU's bf16
    autocast it runs in fp32: the CPU's bf16 kernel takes 4x the time of its fp32 one,
    forward and backward, while the matrix products around it gain 2-3x from bf16."""
    if q.is_cpu and torch.is_autocast_enabled("cpu"):
        with torch.autocast("cpu", enabled=False):
            q, k, v = q.float(), k.float(), v.float()
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)


class MultiHeadAttention(nn.Module):
    """H attention heads side by side, each on its own Dh-wide slice of the projections.

    The input projections are one (3D, D) matrix, laid out like torch.nn.MultiheadAttention's
    `in_proj_weight`: rows [0, D) make queries, [D, 2D) keys, [2D, 3D) values. Self-attention
    computes all three with a single matrix multiply; cross-attention (queries from the
    decoder, keys and values from the encoder output) uses the query rows on one input and the
    key/value rows on the other.
    """

    def __init__(
        self, d_model: int, n_heads: int, dropout: float = 0.0, backend: str = "sdpa", bias=True
    ):
        super().__init__()
        assert d_model % n_heads == 0, "d_model must be divisible by n_heads"
        assert backend in ("sdpa", "math")
        self.d_model, self.n_heads, self.dropout, self.backend = d_model, n_heads, dropout, backend
        self.in_proj = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        # With record = True, each call keeps its weights (B, H, Tq, Tk) here, for pictures
        # (seq2seq/plot.py); the fused kernel does not return them, so the math path runs.
        self.record = False
        self.weights: torch.Tensor | None = None

    def split_heads(self, x: torch.Tensor, parts: int = 1) -> tuple[torch.Tensor, ...]:
        """(B, T, parts * D) -> `parts` tensors (B, H, T, Dh), views without a copy: in each
        part, head h gets features [h*Dh, (h+1)*Dh). One view and one permute for all the parts
        (queries, keys and values) instead of a chunk and a transpose each: decoding step by
        step runs this for one token at a time, where every tensor operation costs more than
        its arithmetic."""
        batch, length, _ = x.shape
        return x.view(batch, length, parts, self.n_heads, -1).permute(2, 0, 3, 1, 4).unbind(0)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, H, T, Dh) -> (B, T, D): the heads' outputs side by side again."""
        batch, _, length, _ = x.shape
        return x.transpose(1, 2).reshape(batch, length, self.d_model)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        """x: (B, Tq, D) queries; memory: (B, Tk, D) keys/values (None: x itself) -> (B, Tq, D).

        With a cache (decoding step by step), self-attention appends the keys and values of
        the new positions to those of the earlier ones, and cross-attention computes the
        encoder's keys and values once, at the first step.
        """
        if memory is None:  # self-attention: one matmul for queries, keys and values
            q, k, v = self.split_heads(self.in_proj(x), parts=3)
            if cache is not None:
                k, v = cache.append(k, v)  # (B, H, all positions so far, Dh)
        else:  # cross-attention
            d = self.d_model
            weight, bias = self.in_proj.weight, self.in_proj.bias
            bias_q, bias_kv = (None, None) if bias is None else (bias[:d], bias[d:])
            (q,) = self.split_heads(F.linear(x, weight[:d], bias_q))
            if cache is not None and cache.keys is not None:
                k, v = cache.keys, cache.values
            else:
                kv = F.linear(memory, weight[d:], bias_kv)
                k, v = self.split_heads(kv, parts=2)
                if cache is not None:
                    cache.append(k, v)
        dropout = self.dropout if self.training else 0.0
        if self.backend == "sdpa" and not self.record:
            out = fused_attention(q, k, v, mask, dropout)
        else:
            out, weights = scaled_dot_product_attention(q, k, v, mask, dropout)
            if self.record:
                self.weights = weights.detach()
        return self.out_proj(self.merge_heads(out))
