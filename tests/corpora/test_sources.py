"""corpus.type sources, offline: a local HTTP server on 127.0.0.1 plays the OPUS API, OPUS's
object store, statmt.org (a sacreBLEU test set) and a web site, serving small files made here
in the real sources' layouts; corpus.mirror sends every download there. The real loading code
runs: the OPUS API's JSON, the Moses zip, sacreBLEU's own download and SGML reading, the
downloader's resume and checks. Nothing leaves this machine."""

import hashlib
import json

import pytest

from seq2seq.config import ConfigError, config_from_dict
from seq2seq.corpora.corpus_types import build_corpus
from seq2seq.corpora.source_checks import description
from seq2seq.text.parallel import load_split

from sources_mirror import EN, FR, OPUS_FILE, assert_nothing_written, one_line_error, sources_config


def test_sources_by_name_url_and_file_mixed_then_again_offline(served, tmp_path, capsys):
    (tmp_path / "mine.tsv").write_text("bonjour en anglais\tbonjour\n", encoding="utf-8")
    config = sources_config(
        served,
        [
            {"opus": "Tatoeba", "max_pairs": 4},
            {"url": "https://example.org/own.tsv.gz"},
            {"file": "mine.tsv", "weight": 3},
        ],
        valid={"url": "https://example.org/valid.tsv.gz"},
        test={"sacrebleu": "wmt14"},
    )
    counts = build_corpus(config)
    assert counts == {"train": 4 + 2 + 3, "valid": 2, "test": 4}
    train = load_split(config, "train")
    assert train[:4] == list(zip(EN[4:8], FR[4:8], strict=True))  # 0-3 are the test set's
    assert train[4:] == [("my own", "le mien"), ("mine too", "à moi aussi")] + 3 * [
        ("bonjour en anglais", "bonjour")
    ]
    assert load_split(config, "test") == list(zip(EN[:4], FR[:4], strict=True))
    report = capsys.readouterr().out
    assert (
        "train_sources[0] (opus Tatoeba): 8 pairs read, 4 in_other_split removed, 4 kept" in report
    )
    assert "train_sources[2] (mine.tsv): 1 pairs read, none removed, 1 kept, 2 copies" in report
    origin = f"https://object.pouta.csc.fi{OPUS_FILE}"
    name = "opus-Tatoeba-latest-en-fr.txt.zip"
    assert f"{name}: from {served.url}{OPUS_FILE}, the mirror of {origin}\n" in report

    raw = tmp_path / "data/en_fr/raw"
    manifest = json.loads((raw / "manifest.json").read_text())
    opus = manifest[name]
    assert (opus["url"], opus["mirror_url"]) == (origin, f"{served.url}{OPUS_FILE}")
    assert opus["sha256"] == hashlib.sha256(served.files[OPUS_FILE]).hexdigest()
    assert opus["size"] == len(served.files[OPUS_FILE])
    assert manifest["sacrebleu-wmt14.en-fr.fr"]["url"] == "sacrebleu:wmt14"
    assert len(manifest) == 5  # opus, own, valid, and the test set's two sides

    # A second `make data` from the manifest: the server is gone, sacreBLEU's cache emptied.
    served.shutdown()
    served.server_close()
    for path in (tmp_path / "sacrebleu-cache").rglob("*"):
        if path.is_file():
            path.unlink()
    before = len(served.requests)
    assert build_corpus(config) == counts
    assert len(served.requests) == before


def test_each_source_is_cleaned_before_its_max_pairs_and_weight(served, tmp_path):
    """A pair in two sources is kept once; a weighted source keeps its copies, less any pair
    of the test split; report.json counts each source beside its split."""
    (tmp_path / "a.tsv").write_text("shared\tpartagé\nfirst\tpremier\n", encoding="utf-8")
    (tmp_path / "b.tsv").write_text(
        f"shared\tpartagé\n{EN[6]}\t{FR[6]}\nmine\tà moi\nmore\tplus\n", encoding="utf-8"
    )
    config = sources_config(
        served, [{"file": "a.tsv"}, {"file": "b.tsv", "weight": 3, "max_pairs": 1}]
    )  # the test split (test.tsv.gz) holds EN[6], FR[6]
    assert build_corpus(config) == {"train": 2 + 3, "valid": 2, "test": 2}
    assert load_split(config, "train") == [("shared", "partagé"), ("first", "premier")] + 3 * [
        ("mine", "à moi")
    ]
    report = json.loads((tmp_path / "data/en_fr/report.json").read_text())
    b = report["train"]["sources"]["train_sources[1] (b.tsv)"]
    assert (b["read"], b["kept"], b["copies"]) == (3, 1, 2)  # max_pairs: "more" is not read
    assert b["removed"]["duplicate"] == 1 and b["removed"]["in_other_split"] == 1
    train = report["train"]
    assert (train["read"], train["kept"], train["copies"]) == (5, 3, 2)
    assert train["removed"]["duplicate"] == 1 and train["removed"]["in_other_split"] == 1
    assert report["test"]["sources"]["test_source (https://example.org/test.tsv.gz)"]["kept"] == 2


def test_without_valid_and_test_sources_both_are_split_off_the_training_sources(served, tmp_path):
    """A pair with one corpus (often so for a small language) names no valid or test source:
    corpus.valid_size and test_size pairs are split off the training data, as for a parallel
    corpus, and counted in the report."""
    config = config_from_dict(
        {
            "corpus": {
                "type": "sources", "name": "en_fr", "src_lang": "en", "tgt_lang": "fr",
                "mirror": served.url, "train_sources": [{"opus": "Tatoeba"}],
                "valid_size": 2, "test_size": 3,
            }
        }
    )  # fmt: skip
    assert build_corpus(config) == {"train": 5, "valid": 2, "test": 3}
    splits = {split: load_split(config, split) for split in ("train", "valid", "test")}
    assert sorted(sum(splits.values(), [])) == sorted(zip(EN, FR, strict=True))
    report = json.loads((tmp_path / "data/en_fr/report.json").read_text())
    assert [report[split]["kept"] for split in ("train", "valid", "test")] == [5, 2, 3]


@pytest.mark.parametrize(
    ("train_source", "expected"),
    [
        ({"opus": "Tatoebo"}, "OPUS has no Tatoebo latest for en-fr (did you mean Tatoeba?)"),
        ({"url": "https://example.org/missing.tsv"}, "missing.tsv (HTTP 404"),
        ({"url": "https://example.org/no-fr.zip"}, "no-fr.zip holds no file ending .fr"),
        ({"sacrebleu": "wmt-14"}, "sacreBLEU has no test set 'wmt-14' (did you mean wmt14?)"),
        ({"sacrebleu": "wmt16"}, "sacreBLEU's wmt16 has no en-fr (it has"),
    ],
)
def test_bad_sources_are_one_line_errors_and_write_nothing(
    served, tmp_path, train_source, expected
):
    message = one_line_error(sources_config(served, [train_source]))
    assert expected in message, message
    assert_nothing_written(tmp_path)


def test_a_moses_pair_of_different_line_counts_is_found_as_train_is_read(served, tmp_path):
    """After the test and valid splits are written (cleaning writes them first): train is not
    written, and no temporary file is left."""
    config = sources_config(served, [{"url": "https://example.org/pair/train.{lang}.gz"}])
    assert "has 3 lines but" in one_line_error(config)
    left = sorted(p.name for p in (tmp_path / "data/en_fr").rglob("*"))
    assert not [n for n in left if n.startswith("train.") or n.endswith((".tmp", ".part"))]


def test_an_unknown_pair_on_opus(served, tmp_path):
    config = sources_config(served, [{"opus": "Tatoeba"}], tgt_lang="xx")
    assert "OPUS has no Tatoeba latest for en-xx (nor any corpus" in one_line_error(config)
    assert_nothing_written(tmp_path)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ({"opus": "Tatoeba", "url": "https://x.org/a.tsv"}, "exactly one of"),
        ({"opus": "Tatoeba", "wieght": 2}, "did you mean 'corpus.train_sources[0].weight'"),
        ({"file": "a.tsv", "weight": 0}, "'corpus.train_sources[0].weight' must be at least 1"),
        ({"file": "a.txt"}, "must end in .tsv, .tsv.gz or .zip"),
        ({"url": "ftp://x.org/a.tsv"}, "or file:// URL, got 'ftp://x.org/a.tsv'"),
        ({"opus": "../etc"}, "a name, not a path"),
    ],
)
def test_source_config_problems_name_the_key(source, expected):
    corpus = {
        "type": "sources", "src_lang": "en", "tgt_lang": "fr", "train_sources": [source],
        "valid_source": {"file": "v.tsv"}, "test_source": {"file": "t.tsv"},
    }  # fmt: skip
    with pytest.raises(ConfigError, match=expected.replace("[", r"\[").replace("(", r"\(")):
        config_from_dict({"corpus": corpus})


def test_the_sources_keys_belong_to_their_type():
    with pytest.raises(ConfigError, match="'corpus.train_sources' is only used with"):
        config_from_dict({"corpus": {"type": "numbers", "train_sources": [{"file": "a.tsv"}]}})
    with pytest.raises(ConfigError, match=r"'corpus.src_lang' is 'fr'; Multi30k has"):
        config_from_dict({"corpus": {"type": "multi30k", "src_lang": "fr"}})


def test_a_download_address_that_is_no_url_is_a_config_error_naming_the_key():
    """A local folder given as a path, not a file:// URL, is refused when the config is read
    (urllib's traceback before), with the URL to write instead."""
    expected = (
        r"'corpus.base_url' must be an http\(s\):// or file:// URL, got '/mirror/m30k' \(a "
        r"local folder: file:///mirror/m30k\)$"
    )
    with pytest.raises(ConfigError, match=expected):
        config_from_dict({"corpus": {"type": "multi30k", "base_url": "/mirror/m30k"}})
    sources = {"type": "sources", "src_lang": "en", "tgt_lang": "fr", "mirror": "ftp://m/",
               "train_sources": [{"opus": "Tatoeba"}]}  # fmt: skip
    with pytest.raises(ConfigError, match=r"'corpus.mirror' must be an .* got 'ftp://m/'$"):
        config_from_dict({"corpus": sources})


def test_a_model_card_names_the_mirror_its_data_came_from(server):
    config = sources_config(server, [{"opus": "Tatoeba"}, {"url": "https://example.org/a.tsv.gz"}])
    assert description(config.corpus) == (
        "en-fr pairs from opus Tatoeba, url https://example.org/a.tsv.gz (downloaded from the "
        f"mirror {server.url})"
    )
