"""No runaway outputs: decode.no_repeat_ngram forbids the tokens that would repeat an n-gram,
as CTranslate2's rule does, in greedy decoding (cached = recompute) and beam search; a model
that loops today stops looping, and its outputs change nowhere before the rule must act."""

import dataclasses

import pytest
import torch

from seq2seq.config import CorpusConfig, DecodeConfig, config_from_dict
from seq2seq.corpora import numbers
from seq2seq.decoding.batches import search_sources
from seq2seq.decoding.beam import beam_search
from seq2seq.decoding.greedy import greedy_decode_cached, greedy_decode_recompute
from seq2seq.decoding.repeats import repeated_ngrams
from seq2seq.model.transformer import Transformer
from seq2seq.tokens.batching import source_tensor
from seq2seq.tokens.special import PAD

from helpers import assert_same_or_tied, briefly_trained, greedy_ids, length_limits


def ctranslate2_rule(history: list[int], n: int) -> set[int]:
    """What CTranslate2's NoRepeatNgram forbids after `history`, one sentence at a time, as
    it reads: each token that followed an earlier occurrence of the last n - 1 tokens."""
    if len(history) < n:
        return set()
    tail = history[len(history) - n + 1 :]
    starts = range(len(history) - n + 1)
    return {history[i + n - 1] for i in starts if history[i : i + n - 1] == tail}


def first_repeat(ids: list[int], n: int) -> int | None:
    """The position of the token that completes the first n-gram `ids` holds twice, if any."""
    seen = set()
    for end in range(n, len(ids) + 1):
        if tuple(ids[end - n : end]) in seen:
            return end - 1
        seen.add(tuple(ids[end - n : end]))
    return None


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_the_forbidden_tokens_are_those_of_ctranslate2s_rule(n):
    generator = torch.Generator().manual_seed(n)
    bans = 0
    for length in range(24):
        history = torch.randint(4, 6, (40, length), generator=generator)  # 2 tokens: repeats
        banned = repeated_ngrams(history, n, 10)
        assert banned.shape == (40, 10) and banned.dtype == torch.bool
        for row, forbidden in zip(history.tolist(), banned, strict=True):
            assert set(forbidden.nonzero().flatten().tolist()) == ctranslate2_rule(row, n)
        bans += int(banned.sum())
    assert bans > 0, "the test should see forbidden tokens"


def looping_model() -> Transformer:
    """Random weights (float64, so that the two greedy paths cannot round apart): it never
    learnt to stop, so its outputs run to the length limit, repeating themselves."""
    torch.manual_seed(0)
    model = {"d_model": 32, "n_heads": 4, "enc_layers": 2, "dec_layers": 2, "d_ff": 64}
    cfg = config_from_dict({"model": model}).model
    return Transformer(cfg, 30, 30, pad_id=PAD).double().eval()


SOURCES = [[5 + (i * j) % 25 for j in range(3 + i % 9)] for i in range(24)]


@pytest.mark.same_outputs
@pytest.mark.parametrize("n", [2, 4])
def test_greedy_stops_the_loops_of_a_model_that_loops(n):
    model, src = looping_model(), source_tensor(SOURCES)
    limits = torch.full((len(SOURCES),), 40)
    loops = greedy_decode_cached(model, src, limits).ids
    assert loops == greedy_decode_recompute(model, src, limits).ids
    assert sum(first_repeat(ids, n) is not None for ids in loops) >= len(SOURCES) // 2, loops
    stopped = greedy_decode_cached(model, src, limits, no_repeat=n).ids
    assert stopped == greedy_decode_recompute(model, src, limits, no_repeat=n).ids
    assert all(first_repeat(ids, n) is None for ids in stopped)
    for before, after in zip(loops, stopped, strict=True):  # the same until the rule acts
        end = first_repeat(before, n)
        assert after[:end] == before[:end] and (end is not None or after == before)


@pytest.mark.same_outputs
def test_beam_search_keeps_no_hypothesis_that_repeats():
    model, src = looping_model(), source_tensor(SOURCES)
    limits = torch.full((len(SOURCES),), 30)
    nbest = beam_search(model, src, limits, 4, 1.0, no_repeat=3, wanted=4)
    assert all(len(hypotheses) == 4 for hypotheses in nbest)
    assert all(first_repeat(ids, 3) is None for hypotheses in nbest for _, ids in hypotheses)
    loops = beam_search(model, src, limits, 4, 1.0, wanted=4)
    assert any(first_repeat(ids, 3) is not None for hypotheses in loops for _, ids in hypotheses)
    # a beam of one, without length penalty, is greedy decoding, rule included
    one = beam_search(model, src, limits, 1, 0.0, no_repeat=3)
    assert [h[0][1] for h in one] == greedy_decode_cached(model, src, limits, no_repeat=3).ids


def test_the_default_reaches_decoding_and_zero_turns_it_off():
    model, default = looping_model(), DecodeConfig(precision="fp32")
    assert default.no_repeat_ngram == 7
    on = search_sources(model, SOURCES, default)
    off = search_sources(model, SOURCES, dataclasses.replace(default, no_repeat_ngram=0))
    assert all(first_repeat(output.ids, 7) is None for output in on)
    assert any(first_repeat(output.ids, 7) is not None for output in off)


@pytest.fixture(scope="module")
def looping_numbers_model():
    """A small model trained on 3,000 numbers pairs for two epochs (seconds): it has learnt
    some digits, not yet when to stop, and most of its test outputs loop to the length limit
    ("8 la 8 8 8 8 8 ..."). -> the checkpoint, the test pairs."""
    model = {"d_model": 64, "n_heads": 4, "enc_layers": 1, "dec_layers": 1, "d_ff": 128}
    corpus = numbers.generate(CorpusConfig())
    config = config_from_dict({"model": model})
    return briefly_trained(config, corpus["train"][:3000], epochs=2), corpus["test"]


@pytest.mark.slow
def test_an_undertrained_model_loops_without_the_rule_and_not_with_it(looping_numbers_model):
    """Without the rule, a third or more of the outputs run to the length limit repeating
    an n-gram; with the default rule none repeats 7 pieces, far fewer reach the limit, and the
    outputs that never repeated are unchanged (but for ties)."""
    checkpoint, test = looping_numbers_model
    sources = [s for s, _ in test]
    n = checkpoint.config.decode.no_repeat_ngram
    loops, stopped = (
        greedy_ids(checkpoint, sources, no_repeat_ngram=0),
        greedy_ids(checkpoint, sources),
    )
    limits = length_limits(checkpoint, sources)
    runaway = [i for i, ids in enumerate(loops) if len(ids) == limits[i]]
    looping = [i for i, ids in enumerate(loops) if first_repeat(ids, n) is not None]
    assert len(runaway) >= len(sources) // 3 and set(runaway) <= set(looping)
    assert all(first_repeat(ids, n) is None for ids in stopped)
    assert sum(len(ids) == limits[i] for i, ids in enumerate(stopped)) < len(runaway) // 2
    # where the rule never acted, the outputs are the same, but for ties (helpers.TIE)
    kept = [(sources[i], loops[i], stopped[i]) for i in range(len(sources)) if i not in looping]
    assert_same_or_tied(checkpoint, *map(list, zip(*kept, strict=True)), no_repeat=n)
