"""Suggestions (POST /suggest, LibreTranslate's): kept in an SQLite file before the answer, each
different one once, read back as a corpus source; off, keyless, over the limit, for a pair the
service lacks: refused, saying why."""

import shutil
import signal
import sqlite3
import threading
from urllib.parse import urlencode

import databases
import pytest

from benchmarks.service.contenders import free_port
from benchmarks.service.process import stop_server
from seq2seq.checkpoint import load_checkpoint
from seq2seq.corpora.sources import fetch
from seq2seq.decoding.engines import TorchEngine
from seq2seq.localization import suggestions
from seq2seq.localization.suggestions import Suggestions, read_suggestions
from seq2seq.options import CorpusConfig, Source
from seq2seq.serving import checks
from seq2seq.support import files
from seq2seq.support.database import DatabaseFailed
from seq2seq.support.errors import UserError

from helpers import HANG, call, read_address, running, start_server, wait_until

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
ONE = {"q": "three is three", "s": "3 la 3", "source": "en", "target": "digits"}


def rows(path) -> list[tuple]:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT q, s, source, target, count FROM suggestions").fetchall()


def test_a_suggestion_made_again_is_counted_once_and_read_back_for_its_pair(tmp_path):
    path = tmp_path / "kept/suggestions.db"  # its folder made
    store = Suggestions(path)
    store.add("one", "1", "en", "digits")
    store.add("two", "2", "en", "digits")
    store.add("one", "1", "en", "digits")
    store.add("one", "un", "en", "fr")
    store.close()
    assert rows(path) == [
        ("one", "1", "en", "digits", 2), ("two", "2", "en", "digits", 1),
        ("one", "un", "en", "fr", 1),
    ]  # fmt: skip
    assert read_suggestions(path, "en", "digits") == [("one", "1"), ("two", "2")]
    corpus = CorpusConfig(type="sources", src_lang="en", tgt_lang="fr")
    fetched = fetch(Source(suggestions=str(path)), corpus, downloads=None)
    assert list(fetched.read({})) == [("one", "un")]


def test_a_missing_or_foreign_suggestions_file_is_named(tmp_path):
    with pytest.raises(UserError, match="no such suggestions file"):
        read_suggestions(tmp_path / "none.db", "en", "fr")
    (tmp_path / "text.db").write_text("not a database at all, and long enough to say so")
    with pytest.raises(UserError, match="text.db: not a suggestions file"):
        read_suggestions(tmp_path / "text.db", "en", "fr")


def test_suggest_answers_and_refuses_as_libretranslate_does(trained_numbers_checkpoint, tmp_path):
    model = TorchEngine(trained_numbers_checkpoint[0])
    path = tmp_path / "suggestions.db"

    def suggest(url, fields, form=False):
        body = urlencode(fields).encode() if form else fields
        status, answer, _ = call(url, "POST", "/suggest", body, *([FORM] if form else []))
        return status, answer

    with running(model) as server:  # off by default, as LibreTranslate's
        assert suggest(server.url, ONE) == (
            403,
            {"error": "Suggestions are disabled on this server."},
        )
    on = {"suggestions": True, "suggestions_file": str(path), "suggestion_chars": 40}
    with running(model, **on) as server:
        assert suggest(server.url, ONE) == (200, {"success": True})
        assert suggest(server.url, ONE, form=True) == (200, {"success": True})  # a form too
        status, answer = suggest(server.url, {**ONE, "s": ""})
        assert status == 400 and answer["error"] == "'s' is empty"
        status, answer = suggest(server.url, {**ONE, "source": ""})
        assert status == 400 and answer["error"] == "Invalid request: missing source parameter"
        status, answer = suggest(server.url, {**ONE, "q": "one " * 20})
        assert status == 400 and "'q'" in answer["error"] and "40" in answer["error"]
        status, answer = suggest(server.url, {**ONE, "target": "fr"})
        assert status == 400 and "en to fr is not available" in answer["error"]
        status, answer = suggest(server.url, {**ONE, "score": 5})
        assert status == 400 and "score" in answer["error"]
    assert rows(path) == [("three is three", "3 la 3", "en", "digits", 2)]
    keys = tmp_path / "keys"
    keys.write_text("sesame\n")
    on = {"suggestions": True, "suggestions_file": str(path), "api_keys": str(keys)}
    with running(model, **on) as server:
        assert suggest(server.url, ONE)[0] == 403
        assert suggest(server.url, {**ONE, "api_key": "sesame"}) == (200, {"success": True})


def test_one_client_may_suggest_so_many_an_hour(trained_numbers_checkpoint, tmp_path, monkeypatch):
    monkeypatch.setattr(checks.Buckets, "clock", staticmethod(lambda: 1000.0))
    model = TorchEngine(trained_numbers_checkpoint[0])
    on = {"suggestions": True, "suggestions_file": str(tmp_path / "s.db")}
    with running(model, suggestions_per_hour=2, **on) as server:
        statuses = [call(server.url, "POST", "/suggest", ONE)[0] for _ in range(3)]
        status, answer, headers = call(server.url, "POST", "/suggest", ONE)
    assert statuses == [200, 200, 429] and status == 429
    assert headers["Retry-After"] == "1800"
    assert answer["error"].startswith("Slowdown: 2 suggestions an hour at most")
    assert rows(tmp_path / "s.db")[0][4] == 2  # the refused ones are not kept


@pytest.mark.slow
def test_no_acknowledged_suggestion_is_lost_to_kill_9(seed_run, tmp_path):
    """Suggestions sent one after another; the server killed with SIGKILL at once after the last
    answer: every suggestion it acknowledged is in the file."""
    path = tmp_path / "suggestions.db"
    process = start_server(
        "--checkpoint", str(seed_run / "best.pt"), "serve.suggestions=true",
        f"serve.suggestions_file={path}", cwd=seed_run.parent.parent,
    )  # fmt: skip
    try:
        url = read_address(process)
        pair = {"source": "en", "target": "digits"}
        acknowledged = [
            n
            for n in range(40)
            if call(url, "POST", "/suggest", {"q": f"one {n}", "s": f"1 {n}", **pair})[0] == 200
        ]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=HANG)
    finally:
        stop_server(process)
    assert len(acknowledged) == 40
    assert [q for q, *_ in rows(path)] == [f"one {n}" for n in acknowledged]


@pytest.mark.slow
def test_the_page_offers_the_translation_to_correct_and_keeps_the_suggestion(
    seed_run, tmp_path, browser
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    model = TorchEngine(load_checkpoint(seed_run / "best.pt"))
    path = tmp_path / "suggestions.db"
    with running(model, suggestions=True, suggestions_file=str(path)) as server:
        browser.get(server.url)
        wait = WebDriverWait(browser, HANG)
        box = browser.find_element(By.ID, "sentence")
        box.clear()
        box.send_keys("three is three")
        wait.until(seen.text_to_be_present_in_element((By.ID, "translation"), "3 la 3"))
        better = browser.find_element(By.ID, "better")
        wait.until(seen.visibility_of(better))
        assert better.get_attribute("value") == "3 la 3"  # the translation, to correct
        better.clear()
        better.send_keys("3 la 3 indeed")
        browser.find_element(By.CSS_SELECTOR, "#suggest button").click()
        wait.until(seen.text_to_be_present_in_element((By.ID, "suggested"), "Thank you"))
    assert rows(path) == [("three is three", "3 la 3 indeed", "en", "digits", 1)]


def test_a_suggestion_while_an_import_holds_the_file_is_a_503_to_try_again(
    trained_numbers_checkpoint, tmp_path, monkeypatch
):
    """Another writer holds the file past SQLite's wait: the client is told to try again,
    and the next try is kept."""
    monkeypatch.setattr(files, "SHARED_DB_BUSY_S", 0.2)
    model = TorchEngine(trained_numbers_checkpoint[0])
    on = {"suggestions": True, "suggestions_file": str(tmp_path / "s.db")}
    with running(model, **on) as server:
        importing = sqlite3.connect(tmp_path / "s.db")
        importing.execute("BEGIN IMMEDIATE")
        status, answer, headers = call(server.url, "POST", "/suggest", ONE)
        importing.rollback()
        again = call(server.url, "POST", "/suggest", ONE)[0]
    assert status == 503 and headers["Retry-After"] == "1"
    assert "held by another writer" in answer["error"]
    assert again == 200 and rows(tmp_path / "s.db")[0][:2] == (ONE["q"], ONE["s"])


def test_an_import_lets_the_services_suggestions_in_between_its_chunks(tmp_path, monkeypatch):
    """python -m seq2seq.suggestions import (add_all, another process's connection) on the
    file the service writes: a suggestion made meanwhile is kept while the import goes on,
    not once it ends, and the import keeps all of its pairs."""
    monkeypatch.setattr(suggestions, "CHUNK", 100)
    path = tmp_path / "s.db"
    importer, service = Suggestions(path), Suggestions(path)
    pairs = [(f"text {i}", f"Text {i}") for i in range(60 * 100)]
    importing = threading.Thread(target=importer.add_all, args=(pairs, "en", "de"))
    importing.start()
    wait_until(lambda: service.count("en", "de") or not importing.is_alive(), "a chunk kept")
    service.add(*ONE.values())
    assert importing.is_alive(), "the suggestion waited for the whole import"
    importing.join()
    assert service.count("en", "de") == len(pairs) and service.recalled(["text 7"], "en", "de") == [
        "Text 7"
    ]
    assert service.recalled([ONE["q"]], "en", "digits") == [ONE["s"]]


def test_a_file_that_cannot_be_written_is_a_503_and_translations_go_on(
    trained_numbers_checkpoint, tmp_path, monkeypatch, capsys
):
    """The suggestions file fails (a disk full or failing): the suggestion gets a 503 to try
    again later, nothing kept, the failure said on stderr; translations are answered."""

    def failing(*args) -> None:
        raise DatabaseFailed("s.db: cannot keep suggestions there: database or disk is full")

    model = TorchEngine(trained_numbers_checkpoint[0])
    on = {"suggestions": True, "suggestions_file": str(tmp_path / "s.db")}
    with running(model, **on) as server:
        monkeypatch.setattr(Suggestions, "add", failing)
        status, answer, headers = call(server.url, "POST", "/suggest", ONE)
        translated = call(server.url, "POST", "/translate", {"text": [ONE["q"]]})[0]
    assert (status, headers["Retry-After"], translated) == (503, "1", 200)
    assert "suggestions cannot be kept now" in answer["error"]
    said = "a suggestion could not be kept: s.db: cannot keep suggestions there: database or disk"
    assert said in capsys.readouterr().err
    assert rows(tmp_path / "s.db") == []


@databases.needs_postgres
def test_two_instances_keep_each_correction_once_in_postgresql(postgresql):
    """Two stores on one database (two instances of the service), adding at once: each
    suggestion kept once (one sent to both: counted twice, one row), none lost; the memory of
    one answers what the other was told."""
    stores = [Suggestions(postgresql), Suggestions(postgresql)]
    shared = [(f"text {n}", f"Text {n}") for n in range(40)]
    own = [[(f"{i} only {n}", f"{i} nur {n}") for n in range(40)] for i in range(2)]

    def send(store, pairs) -> None:
        for q, s in pairs:
            store.add(q, s, "en", "de")

    threads = [threading.Thread(target=send, args=(store, shared + own[i]))
               for i, store in enumerate(stores)]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HANG)
    kept = stores[0].listed("en-de", None, None)
    assert sorted((row.q, row.s, row.count) for row in kept) == sorted(
        [(q, s, 2) for q, s in shared] + [(q, s, 1) for q, s in own[0] + own[1]]
    )
    assert stores[1].recalled([own[0][7][0], "text 3"], "en", "de") == [own[0][7][1], "Text 3"]
    assert read_suggestions(postgresql, "en", "de")[:1] in ([shared[0]], [own[0][0]], [own[1][0]])
    for store in stores:
        store.close()


@databases.needs_postgres
def test_postgresql_gone_while_serving_refuses_suggestions_and_translations_go_on(
    trained_numbers_checkpoint, capsys
):
    """The database stopped under a running service (suggestions and memory in it): a
    suggestion is a 503 with Retry-After, nothing kept; a translation is answered by the
    model, the memory's failure said once; back, both as before."""
    port = free_port()
    server, folder = databases.start_postgres(port)
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    on = {"suggestions": True, "memory": True, "database": url}
    translate = {"text": [ONE["q"]], "source": "en", "target": "digits"}
    try:
        with running(TorchEngine(trained_numbers_checkpoint[0]), **on) as service:
            assert call(service.url, "POST", "/suggest", ONE)[0] == 200
            assert call(service.url, "POST", "/translate", translate)[1]["memory"] == [True]
            databases.stop_postgres(server)
            status, answer, headers = call(service.url, "POST", "/suggest", {**ONE, "s": "3 la 33"})
            assert (status, headers["Retry-After"]) == (503, "1"), answer
            for _ in range(2):
                status, answer, _ = call(service.url, "POST", "/translate", translate)
                assert (status, answer["memory"]) == (200, [False]), answer
            server = databases.run_postgres(folder, port)
            assert call(service.url, "POST", "/translate", translate)[1]["memory"] == [True]
            assert call(service.url, "POST", "/suggest", {**ONE, "s": "3 la 3!"})[0] == 200
        said = capsys.readouterr().err
        assert said.count("translations go on without the memory") == 1, said
        assert [s for _, s in read_suggestions(url, "en", "digits")] == ["3 la 3", "3 la 3!"]
    finally:
        databases.stop_postgres(server)
        shutil.rmtree(folder, ignore_errors=True)
