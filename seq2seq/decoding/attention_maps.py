"""The attention weights of one translation: every layer and head, with the tokens they relate.

    sentence -> source ids (cut to fit)          -> its translation (greedy, search_batch)
    the model once more on (source, BOS + translation), each MultiHeadAttention recording
    its weights (1, H, Tq, Tk)
      -> [AttentionMap(kind, layer, weights (H, Tq, Tk), query tokens, key tokens)]

Three kinds: "encoder self" (source x source) in each encoder layer, "decoder self" (output x
output: the no-peek triangle) and "cross" (output x source) in each decoder layer. Rows are
the queries, columns the keys they attend to; each row sums to 1. The warnings are those of
translate (unknown words, an input cut to fit).

No matplotlib here: `python -m seq2seq.plot attention` draws these maps as a PNG, and the
service (seq2seq/serving/batcher.py) sends them to its page as JSON.
"""

from dataclasses import dataclass

import torch

from seq2seq.checkpoint import Checkpoint
from seq2seq.decoding.batches import search_batch
from seq2seq.decoding.warnings import numbered, source_warnings
from seq2seq.model.attention import MultiHeadAttention
from seq2seq.support.errors import UserError
from seq2seq.tokens.batching import source_tensor
from seq2seq.tokens.special import BOS


@dataclass
class AttentionMap:
    kind: str  # "encoder self", "decoder self" or "cross"
    layer: int  # counted from 1
    weights: torch.Tensor  # (heads, queries, keys), on the CPU
    queries: list[str]  # the tokens of the rows
    keys: list[str]  # the tokens of the columns

    @property
    def title(self) -> str:
        """As in the plot: "encoder 1 self", "decoder 1 self", "decoder 1 cross"."""
        side = "encoder" if self.kind == "encoder self" else "decoder"
        return f"{side} {self.layer} {self.kind.split()[-1]}"


@dataclass
class Attention:
    translation: str
    maps: list[AttentionMap]  # encoder layers first, then self and cross of each decoder layer
    warnings: list[str]


@torch.no_grad()
def attention_maps(checkpoint: Checkpoint, sentence: str) -> Attention:
    model, src_vocab, tgt_vocab = checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab
    src_ids = src_vocab.encode([sentence])[0]
    warnings = numbered([source_warnings(src_vocab, model.cfg.longest_source, sentence, src_ids)])
    src_ids = src_ids[: model.cfg.longest_source]
    if not src_ids:
        raise UserError("nothing to show: the sentence is empty")
    device = next(model.parameters()).device
    src = source_tensor([src_ids], model.cfg.source_eos).to(device)  # (1, S)
    out_ids = search_batch(model, src, checkpoint.config.decode)[0].ids
    source = src_vocab.pieces(src_ids) + ["</s>"]  # the tokens the model saw
    output = ["<s>"] + tgt_vocab.pieces(out_ids)

    modules = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    for module in modules:
        module.record = True
    try:
        model(src, torch.tensor([[BOS, *out_ids]], device=device))
    finally:
        for module in modules:
            module.record = False

    def recorded(module: MultiHeadAttention) -> torch.Tensor:
        return module.weights[0].cpu()  # (H, Tq, Tk) of the one sentence

    maps = []
    for i, layer in enumerate(model.encoder, 1):
        maps.append(AttentionMap("encoder self", i, recorded(layer.self_attn), source, source))
    for i, layer in enumerate(model.decoder, 1):
        maps.append(AttentionMap("decoder self", i, recorded(layer.self_attn), output, output))
        maps.append(AttentionMap("cross", i, recorded(layer.cross_attn), output, source))
    return Attention(tgt_vocab.detokenize([out_ids])[0], maps, warnings)
