"""Attention masks: which keys each query may look at.

One convention everywhere in this project (the same as the boolean `attn_mask` of
torch.nn.functional.scaled_dot_product_attention):

    mask[b, h, i, j] is True  <=>  query i of sentence b may attend to key j.

Masks are boolean and broadcast against the attention scores of shape
(batch, heads, queries, keys); a size-1 dimension means "the same for all".
(torch.nn.MultiheadAttention uses the opposite convention, True = "blocked".)

Two kinds, combined with a logical AND:

* the padding mask hides the padding at the end of shorter sentences in a batch:
  shape (batch, 1, 1, keys), the same for every head and every query;
* the no-peek (causal) mask stops decoder position i from seeing the later positions j > i
  it is being trained to predict: shape (1, 1, queries, keys), lower triangular.

Example, a target batch of 2 with lengths 3 and 2 (P = padding):

    tokens            padding mask     no-peek mask     decoder self-attention mask
    [a  b  c]         [1 1 1]          [1 0 0]          sentence 0:  [1 0 0]   sentence 1:  [1 0 0]
    [d  e  P]         [1 1 0]          [1 1 0]                       [1 1 0]                [1 1 0]
                                       [1 1 1]                       [1 1 1]                [1 1 0]
"""

import torch


def padding_mask(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """(batch, length) token ids -> (batch, 1, 1, length) mask, False at padding (pad_id)."""
    return (tokens != pad_id)[:, None, None, :]


def no_peek_mask(length: int, device: torch.device | None = None) -> torch.Tensor:
    """(1, 1, length, length) mask, True on and below the diagonal: position i sees j <= i."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()[None, None]


def decoder_mask(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """(batch, length) target ids -> (batch, 1, length, length): padding AND no-peek."""
    return padding_mask(tokens, pad_id) & no_peek_mask(tokens.size(1), tokens.device)
