"""Downloads (corpora/download.py) from a local mirror: resumed with a range request, a cut
archive or a changed file never kept, a test set unlike its manifest refused, an unreachable
mirror one line, a file URL with a pinned sum."""

import hashlib
import json
from http.server import ThreadingHTTPServer

import pytest

from seq2seq.corpora.corpus_types import build_corpus
from seq2seq.corpora.download import Downloads
from seq2seq.support.errors import UserError
from seq2seq.text.parallel import load_split

from sources_mirror import (
    MirrorHandler,
    assert_nothing_written,
    gz_tsv,
    one_line_error,
    sources_config,
)


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
