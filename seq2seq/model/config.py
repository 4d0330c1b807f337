"""The model's settings: the `model` section of an experiment's config, kept beside the model
so that this folder reads, and copies, on its own (as nanoGPT keeps GPTConfig beside GPT).
Each option is described once, by the comment beside its field (docs/configuration.md is
written from them); seq2seq/config.py checks their ranges.
"""

from dataclasses import dataclass
from typing import Annotated, Literal


@dataclass
class ModelConfig:
    """The encoder-decoder Transformer (seq2seq/model/transformer.py)."""

    d_model: Annotated[int, "positive"] = 128  # width of every token vector
    # attention heads (d_model must be divisible by n_heads)
    n_heads: Annotated[int, "positive"] = 4
    enc_layers: Annotated[int, "at least 1"] = 2  # encoder layers
    dec_layers: Annotated[int, "at least 1"] = 2  # decoder layers
    d_ff: Annotated[int, "positive"] = 512  # width of the feed-forward sublayer
    # on the embeddings and on each sublayer's output before the residual sum, as in the
    # paper; 0 suits the generated corpus (and is faster on a CPU), 0.1-0.3 real text
    dropout: Annotated[float, "in [0, 1)"] = 0.0
    # on the attention weights (costly on CPU: (B, H, L, L) masks)
    attention_dropout: Annotated[float, "in [0, 1)"] = 0.0
    # inside the feed-forward sublayer, on the ReLU's output (fairseq's activation_dropout;
    # the Annotated Transformer and OpenNMT-py put their dropout there too)
    activation_dropout: Annotated[float, "in [0, 1)"] = 0.0
    # longest sequence the position table covers, in pieces
    max_positions: Annotated[int, "at least 2"] = 256
    # sdpa: torch.nn.functional.scaled_dot_product_attention (fused kernels) | math: the
    # explicit softmax(QK^T / sqrt(d_k)) V of seq2seq/model/attention.py
    attention: Literal["sdpa", "math"] = "sdpa"
    tie_embeddings: bool = True  # one matrix for the target embedding and the output projection
    # one matrix for the source and the target embeddings (needs vocab.joint: true); with
    # tie_embeddings, one for all three, as in Vaswani et al.
    share_embeddings: bool = False

    # The settings below describe models made elsewhere (python -m seq2seq.import_model reads
    # them from a CTranslate2 model); each default is ours.
    # where each sublayer's LayerNorm sits: pre: x + f(LN(x)), a final LayerNorm closing each
    # stack (ours, OpenNMT-py's) | post: LN(x + f(x)), as in the paper and Marian's models
    norm: Literal["pre", "post"] = "pre"
    norm_epsilon: Annotated[float, "positive"] = 1e-5  # every LayerNorm's epsilon
    # the feed-forward sublayer's: relu | gelu (erf) | gelu_tanh (its tanh approximation) |
    # gelu_sigmoid (x * sigmoid(1.702 x), Marian's "gelu") | swish (x * sigmoid(x))
    activation: Literal["relu", "gelu", "gelu_tanh", "gelu_sigmoid", "swish"] = "relu"
    attention_bias: bool = True  # biases in the attention projections (OpenNMT-py 3: none)
    ffn_bias: bool = True  # biases in the feed-forward layers (OpenNMT-py 3: none)
    output_bias: bool = False  # a bias in the output projection (OpenNMT-py's, Marian's)
    scale_embeddings: bool = True  # token embeddings times sqrt(d_model) before the positions
    embedding_norm: bool = False  # a LayerNorm on embeddings + positions (some Marian models)
    # the sinusoidal table's layout: interleaved: dimensions (2i, 2i+1) are (sin, cos) of the
    # same frequency (ours, OpenNMT-py's) | halves: the sines, then the cosines (Marian's)
    positions: Literal["interleaved", "halves"] = "interleaved"
    source_eos: bool = True  # EOS closes every source sentence (OpenNMT-py's models: no EOS)

    @property
    def longest_source(self) -> int:
        """The most source pieces the model takes: its positions, less one for the EOS that
        source_eos appends."""
        return self.max_positions - int(self.source_eos)

    @property
    def longest_output(self) -> int:
        """The most pieces a translation can have: its positions, less one for the BOS the
        decoder starts from."""
        return self.max_positions - 1
