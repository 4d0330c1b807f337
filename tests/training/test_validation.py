"""Validation's translations (train.valid_engine): CTranslate2, from the model exported as it
is at that step, decodes what our own decoding does; which engine each setting picks."""

import dataclasses

import pytest
import torch

from seq2seq.support.errors import UserError
from seq2seq.training import validation
from seq2seq.training.validation import uses_ctranslate2, valid_translations

from helpers import assert_same_or_tied

CPU = torch.device("cpu")


@pytest.mark.same_outputs
@pytest.mark.slow
def test_ctranslate2_translates_the_valid_split_as_our_decoding(
    trained_numbers_checkpoint, tmp_path, monkeypatch
):
    """The same outputs, but where the model hesitates (helpers.TIE), and no export left behind."""
    pytest.importorskip(
        "ctranslate2", reason='CTranslate2 is an optional extra: pip install ".[export]"'
    )
    checkpoint, test = trained_numbers_checkpoint
    config = checkpoint.config
    monkeypatch.chdir(tmp_path)
    config.run_dir.mkdir(parents=True)
    vocabs = checkpoint.src_vocab, checkpoint.tgt_vocab
    sources = [s for s, _ in test[:300]]
    greedy = dataclasses.replace(config.decode, beam_size=1)

    def translations(engine: str) -> list[str]:
        settings = dataclasses.replace(
            config, train=dataclasses.replace(config.train, valid_engine=engine)
        )
        found = valid_translations(checkpoint.model, settings, vocabs, sources, greedy, CPU)
        return found.outputs

    ours, theirs = translations("torch"), translations("ctranslate2")
    assert len(set(ours)) > 50, "the outputs should vary"
    assert_same_or_tied(checkpoint, sources, ours, theirs)
    assert list(config.run_dir.iterdir()) == []


def test_auto_is_ctranslate2_on_a_cpu_where_it_is_installed(monkeypatch):
    pytest.importorskip("ctranslate2")
    assert uses_ctranslate2("auto", CPU)
    assert not uses_ctranslate2("auto", torch.device("cuda"))
    assert not uses_ctranslate2("torch", CPU)

    def missing():
        raise UserError("CTranslate2 is not installed")

    monkeypatch.setattr(validation, "import_ctranslate2", missing)
    with pytest.raises(UserError, match="not installed"):
        uses_ctranslate2("ctranslate2", CPU)
