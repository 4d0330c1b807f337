"""The Transformer's options: which matrices are one (model.tie_embeddings, share_embeddings),
and where each dropout sits (model.activation_dropout)."""

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from seq2seq.checkpoint import save_checkpoint
from seq2seq.config import Config
from seq2seq.model.config import ModelConfig
from seq2seq.model.dropout import Dropout
from seq2seq.model.transformer import FeedForward, Transformer
from seq2seq.tokens.special import BOS, PAD

SMALL = ModelConfig(d_model=32, n_heads=4, enc_layers=1, dec_layers=1, d_ff=64)
V, D = 40, 32  # vocabulary size, d_model


def model(**options) -> Transformer:
    torch.manual_seed(0)
    return Transformer(dataclasses.replace(SMALL, **options), V, V, pad_id=PAD)


@pytest.mark.parametrize(
    "tie, share, matrices",
    [(False, False, 3), (True, False, 2), (False, True, 2), (True, True, 1)],
)
def test_each_option_makes_two_matrices_one(tie, share, matrices):
    """Each option joins two of the three (V, D) matrices; both join all three. The parameter
    count drops by V x D for each matrix saved."""
    m = model(tie_embeddings=tie, share_embeddings=share)
    three = m.src_embed.tokens.weight, m.tgt_embed.tokens.weight, m.generator.weight
    assert len({id(w) for w in three}) == matrices
    assert (m.tgt_embed.tokens.weight is m.generator.weight) == tie
    assert (m.src_embed.tokens.weight is m.tgt_embed.tokens.weight) == share
    apart = model(tie_embeddings=False).num_parameters()
    assert m.num_parameters() == apart - (3 - matrices) * V * D


def test_a_shared_matrix_learns_from_all_three_uses():
    """Its gradient is the sum of the three that separate matrices holding the same values
    get: what the source embedding, the target embedding and the output projection ask."""
    shared = model(share_embeddings=True)
    apart = model(tie_embeddings=False)
    apart.load_state_dict(shared.state_dict())  # the same values, in three matrices
    src, tgt = torch.tensor([[7, 8, 9, 8]]), torch.tensor([[BOS, 5, 6]])
    for m in (shared, apart):
        m(src, tgt).square().sum().backward()
    three = apart.src_embed.tokens, apart.tgt_embed.tokens, apart.generator
    assert all(layer.weight.grad.abs().sum() > 0 for layer in three)
    expected = sum(layer.weight.grad for layer in three)
    torch.testing.assert_close(shared.generator.weight.grad, expected)


def test_sharing_needs_one_vocabulary_size():
    cfg = dataclasses.replace(SMALL, share_embeddings=True)
    with pytest.raises(ValueError, match="model.share_embeddings needs one vocabulary"):
        Transformer(cfg, 40, 50, pad_id=PAD)


def test_training_with_the_options_on_lowers_the_loss():
    """A few steps on one batch, with every matrix shared and every dropout on."""
    m = model(share_embeddings=True, dropout=0.1, attention_dropout=0.1, activation_dropout=0.1)
    m.train()
    optimizer = torch.optim.AdamW(m.parameters(), lr=1e-2)
    src = torch.randint(4, V, (8, 6))
    tgt = torch.randint(4, V, (8, 7))
    losses = []
    for _ in range(30):
        logits = m(src, tgt[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), tgt[:, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.25 * losses[0], losses  # about 4.8 -> 0.6


def test_a_checkpoint_holds_a_shared_matrix_once(tmp_path):
    config = Config()
    config.vocab.joint = True
    files = {}
    for share in (False, True):
        config.model = dataclasses.replace(SMALL, share_embeddings=share)
        files[share] = tmp_path / f"{share}.pt"
        save_checkpoint(files[share], config, model(share_embeddings=share), Vocab(), Vocab(), {})
    saved = files[False].stat().st_size - files[True].stat().st_size
    assert saved == pytest.approx(V * D * 4, abs=1000)  # one (V, D) float32 matrix fewer
    weights = torch.load(files[True], weights_only=True)["model"]
    assert weights["src_embed.tokens.weight"].data_ptr() == weights["generator.weight"].data_ptr()


class Vocab:
    """What save_checkpoint reads of a vocabulary: its sentencepiece model's bytes."""

    model_bytes = b"a sentencepiece model"


def test_the_activation_dropout_sits_after_the_relu():
    """FeedForward in training: expand, ReLU, dropout (p = model.activation_dropout), contract;
    the same random mask as the model's Dropout draws from the same seed. The names of its
    two layers (net.0, net.2) stay those of earlier checkpoints and of the exports' tables."""
    ff = FeedForward(ModelConfig(d_model=D, d_ff=64, activation_dropout=0.5)).train()
    x = torch.randn(2, 3, D)
    torch.manual_seed(1)
    dropped = ff(x)
    expand, _, contract = ff.net
    torch.manual_seed(1)
    assert torch.equal(dropped, contract(Dropout(0.5).train()(torch.relu(expand(x)))))
    assert not torch.equal(dropped, ff.eval()(x))  # evaluation drops nothing
    assert list(ff.state_dict()) == ["net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias"]
