"""Reading parallel text: UTF-8, BOM, CRLF, gzip, TSV, mismatches; building a corpus."""

import gzip

import pytest

from seq2seq.config import ConfigError, config_from_dict
from seq2seq.text.corpus import (
    CorpusError,
    build_corpus,
    iter_tsv,
    load_split,
    read_lines,
    read_parallel,
)


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
    config = config_from_dict({"corpus": {"type": "parallel", "name": "mine", **files}})
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
        {"corpus": {"type": "parallel", "name": "t", "max_words": 3, **files}}
    )
    assert build_corpus(config)["train"] == 2
    assert "dropped 1 pairs longer than 3 words" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="either both 'src' and 'tgt', or 'tsv' alone"):
        config_from_dict(
            {
                "corpus": {
                    "type": "parallel",
                    **{s: {"src": "a", "tsv": "b"} for s in ("train", "valid", "test")},
                }
            }
        )
