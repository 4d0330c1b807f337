"""Many sentences decoded: in batches of similar length, in eval mode, under the decoding's
autocast, greedy or beam search.

    source id lists  --sorted by length, cut to the model's positions-->  batches (B, S)
      -> search_batch: greedy.py (cached or recompute), or beam.py's best with beam_size > 1
      -> the outputs, put back in the order of the sources (an empty source: an empty output)

`search_sources` gives each source its output ids and their mean log-probability a piece (the
signal of its confidence: confidence.py), `nbest_of_sources` its beam_size best with their
scores, `translate_sentences` goes from raw text to raw text (the walkthrough's). The engines
(engines.py) call these for everyone else.
"""

from contextlib import contextmanager
from functools import partial
from typing import NamedTuple

import torch

from seq2seq.config import DecodeConfig
from seq2seq.decoding.beam import beam_search, per_piece
from seq2seq.decoding.greedy import greedy_decode_cached, greedy_decode_recompute, max_lengths
from seq2seq.model.transformer import Transformer
from seq2seq.support.device import autocast, autocast_dtype
from seq2seq.tokens.batching import source_tensor
from seq2seq.tokens.vocab import Vocab


class Output(NamedTuple):
    """One source's output."""

    ids: list[int]
    log_prob: float  # mean log-probability a piece, EOS counted (beam.per_piece)


EMPTY = Output([], 0.0)  # an empty source's: nothing to get wrong


def search_batch(model: Transformer, src: torch.Tensor, decoding: DecodeConfig) -> list[Output]:
    """src: (B, S) padded source ids -> B Outputs: greedy (with or without the cache) or,
    with decoding.beam_size > 1, the best hypothesis of beam search."""
    limits, no_repeat = max_lengths(model, src, decoding), decoding.no_repeat_ngram
    if decoding.beam_size > 1:
        beams, alpha = decoding.beam_size, decoding.length_penalty
        nbest = beam_search(model, src, limits, beams, alpha, no_repeat)
        return [Output(ids, per_piece(score, len(ids), alpha)) for (score, ids), *_ in nbest]
    greedy = greedy_decode_cached if decoding.cache else greedy_decode_recompute
    found = greedy(model, src, limits, no_repeat)
    return [Output(ids, per_piece(total, len(ids), 0.0)) for ids, total in zip(*found, strict=True)]


def in_length_order(model: Transformer, sources: list[list[int]], batch_size: int, decode, empty):
    """Run decode(src (B, S)) -> B results over batches of similar source length; return
    the results in the order of `sources`. An empty source is not decoded: its result is
    `empty` (an empty line in, an empty line out). A source longer than the model's positions
    is cut to fit."""
    device = next(model.parameters()).device
    sources = [ids[: model.cfg.longest_source] for ids in sources]  # cut to fit the positions
    order = sorted((i for i in range(len(sources)) if sources[i]), key=lambda i: len(sources[i]))
    results: list = [empty] * len(sources)
    for start in range(0, len(order), batch_size):
        indices = order[start : start + batch_size]
        src = source_tensor([sources[i] for i in indices], model.cfg.source_eos).to(device)
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


def search_sources(
    model: Transformer, sources: list[list[int]], decoding: DecodeConfig
) -> list[Output]:
    """Source id lists -> the Output of each (greedy, or beam search's best)."""
    with evaluating(model, decoding.precision):
        search = partial(search_batch, model, decoding=decoding)  # src (B, S) -> B Outputs
        return in_length_order(model, sources, decoding.batch_size, search, EMPTY)


def nbest_of_sources(model: Transformer, sources: list[list[int]], decoding: DecodeConfig) -> list:
    """Source id lists -> for each, the decoding.beam_size best outputs of beam search as
    (length-normalised log-probability, output ids), best first."""

    def search(src: torch.Tensor) -> list:
        limits = max_lengths(model, src, decoding)
        beams, alpha = decoding.beam_size, decoding.length_penalty
        return beam_search(model, src, limits, beams, alpha, decoding.no_repeat_ngram, beams)

    with evaluating(model, decoding.precision):
        return in_length_order(model, sources, decoding.batch_size, search, [(0.0, [])])


def translate_sentences(
    model: Transformer,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    sentences: list[str],
    decoding: DecodeConfig,
) -> list[str]:
    """Raw source sentences -> detokenized translations, in the same order."""
    outputs = search_sources(model, src_vocab.encode(sentences), decoding)
    return tgt_vocab.detokenize([output.ids for output in outputs])
