"""The encoder-decoder Transformer (Vaswani et al., 2017), pre-layer-norm by default.

Data flow, with B = batch, S = source length, T = target length, D = d_model, V = vocab size:

    src (B, S) --embed+positions--> (B, S, D) --encoder layers--> memory (B, S, D)
    tgt (B, T) --embed+positions--> (B, T, D) --decoder layers--> (B, T, D) --> logits (B, T, V)
                                                      ^ each attends to memory

Each sublayer is wrapped as x + Dropout(Sublayer(LayerNorm(x))) ("pre-norm"): it trains
stably at higher learning rates without a long warmup, which is why most recent models use
it. A final LayerNorm closes each stack. model.norm: post wraps them as the paper does,
LayerNorm(x + Dropout(Sublayer(x))), with no final LayerNorm: the models of Marian (OPUS-MT)
are made so. The other settings that describe models made elsewhere (biases, activation,
embedding scale and LayerNorm, the position table's layout) are in seq2seq/model/config.py.

Masks (seq2seq/model/masks.py): encoder self-attention and decoder cross-attention hide source
padding; decoder self-attention hides target padding and the future (no-peek).

Dropout, in training only: model.dropout on the embeddings and on each sublayer's output,
model.attention_dropout on the attention weights, model.activation_dropout on the
activation's output inside the feed-forward sublayer.

Shared matrices (Transformer.share_matrices): the output projection is the target embedding
(model.tie_embeddings), and with one vocabulary for both languages the source embedding is
the target embedding (model.share_embeddings): with both, one (V, D) matrix does all three.
"""

import math
from functools import partial

import torch
from torch import nn

from seq2seq.model.attention import MultiHeadAttention
from seq2seq.model.config import ModelConfig
from seq2seq.model.dropout import Dropout
from seq2seq.model.kv_cache import DecoderCache, LayerCache
from seq2seq.model.masks import decoder_mask, padding_mask


def sinusoidal_positions(max_positions: int, d_model: int, layout: str = "interleaved"):
    """(max_positions, D) table of sin and cos of pos / 10000^(2i/D), i < D/2. Layout
    "interleaved": dimension pair (2i, 2i+1) is (sin, cos); "halves": dimension i is the sin,
    D/2 + i the cos (model.positions)."""
    position = torch.arange(max_positions, dtype=torch.float32)[:, None]  # (P, 1)
    frequency = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))  # (D/2,)
    sin, cos = torch.sin(position * frequency), torch.cos(position * frequency[: d_model // 2])
    if layout == "halves":
        return torch.cat([sin, cos], dim=1)
    table = torch.zeros(max_positions, d_model)
    table[:, 0::2], table[:, 1::2] = sin, cos
    return table


class Embedding(nn.Module):
    """Token ids (B, L) -> vectors (B, L, D): a learned embedding scaled by sqrt(D)
    (model.scale_embeddings), plus the fixed sinusoidal position of each token, then a
    LayerNorm where model.embedding_norm asks for one."""

    def __init__(self, vocab_size: int, cfg: ModelConfig):
        super().__init__()
        d_model = cfg.d_model
        self.tokens = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.tokens.weight, std=d_model**-0.5)
        table = sinusoidal_positions(cfg.max_positions, d_model, cfg.positions)
        self.register_buffer("positions", table, False)
        self.scale = math.sqrt(d_model) if cfg.scale_embeddings else 1.0
        self.norm = layer_norm(cfg) if cfg.embedding_norm else nn.Identity()
        self.dropout = Dropout(cfg.dropout)

    def forward(self, ids: torch.Tensor, start: int = 0) -> torch.Tensor:
        """ids: (B, L) at positions start .. start+L-1 -> (B, L, D)."""
        end = start + ids.size(1)
        if end > self.positions.size(0):
            raise ValueError(
                f"sequence of {end} pieces is longer than model.max_positions "
                f"({self.positions.size(0)})"
            )
        x = self.tokens(ids) * self.scale + self.positions[start:end]
        return self.dropout(self.norm(x))


ACTIVATIONS = {  # model.activation
    "relu": nn.ReLU,
    "gelu": nn.GELU,
    "gelu_tanh": lambda: nn.GELU(approximate="tanh"),
    "gelu_sigmoid": lambda: SigmoidGELU(),
    "swish": nn.SiLU,
}


class SigmoidGELU(nn.Module):
    """x * sigmoid(1.702 x): GELU's sigmoid approximation (Marian's "gelu")."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(1.702 * x)


def layer_norm(cfg: ModelConfig) -> nn.LayerNorm:
    return nn.LayerNorm(cfg.d_model, eps=cfg.norm_epsilon)


class FeedForward(nn.Module):
    """Position-wise: (B, L, D) -> (B, L, d_ff) -> activation -> Dropout -> (B, L, D)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        # net.0 and net.2 are the names checkpoints and the exports know the two layers by
        self.net = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.ffn_bias),
            ACTIVATIONS[cfg.activation](),
            nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.ffn_bias),
        )
        self.dropout = Dropout(cfg.activation_dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        expand, activation, contract = self.net
        return contract(self.dropout(activation(expand(x))))


def residual(x: torch.Tensor, sublayer, norm: nn.LayerNorm, dropout: Dropout, pre: bool):
    """One sublayer with its residual connection and LayerNorm, where model.norm puts it:
    pre: x + Dropout(f(LN(x))); post: LN(x + Dropout(f(x)))."""
    if pre:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


def attention(cfg: ModelConfig) -> MultiHeadAttention:
    return MultiHeadAttention(
        cfg.d_model, cfg.n_heads, cfg.attention_dropout, cfg.attention, cfg.attention_bias
    )


class EncoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = attention(cfg)
        self.ff = FeedForward(cfg)
        self.norm1, self.norm2 = layer_norm(cfg), layer_norm(cfg)
        self.dropout = Dropout(cfg.dropout)
        self.pre_norm = cfg.norm == "pre"

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """x: (B, S, D); src_mask: (B, 1, 1, S) -> (B, S, D)."""
        x = residual(x, partial(self.self_attn, mask=src_mask), self.norm1, self.dropout,
                     self.pre_norm)  # fmt: skip
        return residual(x, self.ff, self.norm2, self.dropout, self.pre_norm)


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn, self.cross_attn = attention(cfg), attention(cfg)
        self.ff = FeedForward(cfg)
        self.norm1, self.norm2, self.norm3 = (layer_norm(cfg) for _ in range(3))
        self.dropout = Dropout(cfg.dropout)
        self.pre_norm = cfg.norm == "pre"

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
        attend_back = partial(self.self_attn, mask=tgt_mask, cache=self_cache)
        x = residual(x, attend_back, self.norm1, self.dropout, self.pre_norm)
        attend_source = partial(self.cross_attn, memory=memory, mask=src_mask, cache=cross_cache)
        x = residual(x, attend_source, self.norm2, self.dropout, self.pre_norm)
        return residual(x, self.ff, self.norm3, self.dropout, self.pre_norm)


class Transformer(nn.Module):
    """The whole model. `pad_id` is the token id that marks padding (seq2seq.tokens.special.PAD
    in this project): the masks hide it."""

    def __init__(self, cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int, pad_id: int):
        super().__init__()
        self.cfg = cfg
        self.pad_id = pad_id
        self.src_embed = Embedding(src_vocab_size, cfg)
        self.tgt_embed = Embedding(tgt_vocab_size, cfg)
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.enc_layers))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.dec_layers))
        # pre-norm: a last LayerNorm on each stack's output (post-norm's layers end with one)
        final_norm = layer_norm if cfg.norm == "pre" else lambda _: nn.Identity()
        self.encoder_norm, self.decoder_norm = final_norm(cfg), final_norm(cfg)
        self.generator = nn.Linear(cfg.d_model, tgt_vocab_size, bias=cfg.output_bias)
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
