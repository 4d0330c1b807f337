"""The key/value cache that makes step-by-step decoding cheap.

Without a cache, each decoding step runs the decoder over the whole prefix again: step t
recomputes the keys and values of positions 0..t-1, which have not changed. With a cache,
step t feeds only the newest token (B, 1) through the decoder, and each attention layer
keeps what it needs from earlier steps:

* self-attention: the keys and values of every earlier position, growing by one per step,
  each (B, H, t, Dh);
* cross-attention: the keys and values of the encoder output, (B, H, S, Dh), computed at the
  first step and reused for the rest of the sentence.

`select` keeps only the given batch rows, in the given order: greedy decoding drops the
finished sentences with it (once half of the batch has finished), and beam search lets each
surviving beam take over its parent's row.
"""

from dataclasses import dataclass, field

import torch


@dataclass
class KVCache:
    """Keys and values of one attention layer, (B, H, positions, Dh) each; None before step 0."""

    keys: torch.Tensor | None = None
    values: torch.Tensor | None = None

    def append(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the newest positions; return the keys and values of all positions so far."""
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys = torch.cat([self.keys, keys], dim=2)
            self.values = torch.cat([self.values, values], dim=2)
        return self.keys, self.values

    def select(self, rows: torch.Tensor) -> None:
        if self.keys is not None:
            self.keys, self.values = self.keys[rows], self.values[rows]


@dataclass
class LayerCache:
    self_attn: KVCache = field(default_factory=KVCache)
    cross_attn: KVCache = field(default_factory=KVCache)


@dataclass
class DecoderCache:
    """Everything the decoder keeps between steps: one LayerCache per layer, and the number
    of positions already decoded (the position of the next token)."""

    layers: list[LayerCache]
    length: int = 0

    @classmethod
    def empty(cls, n_layers: int) -> "DecoderCache":
        return cls([LayerCache() for _ in range(n_layers)])

    def select(self, rows: torch.Tensor) -> None:
        """Keep only the given batch rows (the sentences still decoding)."""
        for layer in self.layers:
            layer.self_attn.select(rows)
            layer.cross_attn.select(rows)
