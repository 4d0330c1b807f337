"""One source for every option's documentation: the comments in seq2seq/options.py, from which
config.yaml and docs/configuration.md are written (seq2seq/config_docs.py)."""

from pathlib import Path

import pytest

from seq2seq import config_docs
from seq2seq.config import DecodeConfig, TrainConfig

from helpers import ROOT


def test_every_option_is_documented_beside_its_type():
    undocumented = [
        f"{name}.{option.name}"
        for name, cls in config_docs.sections()
        for option in config_docs.options(cls)
        if not option.text
    ]
    undocumented += [
        f"{name}.{field}[].{option.name}"
        for name, cls in config_docs.sections()
        for field, entry in config_docs.list_entries(cls)
        for option in config_docs.options(entry)
        if not option.text
    ]
    assert undocumented == []
    assert [name for name, _ in config_docs.sections()] == list(config_docs.SECTIONS)


def test_the_entries_of_a_list_of_sections_get_their_own_table():
    reference = config_docs.render_reference()
    assert "Each entry of `corpus.train_sources`: One source of sentence pairs" in reference
    assert "| `corpus.train_sources[].weight` | `int` | `1` | train: this source's" in reference


def test_comments_above_and_beside_an_option_are_both_its_documentation():
    options = {option.name: option for option in config_docs.options(TrainConfig)}
    assert options["precision"].above[0].startswith("auto: bf16 autocast on a GPU")
    assert options["precision"].type == 'Literal["auto", "fp32", "bf16", "fp16"]'
    assert options["lr"].text == "peak learning rate (AdamW), reached after the warmup"
    assert (options["lr"].type, options["lr"].range) == ("float", "positive")  # Annotated
    assert options["precision"].range == ""
    (max_len_b,) = [o for o in config_docs.options(DecodeConfig) if o.name == "max_len_b"]
    assert max_len_b.above == [] and max_len_b.beside == "see max_len_a"


@pytest.mark.parametrize("path", [Path(config_docs.DEFAULT_CONFIG), config_docs.REFERENCE])
def test_the_generated_files_are_up_to_date(path, monkeypatch):
    monkeypatch.chdir(ROOT)
    expected = config_docs.generated()[path]
    assert (ROOT / path).read_text() == expected, f"{path} is out of date: run `make config-docs`"
