"""Masks, on their own and at the level of the whole model."""

import subprocess
import sys

import pytest
import torch

from seq2seq.model.config import ModelConfig
from seq2seq.model.masks import decoder_mask, no_peek_mask, padding_mask
from seq2seq.model.transformer import Transformer
from seq2seq.tokens.special import BOS, PAD

from helpers import ENV, HANG


def test_mask_shapes_and_values_follow_the_documented_convention():
    tokens = torch.tensor([[5, 6, 7], [5, 6, PAD]])
    assert padding_mask(tokens, PAD).shape == (2, 1, 1, 3)
    assert padding_mask(tokens, PAD)[1, 0, 0].tolist() == [True, True, False]
    assert no_peek_mask(3)[0, 0].tolist() == [
        [True, False, False],
        [True, True, False],
        [True, True, True],
    ]
    assert decoder_mask(tokens, PAD)[1, 0].tolist() == [
        [True, False, False],
        [True, True, False],
        [True, True, False],
    ]


@pytest.fixture(params=["sdpa", "math"])
def model(request) -> Transformer:
    torch.manual_seed(0)
    cfg = ModelConfig(
        d_model=32,
        n_heads=4,
        enc_layers=2,
        dec_layers=2,
        d_ff=64,
        dropout=0.0,
        attention=request.param,
    )
    return Transformer(cfg, src_vocab_size=20, tgt_vocab_size=15, pad_id=PAD).eval()


def random_ids(*shape: int, vocab: int) -> torch.Tensor:
    return torch.randint(4, vocab, shape)  # no special ids


def test_decoder_output_up_to_t_ignores_target_tokens_after_t(model):
    src, tgt = random_ids(2, 6, vocab=20), random_ids(2, 8, vocab=15)
    tgt[:, 0] = BOS
    before = model(src, tgt)
    for t in range(7):
        changed = tgt.clone()
        changed[:, t + 1 :] = random_ids(2, 7 - t, vocab=15)
        after = model(src, changed)
        torch.testing.assert_close(after[:, : t + 1], before[:, : t + 1], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(model(src, changed)[:, 1:], before[:, 1:]), "the test changes nothing"


def test_appending_padding_leaves_real_positions_unchanged(model):
    src, tgt = random_ids(2, 5, vocab=20), random_ids(2, 4, vocab=15)
    before = model(src, tgt)
    src_padded = torch.cat([src, torch.full((2, 3), PAD)], dim=1)
    tgt_padded = torch.cat([tgt, torch.full((2, 2), PAD)], dim=1)
    after = model(src_padded, tgt_padded)
    assert after.shape == (2, 6, 15)
    torch.testing.assert_close(after[:, :4], before, atol=1e-5, rtol=1e-5)


def test_padding_within_a_batch_matches_sentences_run_alone(model):
    long_src, short_src = random_ids(1, 7, vocab=20), random_ids(1, 3, vocab=20)
    tgt = random_ids(2, 5, vocab=15)
    alone = model(short_src, tgt[1:])
    batch_src = torch.cat([long_src, torch.cat([short_src, torch.full((1, 4), PAD)], 1)])
    together = model(batch_src, tgt)
    torch.testing.assert_close(together[1:], alone, atol=1e-5, rtol=1e-5)


def test_a_fully_padded_row_gives_no_nan(model):
    src = torch.tensor([[5, 6, 7], [PAD, PAD, PAD]])
    tgt = torch.tensor([[BOS, 5, 6], [PAD, PAD, PAD]])
    logits = model(src, tgt)
    assert torch.isfinite(logits).all()
    logits.sum().backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert len(grads) == len(list(model.parameters()))  # every parameter has its gradient
    assert all(torch.isfinite(grad).all() for grad in grads)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_model_with_a_fully_padded_row_gives_no_nan(model, dtype):
    model = model.to(dtype)
    src = torch.tensor([[5, 6, 7], [PAD, PAD, PAD]])
    tgt = torch.tensor([[BOS, 5, 6], [PAD, PAD, PAD]])
    logits = model(src, tgt)
    assert logits.dtype == dtype
    assert torch.isfinite(logits).all()


@pytest.mark.slow
def test_the_model_loads_without_sentencepiece_or_the_corpus_readers():
    heavy = [
        "sentencepiece",
        "seq2seq.text.parallel",
        "seq2seq.corpora.multi30k",
        "seq2seq.tokens.vocab",
    ]
    check = (
        f"import sys, seq2seq.model.transformer; print([m for m in {heavy!r} if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], env=ENV, capture_output=True, text=True, timeout=HANG
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
