"""Pictures: attention heatmaps and training curves (matplotlib, an optional extra)."""

import sys

import pytest
import torch

from seq2seq import plot
from seq2seq.checkpoint import load_checkpoint
from seq2seq.decoding.attention_maps import attention_maps
from seq2seq.support.errors import UserError

PNG = b"\x89PNG\r\n\x1a\n"


def test_recorded_attention_weights_are_those_the_model_uses(seed_run):
    checkpoint = load_checkpoint(seed_run / "best.pt")
    attention = attention_maps(checkpoint, "three is three")
    assert attention.translation == "3 la 3" and attention.warnings == []
    maps, heads = attention.maps, checkpoint.config.model.n_heads
    src, tgt = 4, 4  # 3 words + EOS; BOS + 3 pieces
    assert [m.title for m in maps] == ["encoder 1 self", "decoder 1 self", "decoder 1 cross"]
    assert [m.kind for m in maps] == ["encoder self", "decoder self", "cross"]
    shapes = [tuple(m.weights.shape) for m in maps]
    assert shapes == [(heads, src, src), (heads, tgt, tgt), (heads, tgt, src)]
    for m in maps:
        assert m.weights.shape[1:] == (len(m.queries), len(m.keys))
        assert torch.allclose(m.weights.sum(-1), torch.ones(m.weights.shape[:-1]))
    assert (maps[1].weights.triu(1) == 0).all()  # decoder self: no peeking at later outputs
    assert maps[0].queries == ["▁three", "▁is", "▁three", "</s>"]
    recording = [module for module in checkpoint.model.modules() if hasattr(module, "record")]
    assert recording and all(not module.record for module in recording)


def test_attention_and_curves_pngs(seed_run, tmp_path):
    checkpoint = load_checkpoint(seed_run / "best.pt")
    plot.plot_attention(checkpoint, "three is three", tmp_path / "attention.png")
    plot.plot_curves(seed_run / "metrics.jsonl", tmp_path / "curves.png")
    for name in ("attention.png", "curves.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG)
        assert (tmp_path / name).stat().st_size > 10_000


def test_without_matplotlib_the_message_says_what_to_install(seed_run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(UserError, match=r'plotting needs matplotlib: pip install -e "\.\[plot\]"'):
        plot.plot_curves(seed_run / "metrics.jsonl", tmp_path / "curves.png")
    assert not (tmp_path / "curves.png").exists()


def test_curves_without_a_training_log_say_what_to_run(tmp_path):
    with pytest.raises(UserError, match="no training log at .*metrics.jsonl: run `make train`"):
        plot.plot_curves(tmp_path / "metrics.jsonl", tmp_path / "curves.png")


def test_an_input_longer_than_the_model_is_cut_with_a_warning(seed_run):
    checkpoint = load_checkpoint(seed_run / "best.pt")
    longest = checkpoint.config.model.max_positions - 1
    attention = attention_maps(checkpoint, "one " * 300)
    assert attention.warnings == [f"line 1: 300 pieces, cut to the model's {longest}"]
    encoder = attention.maps[0]
    assert encoder.weights.shape[-1] == len(encoder.keys) == longest + 1  # what fits, and EOS


def test_the_picture_of_unknown_words_names_them_on_stderr(seed_run, tmp_path, capsys):
    checkpoint = load_checkpoint(seed_run / "best.pt")
    plot.plot_attention(checkpoint, "three is eleventy", tmp_path / "attention.png")
    message = "warning: line 1: not in the vocabulary, translated as unknown: 'eleventy'\n"
    assert capsys.readouterr().err == message
