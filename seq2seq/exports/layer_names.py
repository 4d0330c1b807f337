"""Our Transformer's weights by name (seq2seq/model/transformer.py's state_dict): the one
table that every export (ctranslate2.py, huggingface.py) and the import (importing.py) walk,
each naming its own format's weight beside each of ours.

    stacks(cfg) -> (encoder, decoder), each a Stack:
      side      "encoder" | "decoder"
      embed     "src_embed" | "tgt_embed": .tokens.weight (V, D), .positions (P, D) a buffer,
                .norm with model.embedding_norm
      layers    each layer's sublayers, in order: self_attn, (the decoder's) cross_attn, ff
      norm      "encoder_norm" | "decoder_norm": the final LayerNorm of a pre-norm stack
    a Sublayer (D = d_model, F = d_ff):
      kind      "self_attn" | "cross_attn" | "ff"
      norm      the LayerNorm before it: "decoder.0.norm2"
      into      the linear layer reading the residual stream: "decoder.0.cross_attn.in_proj"
                (3D, D), q, k, v rows in that order; "decoder.0.ff.net.0" (F, D)
      out_of    the linear layer writing it: "decoder.0.cross_attn.out_proj" (D, D);
                "decoder.0.ff.net.2" (D, F)
    GENERATOR   the output projection (Vt, D)

A linear layer's weights are NAME.weight and (model.attention_bias, ffn_bias, output_bias)
NAME.bias; a LayerNorm's NAME.weight and NAME.bias.
"""

from typing import NamedTuple

from seq2seq.model.config import ModelConfig

GENERATOR = "generator"
SUBLAYERS = {"encoder": ("self_attn", "ff"), "decoder": ("self_attn", "cross_attn", "ff")}
EMBEDDINGS = {"encoder": "src_embed", "decoder": "tgt_embed"}
LINEARS = {"self_attn": ("in_proj", "out_proj"), "cross_attn": ("in_proj", "out_proj"),
           "ff": ("net.0", "net.2")}  # fmt: skip


class Sublayer(NamedTuple):
    kind: str
    norm: str
    into: str
    out_of: str


class Stack(NamedTuple):
    side: str
    embed: str
    layers: list[list[Sublayer]]
    norm: str


def sublayer(side: str, layer: int, number: int, kind: str) -> Sublayer:
    """The `number`th sublayer (from 0) of layer `layer` of the `side` stack."""
    into, out_of = LINEARS[kind]
    name = f"{side}.{layer}.{kind}"
    return Sublayer(kind, f"{side}.{layer}.norm{number + 1}", f"{name}.{into}", f"{name}.{out_of}")


def stacks(cfg: ModelConfig) -> tuple[Stack, Stack]:
    """The encoder's and the decoder's names, for a model of `cfg`'s layers."""

    def stack(side: str, count: int) -> Stack:
        layers = [
            [sublayer(side, i, number, kind) for number, kind in enumerate(SUBLAYERS[side])]
            for i in range(count)
        ]
        return Stack(side, EMBEDDINGS[side], layers, f"{side}_norm")

    return stack("encoder", cfg.enc_layers), stack("decoder", cfg.dec_layers)
