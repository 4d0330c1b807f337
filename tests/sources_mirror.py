"""The corpus sources served offline, for tests/corpora/: a local HTTP server on 127.0.0.1 plays the
OPUS API, OPUS's object store, statmt.org and a web site (corpus.mirror), with small files made
in the real sources' layouts; a config of sources over it; what a refused one leaves."""

import gzip
import hashlib
import io
import json
import tarfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import pytest
from sacrebleu import DATASETS

from seq2seq.config import config_from_dict
from seq2seq.corpora.corpus_types import build_corpus
from seq2seq.support.errors import UserError

from samples import moses_zip

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


# A mirror on 127.0.0.1 (corpus.mirror: tests/corpora/, tests/test_package_page.py): the files of
# the real sources' layouts, made by the test, and the OPUS API's answers.


class MirrorHandler(BaseHTTPRequestHandler):
    """Serves server.files by path (with Range requests), server.opus_api(query) at /opusapi/
    as JSON, and cuts off the paths in server.truncate after that many bytes."""

    def do_GET(self):
        server = self.server
        server.requests.append((self.path, self.headers.get("Range")))
        parts = urlsplit(self.path)
        if parts.path == "/opusapi/":
            body = json.dumps(server.opus_api(dict(parse_qsl(parts.query)))).encode()
            return self.send_body(200, body, len(body))
        if self.path not in server.files:
            return self.send_error(404)
        body = server.files[self.path]
        start = int(self.headers["Range"][6:-1]) if self.headers.get("Range") else 0
        status = 206 if start else 200
        self.send_body(status, body[start:], len(body) - start, server.truncate.get(self.path))

    def send_body(self, status, body, length, cut=None):
        self.send_response(status)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        self.wfile.write(body[:cut])
        self.close_connection = True

    def log_message(self, *args):
        pass


@contextmanager
def mirror(opus_api: Callable[[dict], dict]) -> Iterator[ThreadingHTTPServer]:
    """The mirror, answering from a thread until the block ends; its url, files, truncate (path
    -> bytes sent) and requests (path, Range) are attributes."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), MirrorHandler)
    httpd.files, httpd.truncate, httpd.requests = {}, {}, []
    httpd.opus_api, httpd.url = opus_api, f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
