"""Greedy decoding: at each step, append the most probable next token.

    memory = encode(source)                   once per batch
    ys = [BOS]
    repeat: logits = decode(ys, memory)       the decoder runs over the whole prefix again
            ys += argmax(logits[last step])
    until every sentence has produced EOS, or the length limit
      max_len_a * source length + max_len_b.

A sentence that has finished keeps receiving PAD, which the masks hide, so it no longer
changes. `translate` wraps this for raw text: it sorts sentences by length so that each
batch has little padding, and returns the translations in the original order.
"""

import torch

from seq2seq.batching import source_tensor
from seq2seq.config import DecodeConfig
from seq2seq.model import Transformer
from seq2seq.vocab import BOS, EOS, PAD, Vocab


@torch.no_grad()
def greedy_decode(model: Transformer, src: torch.Tensor, max_len: int) -> list[list[int]]:
    """src: (B, S) padded source ids -> B lists of output ids (no BOS, stops before EOS)."""
    memory, src_mask = model.encode(src)  # (B, S, D), (B, 1, 1, S)
    batch = src.size(0)
    ys = torch.full((batch, 1), BOS, dtype=torch.long, device=src.device)  # (B, 1)
    finished = torch.zeros(batch, dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        logits = model.decode(ys, memory, src_mask)[:, -1]  # (B, V) for the last position
        logits[:, [PAD, BOS]] = float("-inf")  # never a real output token
        next_token = logits.argmax(dim=-1).masked_fill(finished, PAD)  # (B,)
        ys = torch.cat([ys, next_token[:, None]], dim=1)
        finished |= next_token == EOS
        if finished.all():
            break
    outputs = []
    for row in ys[:, 1:].tolist():
        outputs.append(row[: row.index(EOS)] if EOS in row else row)
    return outputs


def max_output_length(model: Transformer, src: torch.Tensor, cfg: DecodeConfig) -> int:
    limit = int(cfg.max_len_a * src.size(1) + cfg.max_len_b)
    return min(limit, model.cfg.max_positions - 1)


def translate(
    model: Transformer,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    sentences: list[str],
    cfg: DecodeConfig,
) -> list[str]:
    """Raw source sentences -> detokenized translations, in the same order."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    sources = src_vocab.encode(sentences)
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    outputs: list[list[int]] = [[] for _ in sources]
    for start in range(0, len(order), cfg.batch_size):
        indices = order[start : start + cfg.batch_size]
        src = source_tensor([sources[i] for i in indices]).to(device)
        for i, ids in zip(
            indices, greedy_decode(model, src, max_output_length(model, src, cfg)), strict=True
        ):
            outputs[i] = ids
    model.train(was_training)
    return tgt_vocab.decode(outputs)
