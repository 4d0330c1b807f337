"""Vocabularies (special ids, digits, rebuild rules) and token-budget batching."""

import dataclasses
import shutil

import numpy as np
import pytest
import sentencepiece as spm

from seq2seq import data
from seq2seq.config import config_from_dict, load_config
from seq2seq.corpora.corpus_types import build_corpus
from seq2seq.text.parallel import CorpusError, load_split
from seq2seq.tokens.batching import EpochSampler, token_batches
from seq2seq.tokens.dataset import TokenPairs
from seq2seq.tokens.special import BOS, EOS, PAD, UNK
from seq2seq.tokens.vocab import (
    Vocab,
    build_vocabs,
    load_vocabs,
    self_normalizing_model,
    train_vocab,
)
from seq2seq.training.distributed import World

from helpers import ROOT


def test_special_ids_and_split_digits():
    settings = config_from_dict({"vocab": {"model_type": "unigram"}}).vocab
    vocab = train_vocab(["a 1234 b", "c 56789 d", "e 0 f"] * 20, 30, settings)
    sp = vocab.sp
    assert (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()) == (PAD, UNK, BOS, EOS)
    pieces = [p for p in vocab.pieces(vocab.encode(["a 9876 b"])[0]) if p != "▁"]
    assert [p for p in pieces if p.strip("▁").isdigit()] == ["9", "8", "7", "6"]
    assert vocab.detokenize(vocab.encode(["a 9876 b"])) == ["a 9876 b"]


def test_unseen_numbers_round_trip_through_the_target_vocabulary(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = config_from_dict({"corpus": {"train_size": 300, "valid_size": 20, "test_size": 20}})
    build_corpus(config)
    assert build_vocabs(config) is True
    _, tgt = load_vocabs(config)
    sentence = "9 8 7 6 5 4 la 1 0 2"
    assert UNK not in tgt.encode([sentence])[0]
    assert tgt.detokenize(tgt.encode([sentence])) == [sentence]


def test_a_self_normalizing_model_encodes_as_our_python_normalisation():
    """The sentencepiece model alone (as Argos Translate and transformers load it) normalises
    every code point, and the sequences sentencepiece had rules for, as normalize_source then
    sentencepiece's own rules do; and so encodes sentences to the same ids."""
    pytest.importorskip("google.protobuf", reason="the model format's library (export extras)")
    settings = config_from_dict({"vocab": {"lowercase": True, "hyphens_as_spaces": True}}).vocab
    sentences = ["Twenty-One is twenty one", "Straße Über ÉCOLE e\u0301cole", "a\u3000b - c -"]
    vocab = Vocab(train_vocab(sentences * 10, 40, settings).model_bytes, settings)
    portable = self_normalizing_model(vocab)
    ours = spm.SentencePieceNormalizer(model_proto=vocab.model_bytes)
    theirs = spm.SentencePieceNormalizer(model_proto=portable)
    code_points = [chr(c) for c in range(1, 0x110000) if not 0xD800 <= c < 0xE000]
    sequences = [key for key, _ in ours.Decompile()]  # "E" + U+0301 ...
    texts = code_points + sequences + sentences
    expected = ours.Normalize([vocab.normalize(text) for text in texts])
    assert theirs.Normalize(texts) == expected
    plain = spm.SentencePieceProcessor(model_proto=portable)
    assert plain.encode(sentences) == vocab.encode(sentences)
    assert plain.encode("Twenty-one") == plain.encode("twenty one") != vocab.sp.encode("Twenty-one")
    # The one known difference: Python's lower() knows where a word ends, a table does not.
    assert vocab.normalize("ΟΔΟΣ") == "οδος" and theirs.Normalize("ΟΔΟΣ") == "▁οδοσ"
    unchanged = Vocab(
        vocab.model_bytes, dataclasses.replace(settings, lowercase=False, hyphens_as_spaces=False)
    )
    assert self_normalizing_model(unchanged) == vocab.model_bytes


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


def numbers_data(tmp_path, monkeypatch, **corpus):
    """`make data` of a small numbers corpus in tmp_path -> its config."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    overrides = ["corpus.valid_size=10", "corpus.test_size=10"]
    overrides += [f"corpus.{key}={value}" for key, value in corpus.items()]
    data.main(overrides)
    return load_config("config.yaml", overrides)


def test_token_ids_on_disk_are_the_encoded_text(tmp_path, monkeypatch, capsys):
    config = numbers_data(tmp_path, monkeypatch, train_size=300)
    src_vocab, tgt_vocab = load_vocabs(config)
    pairs = TokenPairs(config.data_dir, "train")
    text = load_split(config, "train")
    assert len(pairs) == len(text) == 300
    assert pairs.ids["src"].dtype == np.uint16  # a small vocabulary: 2 bytes a piece
    for i in (0, 1, 299):
        assert pairs.pieces("src", i).tolist() == src_vocab.encode([text[i][0]])[0]
        assert pairs.pieces("tgt", i).tolist() == tgt_vocab.encode([text[i][1]])[0]
    src, tgt_in, tgt_out = pairs.batch(np.array([3, 7]))
    ids = [(src_vocab.encode([s])[0], tgt_vocab.encode([t])[0]) for s, t in (text[3], text[7])]
    padded = max(len(s) for s, _ in ids) + 1
    assert src[0].tolist() == (ids[0][0] + [EOS] + [PAD] * padded)[:padded]
    assert tgt_in[1].tolist()[: len(ids[1][1]) + 1] == [BOS, *ids[1][1]]
    assert tgt_out[1].tolist()[: len(ids[1][1]) + 1] == [*ids[1][1], EOS]
    assert (tgt_in[:, 1:] == tgt_out[:, :-1]).all(), "the decoder output is its input, shifted"
    # contiguous: a pinned copy of a strided view would not reach a GPU asynchronously
    assert all(t.is_contiguous() for t in (src, tgt_in, tgt_out))
    capsys.readouterr()
    data.main(["corpus.valid_size=10", "corpus.test_size=10", "corpus.train_size=300"])
    assert "token ids up to date" in capsys.readouterr().out  # nothing changed: not redone


def test_a_split_with_no_pair_the_model_takes_is_an_error_and_writes_no_ids(tmp_path, monkeypatch):
    """model.max_positions 3: no numbers pair fits (2 source pieces, 2 target pieces at most);
    the ids written before stay as they were."""
    config = numbers_data(tmp_path, monkeypatch, train_size=50)
    with pytest.raises(CorpusError, match=r"^data/numbers/train: every pair \(50\) is longer"):
        data.main(["corpus.valid_size=10", "corpus.test_size=10", "corpus.train_size=50",
                   "model.max_positions=3"])  # fmt: skip
    assert not list(config.data_dir.glob("*.tmp"))
    assert len(TokenPairs(config.data_dir, "train")) == 50


def test_token_batches_cover_every_example_once_within_the_budget(tmp_path, monkeypatch):
    config = numbers_data(tmp_path, monkeypatch, train_size=2000, seed=5)
    pairs = TokenPairs(config.data_dir, "train")
    rng = np.random.default_rng(0)
    first = token_batches(pairs.src_lengths, pairs.tgt_lengths, 800, rng)
    assert sorted(i for batch in first for i in batch) == list(range(len(pairs)))
    padded, real = 0, 0
    for batch in first:
        src, tgt_in, _ = pairs.batch(batch)
        assert src.numel() + tgt_in.numel() <= 800
        padded += src.numel() + tgt_in.numel()
        real += int((src != PAD).sum() + (tgt_in != PAD).sum())
    assert real / padded > 0.9, "similar lengths should share a batch"
    second = token_batches(pairs.src_lengths, pairs.tgt_lengths, 800, rng)
    assert [b.tolist() for b in second] != [b.tolist() for b in first], "a new order each epoch"


def test_a_batch_is_as_large_as_the_budget_allows():
    src, tgt = np.array([1, 1, 1, 2, 2]), np.array([1, 1, 3, 1, 1])
    batches = token_batches(src, tgt, 16, np.random.default_rng(0))
    # sorted by source, then target: (1,1) (1,1) (1,3) (2,1) (2,1); k pairs cost k x (longest
    # source + 1 + longest target + 1) tokens: (1,1) (1,1) take 2 x 4 = 8, with (1,3) 3 x 6 = 18
    # > 16; then (1,3) (2,1) take 2 x (3 + 4) = 14, with the last 21; the last is alone
    groups = sorted(sorted(b.tolist()) for b in batches)
    assert groups in ([[0, 1], [2, 3], [4]], [[0, 1], [2, 4], [3]])  # 3 and 4 tie
    single = token_batches(np.array([50]), np.array([50]), 16, np.random.default_rng(0))
    assert [b.tolist() for b in single] == [[0]], "an over-long pair still gets a batch"


def test_the_sampler_resumes_from_a_few_numbers(tmp_path, monkeypatch):
    config = numbers_data(tmp_path, monkeypatch, train_size=600)
    pairs = TokenPairs(config.data_dir, "train")

    def sampler():
        return EpochSampler(pairs.src_lengths, pairs.tgt_lengths, 1000, 1, World(), seed=3)

    straight = sampler()
    steps = [next(straight)[0].tolist() for _ in range(40)]  # more than one epoch
    assert straight.epoch > 1
    for stop in (5, 23):
        first = sampler()
        for _ in range(stop):
            next(first)
        state = first.state_dict()
        assert set(state) == {"epoch", "done"}
        resumed = sampler()
        resumed.load_state_dict(state)
        assert [next(resumed)[0].tolist() for _ in range(40 - stop)] == steps[stop:]
