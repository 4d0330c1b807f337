"""Greedy decoding: at each step, append the most probable next token.

    memory = encode(source)                   once per batch
    ys = [BOS]
    repeat: logits = decode(ys, memory)
            ys += argmax(logits[last step])
    until a sentence produces EOS or reaches its length limit,
      max_len_a * its source length + max_len_b pieces.

Two implementations give the same tokens:

* `greedy_decode_recompute` runs the decoder over the whole prefix again at every step, as
  most tutorials do. Finished sentences keep receiving PAD, which the masks hide. It is the
  reference the tests compare against.
* `greedy_decode_cached` feeds only the newest token and keeps the attention keys and values
  of earlier steps in a DecoderCache (seq2seq/model/cache.py). Finished sentences leave the batch
  once half of it has finished, so they stop costing work. This is the default
  (`decode.cache: true`).

Beam search (beam.py) is chosen with `decode.beam_size` > 1. `translate_sentences` wraps
them all for raw text: it sorts sentences by length so that each batch has little padding, and
returns the translations in the original order; an empty sentence gives an empty translation.
`translate_sentences_nbest` returns the beam_size best translations of each sentence, with
their scores.
"""

from contextlib import contextmanager
from functools import partial

import torch

from seq2seq.config import DecodeConfig
from seq2seq.decoding.beam import beam_search
from seq2seq.model.cache import DecoderCache
from seq2seq.model.transformer import Transformer
from seq2seq.support.device import autocast, autocast_dtype
from seq2seq.text.batching import source_tensor
from seq2seq.text.special import BOS, EOS, PAD, UNK, non_output_logits
from seq2seq.text.vocab import Vocab


def max_lengths(model: Transformer, src: torch.Tensor, cfg: DecodeConfig) -> torch.Tensor:
    """(B, S) source -> (B,) longest output of each sentence, in pieces."""
    source_lengths = (src != PAD).sum(dim=1)
    limits = (cfg.max_len_a * source_lengths + cfg.max_len_b).long()
    return limits.clamp(1, model.cfg.max_positions - 1)


def strip(outputs: torch.Tensor) -> list[list[int]]:
    """(B, L) output ids -> B lists, each cut at its first EOS or PAD."""
    result = []
    for row in outputs.tolist():
        end = next((i for i, token in enumerate(row) if token in (EOS, PAD)), len(row))
        result.append(row[:end])
    return result


@torch.inference_mode()
def greedy_decode_recompute(model: Transformer, src: torch.Tensor, limits: torch.Tensor):
    """src: (B, S), limits: (B,) -> B lists of output ids (no BOS, no EOS)."""
    memory, src_mask = model.encode(src)  # (B, S, D), (B, 1, 1, S)
    batch = src.size(0)
    ys = torch.full((batch, 1), BOS, dtype=torch.long, device=src.device)  # (B, 1 + steps)
    finished = torch.zeros(batch, dtype=torch.bool, device=src.device)
    forbidden = non_output_logits(memory, model.generator.out_features)  # (V,)
    for step in range(int(limits.max())):
        logits = model.decode(ys, memory, src_mask)[:, -1]  # the whole prefix, again
        token = (logits + forbidden).argmax(dim=-1).masked_fill(finished, PAD)  # (B,)
        ys = torch.cat([ys, token[:, None]], dim=1)
        finished |= (token == EOS) | (step + 1 >= limits)
        if finished.all():
            break
    return strip(ys[:, 1:])


@torch.inference_mode()
def greedy_decode_cached(model: Transformer, src: torch.Tensor, limits: torch.Tensor):
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
    rows = torch.arange(batch, device=src.device)  # the batch row of each sentence in the loop
    finished = torch.zeros(batch, dtype=torch.bool, device=src.device)  # (b,)
    cache = DecoderCache.empty(len(model.decoder))
    token = torch.full((batch, 1), BOS, dtype=torch.long, device=src.device)  # (b, 1)
    for step in range(longest):
        logits = model.decode(token, memory, src_mask, cache)[:, -1]  # (b, V)
        new = (logits + forbidden).argmax(dim=-1).masked_fill(finished, PAD)  # (b,)
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
    return strip(outputs)


def decode_batch(model: Transformer, src: torch.Tensor, cfg: DecodeConfig) -> list[list[int]]:
    """src: (B, S) padded source ids -> B lists of output ids: greedy (with or without the
    cache) or, with cfg.beam_size > 1, the best hypothesis of beam search."""
    limits = max_lengths(model, src, cfg)
    if cfg.beam_size > 1:
        nbest = beam_search(model, src, limits, cfg.beam_size, cfg.length_penalty)
        return [hypotheses[0][1] for hypotheses in nbest]
    greedy = greedy_decode_cached if cfg.cache else greedy_decode_recompute
    return greedy(model, src, limits)


def longest_source(model: Transformer) -> int:
    """The most source pieces the model takes: its positions, less one for EOS."""
    return model.cfg.max_positions - 1


def input_warnings(
    src_vocab: Vocab, longest: int, sentences: list[str], first_line: int = 1
) -> list[str]:
    """The warnings about `sentences`: words the source vocabulary lacks, inputs longer than
    `longest` pieces (cut to fit). Each names its line, counted from `first_line`."""
    messages = []
    for number, (sentence, ids) in enumerate(
        zip(sentences, src_vocab.encode(sentences), strict=True), first_line
    ):
        if UNK in ids:
            words = ", ".join(repr(word) for word in dict.fromkeys(src_vocab.unknown(sentence)))
            messages.append(f"line {number}: not in the vocabulary, translated as unknown: {words}")
        if len(ids) > longest:
            messages.append(f"line {number}: {len(ids)} pieces, cut to the model's {longest}")
    return messages


def in_length_order(model: Transformer, sources: list[list[int]], batch_size: int, decode, empty):
    """Run decode(src (B, S)) -> B results over batches of similar source length; return
    the results in the order of `sources`. An empty source is not decoded: its result is
    `empty` (an empty line in, an empty line out). A source longer than the model's positions
    is cut to fit."""
    device = next(model.parameters()).device
    sources = [ids[: longest_source(model)] for ids in sources]  # cut to fit the positions
    order = sorted((i for i in range(len(sources)) if sources[i]), key=lambda i: len(sources[i]))
    results: list = [empty] * len(sources)
    for start in range(0, len(order), batch_size):
        indices = order[start : start + batch_size]
        src = source_tensor([sources[i] for i in indices]).to(device)
        for i, result in zip(indices, decode(src), strict=True):
            results[i] = result
    return results


@contextmanager
def evaluating(model: Transformer, precision: str):
    """Eval mode (no dropout) and autocast to `precision` (decode.precision) inside; the
    model's own mode again after."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        with autocast(device, autocast_dtype(precision, device, "decode.precision")):
            yield
    finally:
        model.train(was_training)


def translate_sentences(
    model: Transformer,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    sentences: list[str],
    cfg: DecodeConfig,
) -> list[str]:
    """Raw source sentences -> detokenized translations, in the same order."""
    sources = src_vocab.encode(sentences)
    with evaluating(model, cfg.precision):
        search = partial(decode_batch, model, cfg=cfg)  # src (B, S) -> B id lists
        outputs = in_length_order(model, sources, cfg.batch_size, search, [])
    return tgt_vocab.decode(outputs)


def translate_sentences_nbest(
    model: Transformer,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    sentences: list[str],
    cfg: DecodeConfig,
) -> list[list[tuple[float, str]]]:
    """Raw source sentences -> for each, the cfg.beam_size best translations of beam search
    as (length-normalised log-probability, detokenized text), best first."""

    def search(src: torch.Tensor) -> list:
        limits = max_lengths(model, src, cfg)
        return beam_search(model, src, limits, cfg.beam_size, cfg.length_penalty)

    sources = src_vocab.encode(sentences)
    with evaluating(model, cfg.precision):
        nbest = in_length_order(model, sources, cfg.batch_size, search, [(0.0, [])])
    return [[(score, tgt_vocab.decode([ids])[0]) for score, ids in hyps] for hyps in nbest]
