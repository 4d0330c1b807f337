"""Greedy decoding: at each step, append the most probable next token.

    memory = encode(source)                   once per batch
    ys = [BOS]
    repeat: logits = decode(ys, memory)
            ys += argmax(logits[last step])
    until a sentence produces EOS or reaches its length limit,
      max_len_a * its source length + max_len_b pieces; EOS is never the first piece (no
      output is empty: special.first_step).

With `decode.no_repeat_ngram` n > 0, each step's argmax skips the tokens that would repeat an
n-gram the output already holds (repeats.py): no runaway "salad salad salad ..." loops.

Two implementations give the same tokens:

* `greedy_decode_recompute` runs the decoder over the whole prefix again at every step, as
  most tutorials do. Finished sentences keep receiving PAD, which the masks hide. It is the
  reference the tests compare against.
* `greedy_decode_cached` feeds only the newest token and keeps the attention keys and values
  of earlier steps in a DecoderCache (seq2seq/model/kv_cache.py). Finished sentences leave the batch
  once half of it has finished, so they stop costing work. This is the default
  (`decode.cache: true`).

Both take one batch of encoded sentences and give each sentence's output and its
log-probability (the sum of its pieces', EOS counted: a translation's confidence reads it,
seq2seq/decoding/confidence.py); batches.py runs them (or beam.py's beam search) over many
sentences.
"""

from math import inf
from typing import NamedTuple

import torch

from seq2seq.config import DecodeConfig
from seq2seq.decoding.repeats import repeated_ngrams
from seq2seq.model.kv_cache import DecoderCache
from seq2seq.model.transformer import Transformer
from seq2seq.tokens.special import BOS, EOS, PAD, first_step, non_output_logits


def max_lengths(model: Transformer, src: torch.Tensor, decoding: DecodeConfig) -> torch.Tensor:
    """(B, S) source -> (B,) longest output of each sentence, in pieces."""
    return length_limits((src != PAD).sum(dim=1), decoding, model.cfg.longest_output)


def length_limits(source_lengths: torch.Tensor, decoding: DecodeConfig, longest: int):
    """(B,) source lengths (EOS counted) -> (B,) longest outputs: max_len_a * length +
    max_len_b pieces, at least 1 and at most `longest` (the positions the model has)."""
    limits = (decoding.max_len_a * source_lengths + decoding.max_len_b).long()
    return limits.clamp(1, longest)


class Greedy(NamedTuple):
    """A batch's greedy outputs, each sentence's in order."""

    ids: list[list[int]]  # its output ids (no BOS, no EOS)
    log_probs: list[float]  # the sum of their log-probabilities, its EOS's counted


def chosen(logits: torch.Tensor, token: torch.Tensor, finished: torch.Tensor) -> torch.Tensor:
    """logits (b, V) as allowed, token (b,) chosen -> (b,) its log-probability (0 where the
    sentence had `finished` before: what comes after its end counts for nothing)."""
    logits = logits.to(scores_type(logits))
    log_probs = torch.log_softmax(logits, dim=-1).gather(1, token[:, None]).squeeze(1)
    return log_probs.masked_fill(finished, 0.0)


def scores_type(memory: torch.Tensor) -> torch.dtype:
    """The type log-probabilities add up in: the model's, fp32 at least."""
    return torch.promote_types(memory.dtype, torch.float32)


def strip(outputs: torch.Tensor) -> list[list[int]]:
    """(B, L) output ids -> B lists, each cut at its first EOS or PAD."""
    result = []
    for row in outputs.tolist():
        end = next((i for i, token in enumerate(row) if token in (EOS, PAD)), len(row))
        result.append(row[:end])
    return result


def allowed(logits: torch.Tensor, forbidden: torch.Tensor, history: torch.Tensor | None, n: int):
    """logits (b, V) of the next token -> the same with -inf where it may not be: PAD and
    BOS (`forbidden`, (V,)), and with n > 0 the tokens that would repeat an n-gram of
    `history` (b, steps), the outputs so far (repeats.py)."""
    logits = logits + forbidden
    if n:
        logits = logits.masked_fill(repeated_ngrams(history, n, logits.size(-1)), -inf)
    return logits


@torch.inference_mode()
def greedy_decode_recompute(
    model: Transformer, src: torch.Tensor, limits: torch.Tensor, no_repeat: int = 0
):
    """src: (B, S), limits: (B,) -> Greedy: B lists of output ids (no BOS, no EOS) and their
    log-probabilities. no_repeat > 0: no output repeats an n-gram of that many pieces
    (repeats.py)."""
    memory, src_mask = model.encode(src)  # (B, S, D), (B, 1, 1, S)
    batch = src.size(0)
    ys = torch.full((batch, 1), BOS, dtype=torch.long, device=src.device)  # (B, 1 + steps)
    finished = torch.zeros(batch, dtype=torch.bool, device=src.device)
    total = torch.zeros(batch, dtype=scores_type(memory), device=src.device)  # (B,) so far
    forbidden = non_output_logits(memory, model.generator.out_features)  # (V,)
    first = first_step(forbidden)
    for step in range(int(limits.max())):
        logits = model.decode(ys, memory, src_mask)[:, -1]  # the whole prefix, again
        logits = allowed(logits, forbidden if step else first, ys[:, 1:], no_repeat)
        token = logits.argmax(dim=-1)  # (B,)
        total += chosen(logits, token, finished)
        token = token.masked_fill(finished, PAD)
        ys = torch.cat([ys, token[:, None]], dim=1)
        finished |= (token == EOS) | (step + 1 >= limits)
        if finished.all():
            break
    return Greedy(strip(ys[:, 1:]), total.tolist())


@torch.inference_mode()
def greedy_decode_cached(
    model: Transformer, src: torch.Tensor, limits: torch.Tensor, no_repeat: int = 0
):
    """Same result as greedy_decode_recompute, one new token per step with a KV cache.

    Each step is a few dozen small tensor operations, so the loop keeps their number down: a
    batch without padding needs no source mask; PAD and BOS are forbidden by adding one
    precomputed row of logits; and finished sentences stay in the batch (decoding PAD, their
    outputs ignored) until at least half of it has finished, when they all leave at once:
    dropping rows touches every cached tensor, too costly to do at every step.
    """
    memory, src_mask = model.encode(src)  # (B, S, D), (B, 1, 1, S)
    if bool(src_mask.all()):
        src_mask = None  # no padding to hide
    batch, longest = src.size(0), int(limits.max())
    outputs = torch.full((batch, longest), PAD, dtype=torch.long, device=src.device)
    forbidden = non_output_logits(memory, model.generator.out_features)  # (V,)
    first = first_step(forbidden)
    rows = torch.arange(batch, device=src.device)  # the batch row of each sentence in the loop
    finished = torch.zeros(batch, dtype=torch.bool, device=src.device)  # (b,)
    total = torch.zeros(batch, dtype=scores_type(memory), device=src.device)  # (B,) so far
    cache = DecoderCache.empty(len(model.decoder))
    token = torch.full((batch, 1), BOS, dtype=torch.long, device=src.device)  # (b, 1)
    for step in range(longest):
        logits = model.decode(token, memory, src_mask, cache)[:, -1]  # (b, V)
        history = outputs[rows, :step] if no_repeat else None  # (b, step)
        logits = allowed(logits, forbidden if step else first, history, no_repeat)
        new = logits.argmax(dim=-1)  # (b,)
        total[rows] += chosen(logits, new, finished)
        new = new.masked_fill(finished, PAD)
        outputs[rows, step] = new
        finished |= (new == EOS) | (step + 1 >= limits)
        running = len(rows) - int(finished.sum())
        if running == 0:
            break
        if running <= len(rows) // 2:  # drop the finished sentences from every batch tensor
            keep = (~finished).nonzero().squeeze(1)
            rows, new, limits, memory, finished = (
                t[keep] for t in (rows, new, limits, memory, finished)
            )
            src_mask = None if src_mask is None else src_mask[keep]
            cache.select(keep)
        token = new[:, None]
    return Greedy(strip(outputs), total.tolist())
