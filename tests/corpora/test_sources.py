"""corpus.type sources, offline: a local HTTP server on 127.0.0.1 plays the OPUS API, OPUS's
object store, statmt.org (a sacreBLEU test set) and a web site, serving small files made here
in the real sources' layouts; corpus.mirror sends every download there. The real loading code
runs: the OPUS API's JSON, the Moses zip, sacreBLEU's own download and SGML reading, the
downloader's resume and checks. Nothing leaves this machine."""

import gzip
import hashlib
import io
import json
import tarfile
from http.server import ThreadingHTTPServer

import pytest
from sacrebleu import DATASETS

from seq2seq.config import ConfigError, config_from_dict
from seq2seq.corpora.corpus_types import build_corpus
from seq2seq.corpora.download import Downloads
from seq2seq.corpora.source_checks import description
from seq2seq.support.errors import UserError
from seq2seq.text.parallel import load_split

from helpers import MirrorHandler, mirror, moses_zip

EN = [f"sentence number {i}" for i in range(10)]
FR = [f"phrase numéro {i}" for i in range(10)]
OPUS_FILE = "/OPUS-Tatoeba/v2023-04-12/moses/en-fr.txt.zip"  # the path of its real URL
WMT14 = "/wmt14/test-filtered.tgz"  # sacreBLEU's wmt14: https://statmt.org/wmt14/test-filtered.tgz


def wmt14_tarball() -> bytes:
    """test-filtered.tgz as sacreBLEU's registry lays out wmt14 en-fr: fake-SGML files at the
    paths DATASETS["wmt14"].langpairs["en-fr"] names."""
    src_path, ref_path = DATASETS["wmt14"].langpairs["en-fr"]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, lines in ((src_path, EN[:4]), (ref_path, FR[:4])):
            segments = "".join(f'<seg id="{i}">{line}</seg>\n' for i, line in enumerate(lines))
            text = f'<srcset setid="newstest2014">\n<doc docid="d1">\n{segments}</doc>\n</srcset>\n'
            info = tarfile.TarInfo(path)
            info.size = len(text.encode())
            archive.addfile(info, io.BytesIO(text.encode()))
    return buffer.getvalue()


def opus_api(query: dict) -> dict:
    """The OPUS API's answers, in its JSON layout (Helsinki-NLP/OPUS-API): a corpus's files for
    a pair (source and target in alphabetical order), or the corpora of a pair."""
    pair = sorted([query.get("source", ""), query.get("target", "")])
    known = pair == ["en", "fr"]
    if "corpora" in query:
        return {"corpora": ["Tatoeba", "Europarl"] if known else []}
    if not (known and query.get("corpus") == "Tatoeba" and query.get("preprocessing") == "moses"):
        return {"corpora": []}
    entry = {
        "alignment_pairs": 10, "corpus": "Tatoeba", "documents": "", "id": 1, "latest": "True",
        "preprocessing": "moses", "size": 1, "source": "en", "source_tokens": 30,
        "target": "fr", "target_tokens": 30, "version": "v2023-04-12",
        "url": f"https://object.pouta.csc.fi{OPUS_FILE}",
    }  # fmt: skip
    return {"corpora": [entry]}


@pytest.fixture
def server():
    with mirror(opus_api) as httpd:
        yield httpd


@pytest.fixture
def sacrebleu_cache(tmp_path, monkeypatch):
    """What is patched of sacreBLEU's registry entry for wmt14: its MD5 sum (the fixture is not
    the real tarball) and its cache folder (sacreBLEU fixes it from $SACREBLEU at import)."""
    data = wmt14_tarball()
    cache = tmp_path / "sacrebleu-cache"
    wmt14 = DATASETS["wmt14"]
    monkeypatch.setattr(wmt14, "md5", [hashlib.md5(data).hexdigest()])
    monkeypatch.setattr(wmt14, "_outdir", str(cache / "wmt14"))
    monkeypatch.setattr(wmt14, "_rawdir", str(cache / "wmt14/raw"))
    return data


def gz_tsv(pairs) -> bytes:
    return gzip.compress("".join(f"{s}\t{t}\n" for s, t in pairs).encode())


def sources_config(server, train_sources, valid=None, test=None, **corpus):
    return config_from_dict(
        {
            "corpus": {
                "type": "sources", "name": "en_fr", "src_lang": "en", "tgt_lang": "fr",
                "mirror": server.url, "train_sources": train_sources,
                "valid_source": valid or {"url": "https://example.org/valid.tsv.gz"},
                "test_source": test or {"url": "https://example.org/test.tsv.gz"},
                **corpus,
            }
        }
    )  # fmt: skip


def assert_nothing_written(tmp_path, keep_part=False):
    """No split written, no temporary file, and a .part only where a resume may use it."""
    corpus = tmp_path / "data/en_fr"
    left = sorted(p.name for p in corpus.rglob("*")) if corpus.exists() else []
    assert not [n for n in left if n.endswith((".src", ".tgt", ".tmp"))], left
    assert keep_part or not [n for n in left if n.endswith(".part")], left


def one_line_error(config) -> str:
    with pytest.raises(UserError) as error:
        build_corpus(config)
    message = str(error.value)
    assert "\n" not in message
    return message


@pytest.fixture
def served(server, sacrebleu_cache, tmp_path, monkeypatch):
    """The server with every fixture file; the test's working directory is tmp_path."""
    monkeypatch.chdir(tmp_path)
    pairs = list(zip(EN, FR, strict=True))
    server.files.update(
        {
            OPUS_FILE: moses_zip(pairs, "Tatoeba.en-fr", ("en", "fr")),
            WMT14: sacrebleu_cache,
            "/own.tsv.gz": gz_tsv([("my own", "le mien"), ("mine too", "à moi aussi")]),
            "/valid.tsv.gz": gz_tsv(pairs[8:]),
            "/test.tsv.gz": gz_tsv(pairs[6:8]),
            "/pair/train.en.gz": gzip.compress(b"a\nb\nc\n"),
            "/pair/train.fr.gz": gzip.compress(b"x\ny\n"),
            "/no-fr.zip": moses_zip(pairs, "Tatoeba.en-fr", ("en", "de")),
        }
    )
    return server


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


def test_a_stopped_download_resumes_with_a_range_request(served, tmp_path):
    config = sources_config(served, [{"url": "https://example.org/own.tsv.gz"}])
    served.truncate["/own.tsv.gz"] = 20
    message = one_line_error(config)
    size = len(served.files["/own.tsv.gz"])
    assert f"the download stopped at 20 of {size} bytes" in message
    assert "run `make data` again to resume it" in message
    assert_nothing_written(tmp_path, keep_part=True)
    (part,) = (tmp_path / "data/en_fr/raw").glob("*.part")
    assert part.stat().st_size == 20

    served.truncate.clear()
    build_corpus(config)
    assert ("/own.tsv.gz", "bytes=20-") in served.requests
    assert not list((tmp_path / "data/en_fr/raw").glob("*.part"))
    assert load_split(config, "train") == [("my own", "le mien"), ("mine too", "à moi aussi")]


def test_a_cut_archive_whose_server_says_its_cut_length_is_not_kept(served, tmp_path):
    config = sources_config(served, [{"url": "https://example.org/own.tsv.gz"}])
    whole = served.files["/own.tsv.gz"]
    served.files["/own.tsv.gz"] = whole[: len(whole) // 2]  # Content-Length: the cut one
    message = one_line_error(config)
    assert message.startswith(f"{served.url}/own.tsv.gz: not a whole gzip file (")
    assert message.endswith("run `make data` again to download it again")
    assert_nothing_written(tmp_path)
    raw = tmp_path / "data/en_fr/raw"
    manifest = raw / "manifest.json"
    assert not list(raw.glob("*own*")) and (
        not manifest.exists() or "own" not in manifest.read_text()
    )

    served.files["/own.tsv.gz"] = whole  # the good file back on the server
    build_corpus(config)
    assert load_split(config, "train") == [("my own", "le mien"), ("mine too", "à moi aussi")]


def test_a_cut_archive_recorded_by_an_older_version_is_downloaded_again(served, tmp_path, capsys):
    """Before downloads were opened, a cut .gz whose server said the cut length was recorded
    in the manifest as good, and every later `make data` failed on it without a request."""
    config = sources_config(served, [{"url": "https://example.org/own.tsv.gz"}])
    build_corpus(config)
    raw = tmp_path / "data/en_fr/raw"
    (own,) = raw.glob("url-*-own.tsv.gz")
    cut = own.read_bytes()[: own.stat().st_size // 2]
    own.write_bytes(cut)
    manifest = json.loads((raw / "manifest.json").read_text())
    manifest[own.name] = {
        "url": "https://example.org/own.tsv.gz", "size": len(cut),
        "sha256": hashlib.sha256(cut).hexdigest(),
    }  # fmt: skip
    (raw / "manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "data/en_fr/train.src").unlink()
    served.requests.clear()
    capsys.readouterr()

    build_corpus(config)
    assert (
        f"warning: {own.relative_to(tmp_path)}: not a whole gzip file (" in capsys.readouterr().err
    )
    assert ("/own.tsv.gz", None) in served.requests
    assert load_split(config, "train") == [("my own", "le mien"), ("mine too", "à moi aussi")]
    assert json.loads((raw / "manifest.json").read_text())[own.name]["opens"] is True


def test_a_file_that_changed_at_its_source_is_refused_and_not_kept(served, tmp_path):
    config = sources_config(served, [{"url": "https://example.org/own.tsv.gz"}])
    build_corpus(config)
    raw = tmp_path / "data/en_fr/raw"
    (own,) = raw.glob("url-*-own.tsv.gz")
    recorded = hashlib.sha256(own.read_bytes()).hexdigest()
    own.unlink()
    (tmp_path / "data/en_fr/train.src").unlink()
    served.files["/own.tsv.gz"] = gz_tsv([("other", "autre")])
    message = one_line_error(config)
    served_sum = hashlib.sha256(served.files["/own.tsv.gz"]).hexdigest()
    assert f"SHA-256 {served_sum} does not match the one in" in message
    assert recorded in message and "manifest.json" in message
    assert not own.exists() and not list(raw.glob("*.part"))


def test_a_test_set_that_differs_from_the_manifest_is_refused(served, tmp_path):
    config = sources_config(served, [{"opus": "Tatoeba"}], test={"sacrebleu": "wmt14"})
    build_corpus(config)
    (tmp_path / "data/en_fr/raw/sacrebleu-wmt14.en-fr.fr").unlink()
    (tmp_path / "data/en_fr/test.src").unlink()
    (reference,) = (tmp_path / "sacrebleu-cache/wmt14").glob("wmt14.en-fr.ref*")
    reference.write_text("not the same\n" * 4, encoding="utf-8")  # sacreBLEU's cache changed
    message = one_line_error(config)
    assert "(from sacrebleu:wmt14): SHA-256" in message and "does not match the one in" in message
    assert not (tmp_path / "data/en_fr/raw/sacrebleu-wmt14.en-fr.fr").exists()


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


def test_an_unreachable_mirror_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    closed = ThreadingHTTPServer(("127.0.0.1", 0), MirrorHandler)
    closed.url = f"http://127.0.0.1:{closed.server_address[1]}"
    closed.server_close()  # nothing listens there
    message = one_line_error(sources_config(closed, [{"opus": "Tatoeba"}]))
    assert message.startswith(f"could not download {closed.url}/opusapi/?corpus=Tatoeba")


def test_a_file_url_and_a_pinned_sum(tmp_path):
    (tmp_path / "x.tsv").write_bytes(b"a\tb\n")
    downloads = Downloads(tmp_path / "raw")
    good = hashlib.sha256(b"a\tb\n").hexdigest()
    path = downloads.fetch((tmp_path / "x.tsv").as_uri(), "x.tsv", sha256=good)
    assert path.read_bytes() == b"a\tb\n" and downloads.cached("x.tsv", good) == path
    with pytest.raises(UserError, match=f"SHA-256 {good} does not match the expected 0+"):
        downloads.fetch((tmp_path / "x.tsv").as_uri(), "y.tsv", sha256="0" * 64)
    assert not (tmp_path / "raw/y.tsv").exists() and not (tmp_path / "raw/y.tsv.part").exists()


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
