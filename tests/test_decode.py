"""Greedy decoding: the cached path gives the same tokens as the recompute-every-step path."""

import random

import pytest
import torch

from seq2seq import numbers
from seq2seq.batching import collate, encode_pairs, source_tensor, token_batches
from seq2seq.config import CorpusConfig, config_from_dict
from seq2seq.decode import greedy_decode_cached, greedy_decode_recompute, translate
from seq2seq.model import Transformer
from seq2seq.train import batch_loss, make_optimizer
from seq2seq.vocab import EOS, PAD, train_vocab


def random_model(vocab: int, dtype=torch.float64) -> Transformer:
    cfg = config_from_dict(
        {"model": {"d_model": 32, "n_heads": 4, "enc_layers": 2, "dec_layers": 2, "d_ff": 64}}
    ).model
    return Transformer(cfg, vocab, vocab).to(dtype).eval()


@pytest.mark.parametrize("seed", range(5))
def test_cached_equals_recompute_on_random_models_and_inputs(seed):
    # float64, so that two mathematically equal computations cannot round to different argmaxes
    torch.manual_seed(seed)
    vocab = 6 + seed  # a small vocabulary makes EOS likely: sentences finish at different steps
    model = random_model(vocab)
    lengths = torch.randint(1, 12, (16,))
    src = source_tensor([torch.randint(4, vocab, (int(n),)).tolist() for n in lengths])
    limits = torch.randint(1, 40, (16,))
    cached = greedy_decode_cached(model, src, limits)
    assert cached == greedy_decode_recompute(model, src, limits)
    assert all(len(out) <= limit for out, limit in zip(cached, limits.tolist(), strict=True))
    assert len({len(out) for out in cached}) > 1, "the test should mix lengths"


def test_long_outputs_stop_at_the_length_limit():
    torch.manual_seed(0)
    model = random_model(50)
    src = source_tensor([[5, 6, 7], [8, 9]])
    limits = torch.tensor([64, 10])
    for decode in (greedy_decode_cached, greedy_decode_recompute):
        out = decode(model, src, limits)
        assert len(out[0]) <= 64 and len(out[1]) <= 10
        assert all(EOS not in ids and PAD not in ids for ids in out)


@pytest.fixture(scope="module")
def trained_numbers_model():
    """A small model trained for a few seconds on part of the default numbers corpus: far from
    right, but its outputs on the 1,000-sentence test split vary in content and length."""
    torch.manual_seed(0)
    config = config_from_dict(
        {"model": {"d_model": 64, "n_heads": 4, "enc_layers": 1, "dec_layers": 1, "d_ff": 128}}
    )
    corpus = numbers.generate(CorpusConfig())  # the default corpus: its test split is make data's
    corpus["train"] = corpus["train"][:3000]
    src_vocab = train_vocab([s for s, _ in corpus["train"]], 64, config.vocab)
    tgt_vocab = train_vocab([t for _, t in corpus["train"]], 64, config.vocab)
    model = Transformer(config.model, len(src_vocab), len(tgt_vocab))
    optimizer = make_optimizer(model, config.train)
    examples = encode_pairs(corpus["train"], src_vocab, tgt_vocab)
    for _ in range(3):
        for indices in token_batches(examples, 1000, random.Random(0)):
            loss = batch_loss(model, collate([examples[i] for i in indices]), 0.1)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model.eval(), src_vocab, tgt_vocab, corpus["test"], config.decode


@pytest.mark.slow
def test_cached_equals_recompute_on_the_numbers_test_split(trained_numbers_model):
    model, src_vocab, tgt_vocab, test, cfg = trained_numbers_model
    sources = [s for s, _ in test]
    cfg.cache = True
    cached = translate(model, src_vocab, tgt_vocab, sources, cfg)
    cfg.cache = False
    recomputed = translate(model, src_vocab, tgt_vocab, sources, cfg)
    assert len(cached) == 1000
    assert cached == recomputed
    assert len(set(cached)) > 100, "the outputs should vary"
    assert len({len(t.split()) for t in cached}) > 5, "and so should their lengths"


@pytest.mark.slow
def test_translate_restores_the_input_order_whatever_the_batch_size(trained_numbers_model):
    model, src_vocab, tgt_vocab, test, cfg = trained_numbers_model
    sources = [s for s, _ in test[:40]]
    cfg.cache, cfg.batch_size = True, 7
    batched = translate(model, src_vocab, tgt_vocab, sources, cfg)
    one_by_one = [translate(model, src_vocab, tgt_vocab, [s], cfg)[0] for s in sources]
    assert batched == one_by_one
