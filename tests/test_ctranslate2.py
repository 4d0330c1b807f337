"""CTranslate2 export: the converted model decodes the same tokens as ours (float32), and int8
quantization scores the same within a point."""

import dataclasses
import json

import pytest
import torch

from seq2seq.ctranslate2 import (
    CTranslate2Model,
    ctranslate2_device,
    export_ctranslate2,
)
from seq2seq.decode import translate_sentences
from seq2seq.errors import UserError
from seq2seq.metrics import exact_match, sacrebleu_scores
from seq2seq.paths import EXPORT_CONFIG

pytest.importorskip(
    "ctranslate2", reason='CTranslate2 is an optional extra: pip install ".[export]"'
)


@pytest.fixture(scope="module")
def exported(trained_numbers_checkpoint, tmp_path_factory):
    checkpoint, test = trained_numbers_checkpoint
    out_dir = tmp_path_factory.mktemp("export") / "ct2"
    export_ctranslate2(checkpoint, out_dir)
    greedy = dataclasses.replace(checkpoint.config.decode, beam_size=1)
    sources = [s for s, _ in test]
    ours = translate_sentences(
        checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab, sources, greedy
    )
    return out_dir, sources, ours, greedy


@pytest.mark.slow
def test_float32_export_decodes_exactly_our_greedy_outputs(exported):
    out_dir, sources, ours, greedy = exported
    theirs = CTranslate2Model.load(out_dir, compute_type="float32").translate(sources, greedy)
    assert len(ours) == 1000 and len(set(ours)) > 100, "the outputs should vary"
    assert theirs == ours


@pytest.mark.slow
def test_int8_loses_at_most_one_point_of_exact_match_and_bleu(exported, trained_numbers_checkpoint):
    """This barely trained model is unsure of many tokens, so int8 changes about a third of its
    outputs, but scores them the same within a point. (On the default experiment's trained
    model, int8 changed none of the 1,000 test outputs.)"""
    out_dir, sources, ours, greedy = exported
    references = [t for _, t in trained_numbers_checkpoint[1]]
    int8 = CTranslate2Model.load(out_dir, compute_type="int8").translate(sources, greedy)
    assert int8 != ours, "int8 rounds the weights: some outputs differ"
    assert abs(exact_match(int8, references) - exact_match(ours, references)) <= 0.01
    bleu = [sacrebleu_scores(out, references)["bleu"] for out in (int8, ours)]
    assert abs(bleu[0] - bleu[1]) <= 1.0


def test_empty_lines_give_empty_lines_and_export_replaces_an_earlier_one(
    exported, trained_numbers_checkpoint
):
    out_dir, _, _, greedy = exported
    export_ctranslate2(trained_numbers_checkpoint[0], out_dir)  # again, over the first
    model = CTranslate2Model.load(out_dir)
    assert model.translate(["", "three is three", ""], greedy)[::2] == ["", ""]
    assert json.loads((out_dir / EXPORT_CONFIG).read_text())["model"]["d_model"] == 64


def test_a_folder_that_is_not_an_export_is_refused(trained_numbers_checkpoint, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not an earlier export"):
        export_ctranslate2(trained_numbers_checkpoint[0], tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    with pytest.raises(UserError, match="not an exported model"):
        CTranslate2Model.load(tmp_path)


def test_loading_leaves_torch_its_threads(exported):
    """CTranslate2 sets the OpenMP thread count it shares with torch; once it did so for the
    rest of the process, and `make bench` then measured torch on one thread."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        CTranslate2Model.load(exported[0])
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_our_device_names_in_ctranslate2s_terms():
    assert ctranslate2_device("auto", cuda_devices=0) == ("cpu", 0)
    assert ctranslate2_device("auto", cuda_devices=2) == ("cuda", 0)
    assert ctranslate2_device("cpu", cuda_devices=2) == ("cpu", 0)
    assert ctranslate2_device("cuda", cuda_devices=2) == ("cuda", 0)
    assert ctranslate2_device("cuda:1", cuda_devices=2) == ("cuda", 1)
    with pytest.raises(UserError, match="'cuda:2' requested but CTranslate2 sees 2 GPU"):
        ctranslate2_device("cuda:2", cuda_devices=2)
    for name in ("mps", "gpu"):
        with pytest.raises(UserError, match="CTranslate2 runs on auto, cpu, cuda or cuda:N"):
            ctranslate2_device(name, cuda_devices=2)
