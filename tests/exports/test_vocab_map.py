"""The vocabulary map (exports/vocab_map.py): built from co-occurrences as its table says,
written into an export where the training pairs are at hand, and with decode.vmap CTranslate2
decodes a model's training sentences as it does without it."""

import dataclasses

import pytest

from seq2seq.config import CorpusConfig
from seq2seq.corpora import numbers
from seq2seq.decoding.ctranslate2_engine import CTranslate2Engine
from seq2seq.exports.ctranslate2 import export_ctranslate2
from seq2seq.exports.vocab_map import VMAP, vocab_map

from helpers import assert_same_or_tied

SPECIAL = ["<pad>", "<unk>", "<s>", "</s>"]
SOURCE = [*SPECIAL, "▁a", "▁b", "▁c"]  # ids 4, 5, 6
TARGET = [*SPECIAL, "▁x", "▁y", "▁z"]  # ids 4, 5, 6


def test_each_source_piece_lists_the_targets_of_best_dice_and_the_most_frequent_come_first():
    pairs = [([4], [4, 3]), ([4, 5], [4, 5]), ([5], [5]), ([6], [6, 4])]
    # x is in 3 pairs: the one listed for every batch. a: x (Dice 2*2/(2+3)) before y (2*1/4);
    # c: z (2*1/2) before x (2*1/4), though x is more frequent; </s> (3) is never listed
    assert vocab_map(pairs, SOURCE, TARGET, always=1, per_source=1) == (
        "\t▁x\n▁a\t▁x\n▁b\t▁y\n▁c\t▁z\n"
    )
    assert vocab_map(pairs, SOURCE, TARGET, always=2, per_source=2) == (
        "\t▁x ▁y\n▁a\t▁x ▁y\n▁b\t▁y ▁x\n▁c\t▁z ▁x\n"
    )  # b: y (2*2/4), then x (2*1/5)


pytest.importorskip(
    "ctranslate2", reason='CTranslate2 is an optional extra: pip install ".[export]"'
)


@pytest.mark.slow
def test_an_export_decodes_its_training_sentences_as_well_with_its_map(
    trained_joint_numbers_checkpoint, tmp_path, monkeypatch
):
    """The export's map leaves each sentence under half of its vocabulary (one for both
    languages: the digits' pieces and the words') as candidates, yet the greedy outputs on
    training sentences are those without it, but where the model hesitates between two
    pieces (helpers.TIE: the output layer's arithmetic is not the same on fewer rows)."""
    checkpoint = trained_joint_numbers_checkpoint[0]
    pairs = numbers.generate(CorpusConfig())["train"][:3000]  # what the model was trained on
    monkeypatch.chdir(tmp_path)
    data = checkpoint.config.data_dir
    data.mkdir(parents=True)
    for name, side in (("train.src", 0), ("train.tgt", 1)):
        (data / name).write_text("".join(pair[side] + "\n" for pair in pairs))
    export_ctranslate2(checkpoint, tmp_path / "ct2")
    lists = dict(line.split("\t") for line in (tmp_path / "ct2" / VMAP).read_text().splitlines())
    vocab, sources = checkpoint.src_vocab, [source for source, _ in pairs[:200]]
    for own in map(vocab.pieces, vocab.encode(sources)):
        candidates = {c for piece in ["", *own] for c in lists.get(piece, "").split()}
        assert len(candidates) < (len(vocab) - len(SPECIAL)) / 2
    engine = CTranslate2Engine.load(tmp_path / "ct2", "cpu", "float32")
    greedy = dataclasses.replace(checkpoint.config.decode, beam_size=1)
    without = engine.translate(sources, greedy).outputs
    assert len(set(without)) > 50, "the outputs should vary"
    mapped = engine.translate(sources, dataclasses.replace(greedy, vmap=True)).outputs
    assert assert_same_or_tied(checkpoint, sources, without, mapped) < len(sources) / 20
