"""Reading parallel text: UTF-8, BOM, CRLF, gzip, TSV, mismatches; building a corpus; the
corpus types' registry."""

import gzip
import types
import typing

import pytest

from seq2seq.config import (
    ConfigError,
    CorpusConfig,
    ServeConfig,
    config_from_dict,
    translation_pair,
)
from seq2seq.corpora.corpus_types import CORPORA, build_corpus, corpus_type
from seq2seq.exports.huggingface import hub_languages
from seq2seq.exports.model_card import facts
from seq2seq.text.parallel import CorpusError, iter_tsv, load_split, read_lines, read_parallel


def write(path, data: bytes):
    path.write_bytes(data)
    return path


def test_reads_utf8_with_bom_and_crlf(tmp_path):
    path = write(tmp_path / "a.txt", "\ufeffuno\r\nañadir ünïcode\r\n\r\nlast".encode())
    assert read_lines(path) == ["uno", "añadir ünïcode", "", "last"]


def test_invalid_utf8_names_the_file_and_line(tmp_path):
    path = write(tmp_path / "bad.txt", b"fine\nstill fine\nbro\xffken\n")
    with pytest.raises(CorpusError, match=r"bad.txt, line 3: invalid UTF-8"):
        read_lines(path)


def test_mismatched_line_counts_name_both_files_and_counts(tmp_path):
    src = write(tmp_path / "x.src", b"a\nb\nc\n")
    tgt = write(tmp_path / "x.tgt", b"1\n2\n")
    with pytest.raises(CorpusError, match=r"x.src has 3 lines but .*x.tgt has 2"):
        read_parallel(src, tgt)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(CorpusError, match="nope.src not found"):
        read_lines(tmp_path / "nope.src")


def test_parallel_corpus_is_checked_and_copied_into_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = {}
    for split in ("train", "valid", "test"):
        write(tmp_path / f"{split}.de", b"eins\r\n\nzwei\n")
        write(tmp_path / f"{split}.en", b"one\r\nlost\ntwo\n")
        files[split] = {"src": f"{split}.de", "tgt": f"{split}.en"}
    config = config_from_dict(  # the same pairs in each split: kept (test_cleaning.py)
        {
            "corpus": {"type": "parallel", "name": "mine", **files},
            "clean": {"drop_duplicates": False},
        }
    )
    assert build_corpus(config) == {"train": 2, "valid": 2, "test": 2}  # the empty pair dropped
    assert load_split(config, "valid") == [("eins", "one"), ("zwei", "two")]
    assert (tmp_path / "data/mine/train.src").read_text() == "eins\nzwei\n"


def test_loading_a_split_before_make_data_says_what_to_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CorpusError, match="run `make data`"):
        load_split(config_from_dict({}), "train")


def test_reads_gzip_and_reports_a_broken_one(tmp_path):
    path = write(tmp_path / "a.de.gz", gzip.compress(b"eins\r\nzwei\n"))
    assert read_lines(path) == ["eins", "zwei"]
    broken = write(tmp_path / "b.de.gz", gzip.compress(b"eins\nzwei\n")[:-6])
    with pytest.raises(CorpusError, match=r"b.de.gz: not a readable gzip file"):
        read_lines(broken)


def test_tsv_pairs_and_malformed_lines(tmp_path):
    good = write(tmp_path / "a.tsv", b"eins\tone\nzwei \t two\n")
    assert list(iter_tsv(good)) == [("eins", "one"), ("zwei", "two")]
    bad = write(tmp_path / "b.tsv", b"eins\tone\nzwei two\n")
    with pytest.raises(CorpusError, match=r"b.tsv, line 2: expected source<TAB>target, found 1"):
        list(iter_tsv(bad))


def test_tsv_and_gzip_corpus_drops_long_pairs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "all.tsv", b"a b c\tx y z\na\tx\na b c d e\tx\n")
    files = {split: {"tsv": "all.tsv"} for split in ("train", "valid", "test")}
    config = config_from_dict(
        {"corpus": {"type": "parallel", "name": "t", "max_words": 3, **files},
         "clean": {"drop_duplicates": False}}
    )  # fmt: skip
    assert build_corpus(config)["train"] == 2
    assert "train: 3 pairs read, 1 too_long removed, 2 kept" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="either both 'src' and 'tgt', or 'tsv' alone"):
        config_from_dict(
            {
                "corpus": {
                    "type": "parallel",
                    **{s: {"src": "a", "tsv": "b"} for s in ("train", "valid", "test")},
                }
            }
        )


def test_the_registry_has_an_entry_for_each_corpus_type_the_config_accepts():
    assert list(CORPORA) == list(typing.get_args(typing.get_type_hints(CorpusConfig)["type"]))


PARALLEL = {split: {"tsv": "all.tsv"} for split in ("train", "valid", "test")}
TYPES = {  # a config of each corpus type, and the languages the service gives it by default
    "numbers": ({}, ("en", "digits"), ["en"]),
    "multi30k": ({"src_lang": "en", "tgt_lang": "de"}, ("en", "de"), ["en", "de"]),
    "parallel": (PARALLEL, ("src", "tgt"), []),
}


@pytest.mark.parametrize("kind", TYPES)
def test_the_languages_agree_for_the_service_the_argos_package_and_the_hub(kind):
    corpus, codes, hub = TYPES[kind]
    config = config_from_dict({"corpus": {"type": kind, **corpus}})
    assert tuple(language.code for language in translation_pair(config, config.serve)) == codes
    assert hub_languages(types.SimpleNamespace(config=config)) == hub
    french = config_from_dict({"corpus": {"type": kind, **corpus}, "serve": {
        "source_language": {"code": "fr", "name": "French"}}})  # fmt: skip
    assert hub_languages(types.SimpleNamespace(config=french)) == ["fr", *hub[1:]]
    assert translation_pair(french, ServeConfig())[0] == translation_pair(config, config.serve)[0]


@pytest.mark.parametrize("kind", TYPES)
def test_a_model_card_describes_the_corpus_of_its_type(kind, monkeypatch):
    config = config_from_dict({"corpus": {"type": kind, **TYPES[kind][0]}})
    expected = {"numbers": "the generated numbers corpus", "multi30k": "Multi30k task 1, en to de",
                "parallel": "the parallel corpus numbers"}[kind]  # fmt: skip
    assert corpus_type(config.corpus).description(config.corpus).startswith(expected)
    model = types.SimpleNamespace(num_parameters=lambda: 1, cfg=config.model)
    vocab = [""] * 8
    checkpoint = types.SimpleNamespace(
        config=config, model=model, src_vocab=vocab, tgt_vocab=vocab, one_vocabulary=True, info={}
    )
    assert f"Trained with seq2seq on {expected}" in facts(checkpoint)


def test_a_corpus_type_adds_its_own_scores_only():
    refs = ["1 2 la 3", "4 la 4"]
    numbers_scores = corpus_type(CorpusConfig(type="numbers")).metrics(refs, refs)
    assert numbers_scores["exact_match_by_digits"]["first_number"]["2"]["exact_match"] == 1.0
    assert corpus_type(CorpusConfig(type="multi30k")).metrics(refs, refs) == {}


def test_a_corpus_types_rules_are_checked_with_the_config():
    with pytest.raises(ConfigError, match="'corpus.src_lang' and 'tgt_lang' must differ"):
        config_from_dict({"corpus": {"type": "multi30k", "src_lang": "en", "tgt_lang": "en"}})
    with pytest.raises(ConfigError, match="'corpus.valid' is only used with corpus.type: parallel"):
        config_from_dict({"corpus": {"type": "multi30k", "valid": {"tsv": "a.tsv"}}})
    with pytest.raises(ConfigError, match="'corpus.test_size' must be positive"):
        config_from_dict({"corpus": {"test_size": 0}})
    assert config_from_dict({"corpus": {"type": "parallel", "test_size": 0, **PARALLEL}})
