"""Reading parallel text: UTF-8, BOM, CRLF, mismatches; and building a corpus from it."""

import pytest

from seq2seq.config import config_from_dict
from seq2seq.corpus import CorpusError, build_corpus, load_split, read_lines, read_parallel


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
