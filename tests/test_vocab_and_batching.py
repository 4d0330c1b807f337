"""Vocabularies (special ids, digits, rebuild rules) and token-budget batching."""

import random

import torch

from seq2seq.batching import collate, encode_pairs, token_batches
from seq2seq.config import CorpusConfig, config_from_dict
from seq2seq.corpus import build_corpus
from seq2seq.numbers import generate
from seq2seq.vocab import (
    BOS,
    EOS,
    PAD,
    UNK,
    build_vocabs,
    forbid_non_outputs,
    load_vocabs,
    train_vocab,
)


def test_special_ids_and_split_digits():
    settings = config_from_dict({"vocab": {"model_type": "unigram"}}).vocab
    vocab = train_vocab(["a 1234 b", "c 56789 d", "e 0 f"] * 20, 30, settings)
    sp = vocab.sp
    assert (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()) == (PAD, UNK, BOS, EOS)
    pieces = [p for p in vocab.pieces(vocab.encode(["a 9876 b"])[0]) if p != "▁"]
    assert [p for p in pieces if p.strip("▁").isdigit()] == ["9", "8", "7", "6"]
    assert vocab.decode(vocab.encode(["a 9876 b"])) == ["a 9876 b"]


def test_unseen_numbers_round_trip_through_the_target_vocabulary(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = config_from_dict({"corpus": {"train_size": 300, "valid_size": 20, "test_size": 20}})
    build_corpus(config)
    assert build_vocabs(config) is True
    _, tgt = load_vocabs(config)
    sentence = "9 8 7 6 5 4 la 1 0 2"
    assert UNK not in tgt.encode([sentence])[0]
    assert tgt.decode(tgt.encode([sentence])) == [sentence]


def test_vocabularies_are_rebuilt_only_when_the_data_or_settings_change(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = config_from_dict({"corpus": {"train_size": 200, "valid_size": 10, "test_size": 10}})
    build_corpus(config)
    assert build_vocabs(config) is True
    assert build_vocabs(config) is False
    build_corpus(config)  # the same data again
    assert build_vocabs(config) is False
    config.corpus.seed = 2
    build_corpus(config)
    assert build_vocabs(config) is True
    config.vocab.tgt_size = 20
    assert build_vocabs(config) is True


def test_collate_shifts_the_target_by_one():
    src, tgt_in, tgt_out = collate([([5, 6], [7, 8, 9]), ([5], [7])])
    assert src.tolist() == [[5, 6, EOS], [5, EOS, PAD]]
    assert tgt_in.tolist() == [[BOS, 7, 8, 9], [BOS, 7, PAD, PAD]]
    assert tgt_out.tolist() == [[7, 8, 9, EOS], [7, EOS, PAD, PAD]]


def test_token_batches_cover_every_example_once_within_the_budget():
    config = config_from_dict({})
    pairs = generate(CorpusConfig(train_size=2000, valid_size=10, test_size=10, seed=5))["train"]
    src_vocab = train_vocab([s for s, _ in pairs], 64, config.vocab)
    tgt_vocab = train_vocab([t for _, t in pairs], 64, config.vocab)
    examples = encode_pairs(pairs, src_vocab, tgt_vocab)
    rng = random.Random(0)
    first = token_batches(examples, 800, rng)
    indices = sorted(i for batch in first for i in batch)
    assert indices == list(range(len(examples)))
    padded, real = 0, 0
    for batch in first:
        src, tgt_in, _ = collate([examples[i] for i in batch])
        assert src.numel() + tgt_in.numel() <= 800
        padded += src.numel() + tgt_in.numel()
        real += int((src != PAD).sum() + (tgt_in != PAD).sum())
    assert real / padded > 0.9, "similar lengths should share a batch"
    second = token_batches(examples, 800, rng)
    assert second != first, "each epoch has a new order"


def test_joint_vocabulary_is_one_model_for_both_sides(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = config_from_dict(
        {
            "corpus": {"train_size": 300, "valid_size": 20, "test_size": 20},
            "vocab": {"joint": True, "src_size": 100},
        }
    )
    build_corpus(config)
    build_vocabs(config)
    src, tgt = load_vocabs(config)
    assert src.model_bytes == tgt.model_bytes
    assert UNK not in src.encode(["twenty one is five 2 1 la 5"])[0]


def test_forbidding_pad_and_bos_leaves_the_given_logits_alone():
    logits = torch.zeros(2, 3, 8)  # (B, T, V)
    forbidden = forbid_non_outputs(logits)
    assert (logits == 0).all(), "a caller that keeps its logits (for scores) still has them"
    assert (forbidden[..., [PAD, BOS]] == float("-inf")).all()
    others = [i for i in range(8) if i not in (PAD, BOS)]
    assert (forbidden[..., others] == 0).all()
