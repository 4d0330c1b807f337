"""Multi30k: download through a file:// URL to the offline copy, checksums, caching."""

import shutil
from pathlib import Path

import pytest

from seq2seq.config import config_from_dict
from seq2seq.corpus import build_corpus, load_split
from seq2seq.errors import UserError

SHARED = Path(__file__).resolve().parent.parent.parent / "shared/corpora/multi30k"
pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason="no offline Multi30k copy beside")


def multi30k_config(base_url: str, **corpus):
    return config_from_dict(
        {"corpus": {"type": "multi30k", "name": "m30k", "base_url": base_url, **corpus}}
    )


def test_download_verify_and_build_from_the_offline_copy(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    counts = build_corpus(multi30k_config(SHARED.as_uri()))
    assert counts == {"train": 29000, "valid": 1014, "test": 1000}
    src, tgt = load_split(multi30k_config(SHARED.as_uri()), "test")[0]
    assert src.startswith("Ein Mann mit einem orangefarbenen Hut")
    assert tgt.startswith("A man in an orange hat")
    assert sorted(p.name for p in (tmp_path / "data/m30k/raw").iterdir()) == [
        "test_2016_flickr.de.gz", "test_2016_flickr.en.gz", "train.de.gz", "train.en.gz",
        "val.de.gz", "val.en.gz",
    ]  # fmt: skip
    # Cached and verified: a second build needs no download at all.
    assert build_corpus(multi30k_config((tmp_path / "nowhere").as_uri())) == counts


def test_english_to_german_and_the_2017_test_set(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = multi30k_config(
        SHARED.as_uri(), src_lang="en", tgt_lang="de", test_set="test_2017_flickr"
    )
    build_corpus(config)
    src, tgt = load_split(config, "test")[0]
    assert src.isascii() and len(load_split(config, "test")) == 1000


def test_a_corrupt_file_is_an_error_and_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mirror = tmp_path / "mirror"
    shutil.copytree(SHARED, mirror)
    (mirror / "val.de.gz").chmod(0o644)
    data = bytearray((mirror / "val.de.gz").read_bytes())
    data[100] ^= 0xFF
    (mirror / "val.de.gz").write_bytes(bytes(data))
    with pytest.raises(UserError, match=r"val.de.gz: SHA-256 \w+ does not match the expected"):
        build_corpus(multi30k_config(mirror.as_uri()))
    raw = tmp_path / "data/m30k/raw"
    assert not (raw / "val.de.gz").exists()
    assert not [p for p in raw.iterdir() if p.name.endswith(".tmp")]
    assert not (tmp_path / "data/m30k/valid.src").exists()


def test_an_unreachable_source_says_which_url(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match=r"could not download file://.*train.de.gz"):
        build_corpus(multi30k_config((tmp_path / "nowhere").as_uri()))
