"""Decoding: cached greedy = recompute greedy, and beam search against greedy."""

import dataclasses

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from seq2seq.config import config_from_dict
from seq2seq.decoding.batches import nbest_of_sources, search_sources
from seq2seq.decoding.beam import beam_search, per_piece
from seq2seq.decoding.engines import TorchEngine
from seq2seq.decoding.greedy import greedy_decode_cached, greedy_decode_recompute, max_lengths
from seq2seq.model.transformer import Transformer
from seq2seq.tokens.batching import source_tensor
from seq2seq.tokens.special import BOS, EOS, PAD

from helpers import assert_same_or_tied, greedy_ids


def random_model(vocab: int, dtype=torch.float64) -> Transformer:
    cfg = config_from_dict(
        {"model": {"d_model": 32, "n_heads": 4, "enc_layers": 2, "dec_layers": 2, "d_ff": 64}}
    ).model
    return Transformer(cfg, vocab, vocab, pad_id=PAD).to(dtype).eval()


@pytest.mark.same_outputs
@pytest.mark.parametrize("seed", range(5))
def test_cached_equals_recompute_on_random_models_and_inputs(seed):
    # float64, so that two mathematically equal computations cannot round to different argmaxes
    torch.manual_seed(seed)
    vocab = 6 + seed  # a small vocabulary makes EOS likely: sentences finish at different steps
    model = random_model(vocab)
    lengths = torch.randint(1, 12, (16,))
    src = source_tensor([torch.randint(4, vocab, (int(n),)).tolist() for n in lengths])
    limits = torch.randint(1, 40, (16,))
    cached, log_probs = greedy_decode_cached(model, src, limits)
    recomputed = greedy_decode_recompute(model, src, limits)
    assert cached == recomputed.ids
    assert log_probs == pytest.approx(recomputed.log_probs, abs=1e-9)
    assert all(len(out) <= limit for out, limit in zip(cached, limits.tolist(), strict=True))
    assert len({len(out) for out in cached}) > 1, "the test should mix lengths"
    for i, (out, limit) in enumerate(zip(cached, limits.tolist(), strict=True)):
        ended = len(out) < limit  # else cut at its limit, without EOS
        forced = sequence_log_prob(model, src[i : i + 1], out, eos=ended)
        assert log_probs[i] == pytest.approx(forced, abs=1e-9)


def test_long_outputs_stop_at_the_length_limit():
    torch.manual_seed(0)
    model = random_model(50)
    src = source_tensor([[5, 6, 7], [8, 9]])
    limits = torch.tensor([64, 10])
    for decode in (greedy_decode_cached, greedy_decode_recompute):
        out = decode(model, src, limits).ids
        assert len(out[0]) <= 64 and len(out[1]) <= 10
        assert all(EOS not in ids and PAD not in ids for ids in out)


@pytest.mark.same_outputs
@pytest.mark.slow
def test_cached_equals_recompute_on_the_numbers_test_split(trained_numbers_checkpoint):
    """In float32 the two sum in another order: equal but where the model hesitates."""
    checkpoint, test = trained_numbers_checkpoint
    sources = [s for s, _ in test]
    cached = greedy_ids(checkpoint, sources, cache=True)
    assert_same_or_tied(checkpoint, sources, cached, greedy_ids(checkpoint, sources, cache=False))
    assert len(cached) == 1000
    texts = checkpoint.tgt_vocab.detokenize(cached)
    assert len(set(texts)) > 100, "the outputs should vary"
    assert len({len(t.split()) for t in texts}) > 5, "and so should their lengths"


@pytest.mark.same_outputs
@pytest.mark.slow
def test_translate_restores_the_input_order_whatever_the_batch_size(trained_numbers_checkpoint):
    checkpoint, test = trained_numbers_checkpoint
    sources = [s for s, _ in test[:40]]
    sources[5] = sources[17] = ""  # empty lines are answered by empty lines, in place
    cfg = dataclasses.replace(checkpoint.config.decode, cache=True, batch_size=7)
    engine = TorchEngine(checkpoint)
    batched = engine.translate(sources, cfg).outputs
    one_by_one = [engine.translate([s], cfg).outputs[0] for s in sources]
    assert_same_or_tied(checkpoint, sources, batched, one_by_one)
    assert batched[5] == batched[17] == "" and all(batched[:5] + batched[6:17] + batched[18:])


@pytest.mark.same_outputs
@pytest.mark.slow
def test_nbest_lists_are_the_beam_hypotheses_best_first(trained_numbers_model):
    model, src_vocab, tgt_vocab, test, cfg = trained_numbers_model
    sources = [s for s, _ in test[:30]] + [""]
    beam = dataclasses.replace(cfg, beam_size=3, length_penalty=1.0)
    ids = src_vocab.encode(sources)
    nbest = nbest_of_sources(model, ids, beam)
    best = search_sources(model, ids, beam)
    assert [hyps[0][1] for hyps in nbest] == [output.ids for output in best]
    for hyps, output in zip(nbest, best, strict=True):  # the signal: the best's per piece
        assert output.log_prob == pytest.approx(per_piece(hyps[0][0], len(output.ids), 1.0))
    assert nbest[-1] == [(0.0, [])]
    for hyps in nbest[:-1]:
        scores = [score for score, _ in hyps]
        assert len(hyps) == 3 and scores == sorted(scores, reverse=True)
        assert len({tuple(ids) for _, ids in hyps}) == 3


@torch.no_grad()
def sequence_log_prob(model: Transformer, src: torch.Tensor, output: list[int], eos: bool) -> float:
    """log P(output [+ EOS] | src) by teacher forcing, PAD and BOS excluded as in decoding,
    and EOS at the first step (no output is empty)."""
    tgt_in = torch.tensor([[BOS, *output]])
    logits = model(src, tgt_in)[0].double()
    logits[:, [PAD, BOS]] = float("-inf")
    logits[0, EOS] = float("-inf")
    log_probs = torch.log_softmax(logits, dim=-1)
    targets = [*output, EOS] if eos else output
    return float(sum(log_probs[i, t] for i, t in enumerate(targets)))


@pytest.mark.same_outputs
@pytest.mark.parametrize("seed", range(3))
def test_beam_of_one_without_length_penalty_is_greedy_on_random_models(seed):
    torch.manual_seed(seed)
    model = random_model(6 + seed)
    src = source_tensor([torch.randint(4, 6 + seed, (int(n),)).tolist() for n in range(1, 13)])
    limits = torch.randint(1, 30, (12,))
    beams = beam_search(model, src, limits, beam_size=1, alpha=0.0)
    greedy = greedy_decode_cached(model, src, limits)
    assert [hyps[0][1] for hyps in beams] == greedy.ids
    assert [hyps[0][0] for hyps in beams] == pytest.approx(greedy.log_probs, abs=1e-5)


@pytest.mark.same_outputs
@pytest.mark.slow
def test_beam_search_on_a_trained_model(trained_numbers_model):
    model, src_vocab, _, test, cfg = trained_numbers_model
    model = model.double()
    try:
        src = source_tensor(src_vocab.encode([s for s, _ in test[:100]]))
        limits = max_lengths(model, src, cfg)
        greedy = beam_search(model, src, limits, beam_size=1, alpha=0.0)
        assert [h[0][1] for h in greedy] == greedy_decode_cached(model, src, limits).ids
        beams = beam_search(model, src, limits, beam_size=4, alpha=0.0, wanted=4)
        for four, row, limit in zip(beams, src, limits.tolist(), strict=True):
            scores = [h[0] for h in four]
            assert len(four) == 4 and scores == sorted(scores, reverse=True)
            # the scores are the outputs' log-probabilities
            real = row[row != PAD][None]
            output = four[0][1]
            expected = sequence_log_prob(model, real, output, eos=len(output) < limit)
            assert four[0][0] == pytest.approx(expected, abs=1e-6)
        # Beam search keeps the greedy path unless K other paths look better on the way, so it
        # is almost always at least as probable, and more probable where the model hesitates.
        pairs = list(zip(greedy, beams, strict=True))
        at_least = sum(four[0][0] >= one[0][0] - 1e-9 for one, four in pairs)
        better = sum(four[0][0] > one[0][0] + 1e-9 for one, four in pairs)
        assert at_least >= 95 and better >= 5, (at_least, better)
        assert sum(f[0][0] for _, f in pairs) > sum(o[0][0] for o, _ in pairs)
    finally:
        model.float()


class HostReads(TorchDispatchMode):
    """Counts the operations that make the host wait for a GPU: reading a value (.item(),
    bool(), int()), a result whose size depends on values (nonzero), and copies of host data
    into a tensor (`row[i] = x`, torch.tensor(list) then copied): on a GPU, a synchronous
    copy from the host. (A host scalar filled in, `rows[:, 0] = x`, is no copy: fill_.)"""

    # (in inference mode .item() and bool() dispatch as item and is_nonzero)
    WAITS = {"_local_scalar_dense", "item", "is_nonzero", "nonzero"}

    def __init__(self):
        super().__init__()
        self.waits = self.from_host = 0
        self.host_data = []  # the tensors made from host data (lift_fresh)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__  # aten.item.default -> item
        self.waits += name in self.WAITS
        self.from_host += name == "copy_" and any(args[1] is t for t in self.host_data)
        out = func(*args, **(kwargs or {}))
        if name == "lift_fresh":
            self.host_data.append(out)
        return out


@pytest.mark.parametrize("no_repeat", [0, 3])  # the repeats rule costs no wait either
def test_beam_search_waits_for_the_device_once_per_step(monkeypatch, no_repeat):
    torch.manual_seed(0)
    model = random_model(12, torch.float32)
    src = source_tensor([torch.randint(4, 12, (int(n),)).tolist() for n in range(1, 9)])
    decode, tolist = model.decode, torch.Tensor.tolist

    def search(limit: int) -> tuple[int, HostReads, int]:
        steps, tolists = [], []
        monkeypatch.setattr(model, "decode", lambda *a: steps.append(1) or decode(*a))
        monkeypatch.setattr(torch.Tensor, "tolist", lambda t: tolists.append(1) or tolist(t))
        with HostReads() as reads:
            nbest = beam_search(model, src, torch.full((8,), limit), 4, 1.0, no_repeat, wanted=4)
        monkeypatch.undo()
        assert all(len(hypotheses) == 4 for hypotheses in nbest)
        return len(steps), reads, len(tolists)

    (short, short_reads, short_tolists), (long, long_reads, long_tolists) = search(5), search(20)
    assert long > short
    # each further step: one wait (are all sentences done?), no data from the host
    assert long_reads.waits - short_reads.waits == long - short
    assert long_reads.from_host == short_reads.from_host == 0  # no copy from the host
    assert short_tolists == long_tolists == 2  # the results, once at the end


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("no_repeat", [0, 3])
def test_beam_search_synchronises_with_the_gpu_once_per_step(no_repeat):
    torch.manual_seed(0)
    model = random_model(12, torch.float32).cuda()
    src = source_tensor([torch.randint(4, 12, (int(n),)).tolist() for n in range(1, 9)]).cuda()
    limits = torch.full((8,), 20, device="cuda")
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with pytest.warns(UserWarning, match="synchroniz") as warnings:
            beam_search(model, src, limits, 4, 1.0, no_repeat)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    steps = 20  # at most, one "all done?" each; the longest limit; the results
    where = sorted(f"{w.filename}:{w.lineno}" for w in warnings)  # if it fails: what waited
    assert len(warnings) <= steps + 1 + 2, where
