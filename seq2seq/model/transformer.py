"""The encoder-decoder Transformer (Vaswani et al., 2017), pre-layer-norm variant.

Data flow, with B = batch, S = source length, T = target length, D = d_model, V = vocab size:

    src (B, S) --embed+positions--> (B, S, D) --encoder layers--> memory (B, S, D)
    tgt (B, T) --embed+positions--> (B, T, D) --decoder layers--> (B, T, D) --> logits (B, T, V)
                                                      ^ each attends to memory

Each sublayer is wrapped as x + Dropout(Sublayer(LayerNorm(x))) ("pre-norm"): it trains
stably at higher learning rates without a long warmup, which is why most recent models use
it. A final LayerNorm closes each stack.

Masks (seq2seq/model/masks.py): encoder self-attention and decoder cross-attention hide source
padding; decoder self-attention hides target padding and the future (no-peek).

Dropout, in training only: model.dropout on the embeddings and on each sublayer's output,
model.attention_dropout on the attention weights, model.activation_dropout on the ReLU's
output inside the feed-forward sublayer.

Shared matrices (Transformer.share_matrices): the output projection is the target embedding
(model.tie_embeddings), and with one vocabulary for both languages the source embedding is
the target embedding (model.share_embeddings): with both, one (V, D) matrix does all three.
"""

import math

import torch
from torch import nn

from seq2seq.model.attention import MultiHeadAttention
from seq2seq.model.cache import DecoderCache, LayerCache
from seq2seq.model.config import ModelConfig
from seq2seq.model.dropout import Dropout
from seq2seq.model.masks import decoder_mask, padding_mask


def sinusoidal_positions(max_positions: int, d_model: int) -> torch.Tensor:
    """(max_positions, D) table: dimension pair (2i, 2i+1) is (sin, cos) of pos / 10000^(2i/D)."""
    position = torch.arange(max_positions, dtype=torch.float32)[:, None]  # (P, 1)
    frequency = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))  # (D/2,)
    table = torch.zeros(max_positions, d_model)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency[: d_model // 2])
    return table


class Embedding(nn.Module):
    """Token ids (B, L) -> vectors (B, L, D): a learned embedding scaled by sqrt(D), plus the
    fixed sinusoidal position of each token."""

    def __init__(self, vocab_size: int, d_model: int, max_positions: int, dropout: float):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.tokens.weight, std=d_model**-0.5)
        self.register_buffer("positions", sinusoidal_positions(max_positions, d_model), False)
        self.scale = math.sqrt(d_model)
        self.dropout = Dropout(dropout)

    def forward(self, ids: torch.Tensor, start: int = 0) -> torch.Tensor:
        """ids: (B, L) at positions start .. start+L-1 -> (B, L, D)."""
        end = start + ids.size(1)
        if end > self.positions.size(0):
            raise ValueError(
                f"sequence of {end} pieces is longer than model.max_positions "
                f"({self.positions.size(0)})"
            )
        return self.dropout(self.tokens(ids) * self.scale + self.positions[start:end])


class FeedForward(nn.Module):
    """Position-wise: (B, L, D) -> (B, L, d_ff) -> ReLU -> Dropout -> (B, L, D)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float):
        super().__init__()
        # net.0 and net.2 are the names checkpoints and the exports know the two layers by
        self.net = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.dropout = Dropout(dropout)  # model.activation_dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        expand, relu, contract = self.net
        return contract(self.dropout(relu(expand(x))))


class EncoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(
            cfg.d_model, cfg.n_heads, cfg.attention_dropout, cfg.attention
        )
        self.ff = FeedForward(cfg.d_model, cfg.d_ff, cfg.activation_dropout)
        self.norm1, self.norm2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.dropout = Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """x: (B, S, D); src_mask: (B, 1, 1, S) -> (B, S, D)."""
        x = x + self.dropout(self.self_attn(self.norm1(x), mask=src_mask))
        return x + self.dropout(self.ff(self.norm2(x)))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(
            cfg.d_model, cfg.n_heads, cfg.attention_dropout, cfg.attention
        )
        self.cross_attn = MultiHeadAttention(
            cfg.d_model, cfg.n_heads, cfg.attention_dropout, cfg.attention
        )
        self.ff = FeedForward(cfg.d_model, cfg.d_ff, cfg.activation_dropout)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(cfg.d_model) for _ in range(3))
        self.dropout = Dropout(cfg.dropout)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        tgt_mask: torch.Tensor | None,
        src_mask: torch.Tensor | None,
        cache: LayerCache | None = None,
    ) -> torch.Tensor:
        """x: (B, T, D); memory: (B, S, D); tgt_mask: (B, 1, T, T); src_mask: (B, 1, 1, S)."""
        self_cache, cross_cache = (cache.self_attn, cache.cross_attn) if cache else (None, None)
        x = x + self.dropout(self.self_attn(self.norm1(x), mask=tgt_mask, cache=self_cache))
        x = x + self.dropout(
            self.cross_attn(self.norm2(x), memory, mask=src_mask, cache=cross_cache)
        )
        return x + self.dropout(self.ff(self.norm3(x)))


class Transformer(nn.Module):
    """The whole model. `pad_id` is the token id that marks padding (seq2seq.text.special.PAD
    in this project): the masks hide it."""

    def __init__(self, cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int, pad_id: int):
        super().__init__()
        self.cfg = cfg
        self.pad_id = pad_id
        self.src_embed = Embedding(src_vocab_size, cfg.d_model, cfg.max_positions, cfg.dropout)
        self.tgt_embed = Embedding(tgt_vocab_size, cfg.d_model, cfg.max_positions, cfg.dropout)
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.enc_layers))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.dec_layers))
        self.encoder_norm = nn.LayerNorm(cfg.d_model)
        self.decoder_norm = nn.LayerNorm(cfg.d_model)
        self.generator = nn.Linear(cfg.d_model, tgt_vocab_size, bias=False)
        self.share_matrices()

    def share_matrices(self) -> None:
        """One matrix where the config asks for it: the source embedding is the target
        embedding (model.share_embeddings, one vocabulary for both sides), and the target
        embedding is the output projection (model.tie_embeddings): a token's vector is also
        what the decoder's output is compared with to score that token."""
        if self.cfg.share_embeddings:
            sizes = self.src_embed.tokens.num_embeddings, self.tgt_embed.tokens.num_embeddings
            if sizes[0] != sizes[1]:
                raise ValueError(f"model.share_embeddings needs one vocabulary, got sizes {sizes}")
            self.tgt_embed.tokens.weight = self.src_embed.tokens.weight
        if self.cfg.tie_embeddings:
            self.generator.weight = self.tgt_embed.tokens.weight

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """src: (B, S) ids -> memory (B, S, D) and the source padding mask (B, 1, 1, S)."""
        src_mask = padding_mask(src, self.pad_id)
        x = self.src_embed(src)
        for layer in self.encoder:
            x = layer(x, src_mask)
        return self.encoder_norm(x), src_mask

    def decode(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None,
        cache: DecoderCache | None = None,
    ) -> torch.Tensor:
        """tgt: (B, T) ids starting with BOS -> logits (B, T, V) for the next token at each step.

        With a cache, tgt is only the newest token of each sentence, (B, 1): the keys and values
        of the earlier ones come from the cache, and no mask is needed, since the new token may
        see every earlier position and there are no later ones yet.
        """
        if cache is None:
            tgt_mask = decoder_mask(tgt, self.pad_id)
            start, layer_caches = 0, [None] * len(self.decoder)
        else:
            assert tgt.size(1) == 1, "with a cache, decode one new token at a time"
            tgt_mask, start, layer_caches = None, cache.length, cache.layers
            cache.length += tgt.size(1)
        x = self.tgt_embed(tgt, start)
        for layer, layer_cache in zip(self.decoder, layer_caches, strict=True):
            x = layer(x, memory, tgt_mask, src_mask, layer_cache)
        return self.generator(self.decoder_norm(x))

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: (B, S) source and (B, T) target input ids -> (B, T, V) logits."""
        memory, src_mask = self.encode(src)
        return self.decode(tgt, memory, src_mask)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
