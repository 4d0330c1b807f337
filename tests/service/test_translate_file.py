"""File translation (POST /translate_file, GET /download_file: LibreTranslate's API,
file_translation.py), through httpx, a real client that uploads a multipart form as LibreTranslate's
page does: a document in, the same translations as /translate gives its texts, formatting kept;
every bad file a 4xx naming what is wrong while other clients are served; kept files bounded in time
and size; a full disk a 507, and the service goes on."""

import errno
import io
import os
import threading
import time

import docx
import httpx
import pytest

from seq2seq.decoding.engines import TorchEngine
from seq2seq.service import file_translation

from helpers import running
from samples import saved, word_xml, zipped

TEXTS = ["three is three", "twenty one is five", "three is three"]


def word_document() -> bytes:
    word = docx.Document()
    word.add_heading(TEXTS[0], level=1)
    paragraph = word.add_paragraph(TEXTS[1] + " ")
    paragraph.add_run("seven").bold = True
    word.add_paragraph(TEXTS[2])
    return saved(word)


def upload(url: str, name: str, data: bytes, headers=None, **fields) -> httpx.Response:
    form = {"source": "en", "target": "digits", **fields}
    file = {"file": (name, data)}
    path = f"{url.rstrip('/')}/translate_file"
    return httpx.post(path, data=form, files=file, headers=headers, timeout=60)


@pytest.fixture(scope="module")
def model(trained_numbers_checkpoint):
    return TorchEngine(trained_numbers_checkpoint[0])


def test_a_document_comes_back_translated_as_its_texts_are_with_its_formatting(model, tmp_path):
    with running(model, files_dir=str(tmp_path)) as server:
        base = server.url.rstrip("/")
        settings = httpx.get(f"{base}/frontend/settings").json()
        answer = upload(server.url, "../../report.docx", word_document())
        assert answer.status_code == 200, answer.text
        url = answer.json()["translatedFileUrl"]
        assert url.startswith(f"{base}/download_file/") and url.endswith(".report.digits.docx")
        download = httpx.get(url)
        texts = {"text": [*TEXTS[:2], "seven"]}
        expected = httpx.post(f"{base}/translate", json=texts).json()["translations"]
        auto = upload(server.url, "report.docx", word_document(), source="auto")
    assert settings["filesTranslation"] is True and ".docx" in settings["supportedFilesFormat"]
    assert download.status_code == 200
    assert download.headers["content-disposition"] == 'attachment; filename="report.digits.docx"'
    back = docx.Document(io.BytesIO(download.content))
    heading, paragraph, last = back.paragraphs
    assert (heading.style.name, heading.text, last.text) == ("Heading 1", expected[0], expected[0])
    assert [(run.text, run.bold) for run in paragraph.runs] == [
        (expected[1] + " ", None), (expected[2], True)
    ]  # fmt: skip
    assert auto.status_code == 200
    assert [path.name.partition(".")[2] for path in tmp_path.iterdir()] == [
        "report.digits.docx"
    ] * 2


def test_every_bad_file_gets_a_4xx_naming_it_and_others_are_served_meanwhile(model, tmp_path):
    bomb = zipped({"word/document.xml": word_xml(b""), "padding": bytes(60 * 2**20)})
    long = zipped({"word/document.xml": word_xml(b"<w:p><w:r><w:t>one</w:t></w:r></w:p>" * 500)})
    bad = {
        "report.pdf": (b"%PDF-1.7", 400, ".pdf is not a file extension translated here"),
        "lies.docx": (b"not a zip", 400, "lies.docx: not a zip file"),
        "bomb.docx": (bomb, 413, "a zip bomb"),
        "long.docx": (long, 413, "1,500 characters of text; the limit is 1,000"),
        "empty.txt": (b"", 400, "empty file"),
        "big.txt": (b"x" * 200_000, 413, "the limit is 100,000 (serve.max_file_bytes)"),
    }
    settings = {"files_dir": str(tmp_path), "max_file_chars": 1000, "max_file_bytes": 100_000}
    answers, translated = {}, []
    with running(model, **settings) as server:
        base = server.url.rstrip("/")

        def send(name):
            answers[name] = upload(server.url, name, bad[name][0])

        threads = [threading.Thread(target=send, args=(name,)) for name in bad]
        for thread in threads:
            thread.start()
        translated.append(httpx.post(f"{base}/translate", json={"text": TEXTS}))
        for thread in threads:
            thread.join()
        missing = httpx.post(f"{base}/translate_file", data={"source": "en", "target": "x"})
        no_target = upload(server.url, "a.txt", b"three", target="")
        unknown = upload(server.url, "a.txt", b"three", format="html")
        nowhere = httpx.get(f"{base}/download_file/..%2F..%2Fetc%2Fpasswd")
        unknown_name = httpx.get(f"{base}/download_file/{'0' * 32}.report.docx")
    for name, (_, status, message) in bad.items():
        assert answers[name].status_code == status, name
        assert message in answers[name].json()["error"], name
    assert translated[0].status_code == 200
    assert missing.status_code == 400 and "missing file" in missing.json()["error"]
    assert no_target.status_code == 400 and "missing target" in no_target.json()["error"]
    assert unknown.status_code == 400 and "unknown field 'format'" in unknown.json()["error"]
    assert (nowhere.status_code, unknown_name.status_code) == (404, 404)
    assert list(tmp_path.iterdir()) == []  # nothing kept of them


def test_files_off_answer_one_403_as_libretranslates_translate_file(model, tmp_path):
    """serve.files off: both routes 403, as LibreTranslate's /translate_file (its
    /download_file answers 400 for the same reason: one answer here)."""
    with running(model, files=False, files_dir=str(tmp_path)) as server:
        base = server.url.rstrip("/")
        answer = upload(server.url, "a.txt", b"three is three")
        download = httpx.get(f"{base}/download_file/{'0' * 32}.a.txt")
        settings = httpx.get(f"{base}/frontend/settings").json()
    assert answer.status_code == 403
    assert answer.json() == {"error": "Files translation are disabled on this server."}
    assert (download.status_code, download.json()) == (403, answer.json())
    assert (settings["filesTranslation"], settings["supportedFilesFormat"]) == (False, [])


def test_behind_a_tls_proxy_the_urls_written_are_https(model, tmp_path):
    """What LibreTranslate's --ssl does (URLs written https; TLS is the proxy's): a trusted
    proxy's X-Forwarded-Proto. From any other address the header is ignored."""
    https = {"X-Forwarded-Proto": "https"}
    with running(model, files_dir=str(tmp_path), trusted_proxies=["127.0.0.1"]) as server:
        proxied = upload(server.url, "a.txt", b"three is three", headers=https)
        direct = upload(server.url, "a.txt", b"three is three")
    with running(model, files_dir=str(tmp_path)) as server:
        forged = upload(server.url, "a.txt", b"three is three", headers=https)
    urls = [answer.json()["translatedFileUrl"] for answer in (proxied, direct, forged)]
    assert [url.partition("://")[0] for url in urls] == ["https", "http", "http"], urls
    assert urls[0].startswith("https://127.0.0.1:") and "/download_file/" in urls[0]


def test_a_full_disk_is_a_507_and_the_service_goes_on(model, tmp_path, monkeypatch):
    def full(path, mode):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    with running(model, files_dir=str(tmp_path)) as server:
        monkeypatch.setattr(file_translation, "atomic_write", full)
        answer = upload(server.url, "a.txt", b"three is three")
        monkeypatch.undo()
        after = upload(server.url, "a.txt", b"three is three")
    assert answer.status_code == 507 and "No space left on device" in answer.json()["error"]
    assert after.status_code == 200


def test_kept_files_are_removed_past_their_time_and_the_oldest_past_the_size(tmp_path):
    kept = file_translation.KeptFiles(tmp_path, keep_s=60, most_bytes=2500)
    names = [kept.keep(f"{n}.txt", bytes(1000)) for n in range(2)]
    for age, name in enumerate(names):  # the first the oldest
        os.utime(tmp_path / name, (time.time() - 30 + age, time.time() - 30 + age))
    names.append(kept.keep("2.txt", bytes(1000)))  # 3,000 bytes > 2,500: the oldest goes
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[1:])
    assert kept.path(names[0]) is None and kept.path(names[1]) == tmp_path / names[1]
    old = time.time() - 61
    os.utime(tmp_path / names[1], (old, old))
    assert kept.path(names[1]) is None  # past its time: not given
    kept.sweep()
    assert [p.name for p in tmp_path.iterdir()] == [names[2]]  # and removed
    for name in ("../x", f"{'0' * 32}/../x", names[2].upper(), "x" * 40):
        assert kept.path(name) is None
