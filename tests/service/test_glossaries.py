"""Glossaries in the service (seq2seq/service/glossaries.py, glossary_store.py): DeepL's routes
to keep them (as Weblate's DeepL machinery calls them: JSON, its DeepL-Auth-Key header), a
form too; each key's own; a fault a 400 naming the line, nothing kept; the `glossary` of both
/translate's, a kept one's id or entries inline, reaching the decoder as its terms; and the
page's glossary box, in a real browser."""

import http.client
import shutil
import sqlite3
from urllib.parse import urlencode, urlsplit

import databases
import pytest

from benchmarks.service.contenders import free_port
from seq2seq.checkpoint import load_checkpoint
from seq2seq.decoding.engines import TorchEngine
from seq2seq.localization.glossary import MAX_ENTRIES, Glossary, GlossaryError
from seq2seq.serving import batcher, glossary_store
from seq2seq.serving.glossary_store import GlossaryStore, StoreFailed

from helpers import HANG, JSON, call, running

SENTENCES = ["three is three", "twenty one is five"]
ENTRIES = "three\t3\nfive\tfive\n"  # the numbers model's pair: en -> digits
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture(scope="module")
def numbers(trained_numbers_checkpoint, tmp_path_factory):
    """A server of the small numbers model with two keys, its glossaries in a folder of its
    own; the decoder's jobs' options as they are submitted."""
    folder = tmp_path_factory.mktemp("glossaries")
    (folder / "keys").write_text("first second\n")
    submitted = []
    submit = batcher.Batcher.submit

    def recorded(self, job):
        submitted.append(job.options)
        return submit(self, job)

    batcher.Batcher.submit = recorded
    model = TorchEngine(trained_numbers_checkpoint[0])
    settings = {"api_keys": str(folder / "keys"), "glossaries_file": str(folder / "g.db")}
    try:
        with running(model, **settings) as server:
            yield server.url, submitted
    finally:
        batcher.Batcher.submit = submit


def deepl(key: str = "first") -> dict:
    return {**JSON, "Authorization": f"DeepL-Auth-Key {key}"}


def raw(url: str, method: str, path: str, headers: dict) -> tuple[int, str, str]:
    """-> status, the body as text, its content type (answers that are not JSON)."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    connection.request(method, path, None, headers)
    response = connection.getresponse()
    answer = response.status, response.read().decode(), response.headers["content-type"]
    connection.close()
    return answer


def create(url: str, entries: str = ENTRIES, key: str = "first", **fields) -> tuple[int, dict]:
    body = {"name": "numbers", "source_lang": "EN", "target_lang": "DIGITS", "entries": entries}
    status, answer, _ = call(url, "POST", "/v2/glossaries", {**body, **fields}, deepl(key))
    return status, answer


def test_a_glossary_kept_listed_read_and_deleted_as_weblate_calls_deepl(numbers):
    url, _ = numbers
    status, pairs, _ = call(url, "GET", "/v2/glossary-language-pairs", headers=deepl())
    assert (status, pairs) == (200, {"supported_languages": [
        {"source_lang": "en", "target_lang": "digits"}]})  # fmt: skip
    status, info = create(url)
    assert status == 201
    assert info.items() >= {"name": "numbers", "ready": True, "source_lang": "en",
                            "target_lang": "digits", "entry_count": 2}.items()  # fmt: skip
    assert len(info["glossary_id"]) == 36 and info["creation_time"].endswith("Z")
    path = f"/v2/glossaries/{info['glossary_id']}"
    assert call(url, "GET", "/v2/glossaries", headers=deepl())[:2] == (200, {"glossaries": [info]})
    assert call(url, "GET", path, headers=deepl())[:2] == (200, info)
    assert raw(url, "GET", f"{path}/entries", deepl()) == (
        200, ENTRIES, "text/tab-separated-values; charset=utf-8")  # fmt: skip
    assert raw(url, "DELETE", path, deepl())[:2] == (204, "")
    status, answer, _ = call(url, "GET", path, headers=deepl())
    assert (status, answer) == (404, {"message": f"no glossary {info['glossary_id']} "
                                      "(GET /v2/glossaries lists them)"})  # fmt: skip
    assert raw(url, "DELETE", path, deepl())[0] == 404
    assert call(url, "GET", "/v2/glossaries", headers=deepl())[:2] == (200, {"glossaries": []})


def test_tbx_entries_too(numbers):
    url, _ = numbers
    tbx = (
        '<martif type="TBX" xml:lang="en"><text><body><termEntry>'
        '<langSet xml:lang="en"><tig><term>three</term></tig></langSet>'
        '<langSet xml:lang="digits"><tig><term>3</term></tig></langSet>'
        "</termEntry></body></text></martif>"
    )
    status, info = create(url, tbx, entries_format="tbx")
    assert (status, info["entry_count"]) == (201, 1)
    path = f"/v2/glossaries/{info['glossary_id']}"
    assert raw(url, "GET", f"{path}/entries", deepl())[1] == "three\t3\n"
    assert raw(url, "DELETE", path, deepl())[0] == 204


def test_a_form_with_csv_and_each_keys_own_glossaries(numbers):
    url, _ = numbers
    form = {"name": "n", "source_lang": "en", "target_lang": "digits", "entries_format": "csv",
            "entries": 'three,3\n"twenty one",21\n'}  # fmt: skip
    headers = {**FORM, "Authorization": "Bearer second"}
    status, info, _ = call(url, "POST", "/v2/glossaries", urlencode(form).encode(), headers)
    assert (status, info["entry_count"]) == (201, 2)
    mine = call(url, "GET", "/v2/glossaries", headers=deepl("second"))[1]["glossaries"]
    assert mine == [info]
    assert call(url, "GET", "/v2/glossaries", headers=deepl("first"))[1] == {"glossaries": []}
    path = f"/v2/glossaries/{info['glossary_id']}"
    assert raw(url, "DELETE", path, deepl("first"))[0] == 404  # not first's to delete
    assert raw(url, "DELETE", path, deepl("second"))[0] == 204
    for headers in ({}, deepl("third")):
        assert call(url, "GET", "/v2/glossaries", headers=headers)[0] == 403


@pytest.mark.parametrize(
    ("fields", "fault"),
    [
        ({"entries": "three\t3\nfive\n"}, "'entries', line 2: no tab between its source and"),
        ({"entries": "three\t3\nthree\tdrei\n"}, "'entries', line 2: 'three' has two targets"),
        ({"entries": "three\t\n"}, "'entries', line 1: the target term is empty"),
        ({"entries": "three,3,en,de\n", "entries_format": "csv"},
         "'entries', line 1: its target language is de, the pair's is digits"),
        ({"target_lang": "de"}, "no model translates EN to de: a glossary is for one of "
         "en-digits (GET /v2/glossary-language-pairs)"),
        ({"entries_format": "xlsx"}, "'entries_format' is tsv, csv or tbx, not \"xlsx\""),
        ({"name": ""}, "Invalid request: missing name parameter"),
        ({"name": "n" * 1025}, "'name' has more than 1,024 bytes"),
        ({"glossary_id": "x"}, "unknown field 'glossary_id'"),
    ],
)  # fmt: skip
def test_a_fault_is_a_400_naming_it_and_nothing_is_kept(numbers, fields, fault):
    url, _ = numbers
    status, answer = create(url, **fields)
    assert status == 400 and answer["message"].startswith(fault), answer
    assert call(url, "GET", "/v2/glossaries", headers=deepl())[1] == {"glossaries": []}


def test_translate_follows_a_kept_glossary_or_one_inline_in_both_apis(numbers):
    url, submitted = numbers
    glossary_id = create(url)[1]["glossary_id"]
    terms = (("three", "3"), ("five", "five"))
    bearer = {**JSON, "Authorization": "Bearer first"}
    plain = call(url, "POST", "/translate", {"text": SENTENCES}, bearer)[1]["translations"]
    assert "five" not in plain[1]
    asked = [
        {"text": SENTENCES, "glossary": glossary_id},
        {"text": SENTENCES, "glossary": {"three": "3", " five ": "five"}},
    ]
    libretranslate = [
        {"q": SENTENCES, "source": "en", "target": "digits", "glossary": glossary_id},
        {"q": SENTENCES[0], "source": "en", "target": "digits", "glossary": {"three": "3"}},
    ]
    for body in asked + libretranslate:
        submitted.clear()
        status, answer, _ = call(url, "POST", "/translate", body, bearer)
        assert status == 200, answer
        assert [options.terms for options in submitted] == [terms[: len(body["glossary"])]]
        if len(terms[: len(body["glossary"])]) == 2:  # five: do-not-translate, kept verbatim
            assert answer.get("translations", answer.get("translatedText"))[1].endswith("five")
    form = urlencode({"q": SENTENCES[0], "source": "en", "target": "digits",
                      "glossary": glossary_id, "api_key": "first"}).encode()  # fmt: skip
    submitted.clear()
    assert call(url, "POST", "/translate", form, FORM)[0] == 200
    assert [options.terms for options in submitted] == [terms]
    raw(url, "DELETE", f"/v2/glossaries/{glossary_id}", deepl())


@pytest.mark.parametrize(
    ("body", "fault"),
    [
        ({"text": SENTENCES, "glossary": "nothing"}, "'glossary': no glossary nothing"),
        ({"text": SENTENCES, "glossary": {"three": ""}},
         "'glossary', entry 1: the target term is empty"),
        ({"text": SENTENCES, "glossary": {}}, "'glossary': no entries"),
        ({"text": SENTENCES, "glossary": ["three", "3"]}, "'glossary' must be a glossary's id"),
        ({"text": SENTENCES, "glossary": {"three": 3}}, "'glossary' must be a glossary's id"),
        ({"q": "three", "source": "auto", "target": "digits", "glossary": {"three": "3"}},
         'a glossary needs the source language: not "auto"'),
        ({"q": "three", "source": "en", "target": "en", "glossary": {"three": "3"}},
         "a glossary needs a model from en to en: the text is given back as it is"),
    ],
)  # fmt: skip
def test_a_glossary_that_cannot_be_followed_is_a_400(numbers, body, fault):
    url, _ = numbers
    status, answer, _ = call(
        url, "POST", "/translate", body, {**JSON, "Authorization": "Bearer first"}
    )
    assert (status, answer) == (400, {"error": answer["error"]}) and answer["error"].startswith(
        fault
    ), answer


def test_a_kept_glossary_is_its_owners_and_of_its_pair(numbers):
    url, _ = numbers
    glossary_id = create(url)[1]["glossary_id"]
    body = {"text": SENTENCES, "glossary": glossary_id}
    status, answer, _ = call(
        url, "POST", "/translate", body, {**JSON, "Authorization": "Bearer second"}
    )
    assert (status, answer["error"]) == (400, f"'glossary': no glossary {glossary_id} "
                                         "(GET /v2/glossaries)")  # fmt: skip
    raw(url, "DELETE", f"/v2/glossaries/{glossary_id}", deepl())


def test_the_store_keeps_each_glossary_whole_within_its_limit(database, monkeypatch):
    store = GlossaryStore(database)
    glossary = Glossary("g", "en", "de", {"Layer": "Ebene", "GIMP": "GIMP"})
    kept = store.create("g", [glossary], "owner")
    assert store.listed("owner") == [kept] and store.listed("other") == []
    assert store.dictionaries(kept.id, "owner") == [glossary]
    assert store.get(kept.id, "other") is None
    monkeypatch.setattr(glossary_store, "MAX_GLOSSARIES", 1)
    with pytest.raises(GlossaryError, match="1 glossaries are kept at most: delete one first"):
        store.create("g", [glossary], "owner")
    assert store.create("g", [glossary], "other").dictionaries == (("en", "de", 2),)
    assert store.delete(kept.id, "owner") and not store.delete(kept.id, "owner")
    assert store.listed("owner") == []
    store.close()


def test_a_glossary_made_through_one_instance_is_used_through_another(
    trained_numbers_checkpoint, postgresql, tmp_path
):
    """Two instances sharing a PostgreSQL database (serve.database), each with a glossaries
    file of its own (not used): one keeps a glossary, the other lists it, gives its entries
    and translates with it."""
    model = TorchEngine(trained_numbers_checkpoint[0])
    one, other = ({"database": postgresql, "glossaries_file": str(tmp_path / n)} for n in "ab")
    with running(model, **one) as one, running(model, **other) as other:
        status, info = create(one.url)
        assert status == 201
        glossary_id = info["glossary_id"]
        status, listed, _ = call(other.url, "GET", "/v2/glossaries", headers=deepl())
        assert (status, [kept["glossary_id"] for kept in listed["glossaries"]]) == (
            200,
            [glossary_id],
        )
        path = f"/v2/glossaries/{glossary_id}/entries"
        assert raw(other.url, "GET", path, deepl())[:2] == (200, ENTRIES)
        body = {"text": SENTENCES, "glossary": glossary_id}
        assert call(other.url, "POST", "/translate", body)[0] == 200
        assert raw(other.url, "DELETE", f"/v2/glossaries/{glossary_id}", deepl())[0] == 204
        body = {"text": SENTENCES, "glossary": glossary_id}
        assert call(one.url, "POST", "/translate", body)[0] == 400  # gone for both


@databases.needs_postgres
def test_the_store_carries_on_once_postgresql_answers_again():
    """PostgreSQL gone while serving (its fast shutdown: connections cut): the store's calls
    fail (StoreFailed: the server's fault), nothing half-kept; back, the next call connects
    afresh and finds what was kept before."""
    pytest.importorskip("psycopg", reason="PostgreSQL is the extra seq2seq[replicas]")
    port = free_port()
    server, folder = databases.start_postgres(port)
    try:
        store = GlossaryStore(f"postgresql://postgres@127.0.0.1:{port}/postgres")
        kept = store.create("g", [Glossary("g", "en", "de", {"Layer": "Ebene"})], "owner")
        databases.stop_postgres(server)
        with pytest.raises(StoreFailed, match="cannot keep glossaries there"):
            store.create("h", [Glossary("h", "en", "de", {"GIMP": "GIMP"})], "owner")
        server = databases.run_postgres(folder, port)
        assert store.listed("owner") == [kept]
        store.close()
    finally:
        databases.stop_postgres(server)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_glossaries_database_that_cannot_be_reached_fails_the_store(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(StoreFailed, match="cannot keep glossaries there"):
        GlossaryStore(tmp_path / "file" / "g.db").listed("")
    pytest.importorskip("psycopg", reason="PostgreSQL is the extra seq2seq[replicas]")
    url = f"postgresql://user:secret@127.0.0.1:{free_port()}/none"  # nothing listens there
    with pytest.raises(StoreFailed, match="cannot keep glossaries there") as failed:
        GlossaryStore(url).listed("")
    assert "secret" not in str(failed.value) and "user:***@" in str(failed.value)


def test_a_glossary_holds_dictionaries_edited_in_one_transaction_each(database):
    store = GlossaryStore(database)
    en_de = Glossary("g", "en", "de", {"Layer": "Ebene"})
    de_en = Glossary("g", "de", "en", {"Ebene": "Layer"})
    kept = store.create("g", [en_de, de_en], "owner")
    assert kept.dictionaries == (("en", "de", 1), ("de", "en", 1))
    more = Glossary("", "en", "de", {"Layer": "Schicht", "GIMP": "GIMP"})
    after = store.update(kept.id, "owner", "h", [more], merge=True)
    assert (after.name, after.dictionaries[0]) == ("h", ("en", "de", 2))
    assert store.dictionaries(kept.id, "owner", ("en", "de"))[0].entries == more.entries
    assert store.update(kept.id, "other", "x", [], merge=True) is None  # not theirs
    too_many = Glossary("", "en", "de", {str(n): "x" for n in range(MAX_ENTRIES)})
    with pytest.raises(GlossaryError, match="at most"):  # merged past the limit: nothing kept
        store.update(kept.id, "owner", "lost", [too_many], merge=True)
    assert store.get(kept.id, "owner").name == "h"
    assert store.drop(kept.id, "owner", ("de", "en")) and not store.drop(
        kept.id, "owner", ("de", "en")
    )
    assert store.dictionaries(kept.id, "owner", ("de", "en")) == []
    assert store.delete(kept.id, "owner") and store.dictionaries(kept.id, "owner") is None


def test_a_glossaries_file_of_an_earlier_version_is_read_as_glossaries_of_one_dictionary(tmp_path):
    earlier = sqlite3.connect(tmp_path / "g.db")
    earlier.execute(
        "CREATE TABLE glossaries (id TEXT PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, "
        "source_lang TEXT NOT NULL, target_lang TEXT NOT NULL, created_at TEXT NOT NULL, "
        "entry_count INTEGER NOT NULL, entries TEXT NOT NULL)"
    )
    with earlier:
        earlier.execute("INSERT INTO glossaries VALUES ('id', 'me', 'g', 'en', 'de', 'then', 1, "
                        "'[[\"Layer\", \"Ebene\"]]')")  # fmt: skip
    earlier.close()
    store = GlossaryStore(tmp_path / "g.db")
    assert store.listed("me")[0].glossary_info()["entry_count"] == 1
    assert store.dictionaries("id", "me") == [Glossary("g", "en", "de", {"Layer": "Ebene"})]


def test_a_glossaries_file_that_fails_is_the_servers_fault(trained_numbers_checkpoint, tmp_path):
    (tmp_path / "file").write_text("")
    model = TorchEngine(trained_numbers_checkpoint[0])
    with running(model, glossaries_file=str(tmp_path / "file" / "g.db")) as server:
        status, answer, _ = call(server.url, "GET", "/v2/glossaries")
    assert status == 500 and "cannot keep glossaries there" in answer["error"], answer


def test_the_pages_glossary_box_is_followed_and_its_faults_shown(seed_run, tmp_path, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    model = TorchEngine(load_checkpoint(seed_run / "best.pt"))
    with running(model, glossaries_file=str(tmp_path / "g.db")) as server:
        browser.get(server.url)
        wait = WebDriverWait(browser, HANG)
        translation = (By.ID, "translation")
        box = browser.find_element(By.ID, "sentence")
        box.clear()
        box.send_keys("three is three")
        wait.until(seen.text_to_be_present_in_element(translation, "3 la 3"))
        browser.find_element(By.CSS_SELECTOR, "#glossary-box summary").click()
        browser.find_element(By.ID, "glossary").send_keys("three")  # kept as it is
        wait.until(lambda _: browser.find_element(*translation).text.split().count("three") == 2)
        assert browser.find_element(By.CSS_SELECTOR, "#heatmap caption").text  # still drawn
        browser.execute_script("document.getElementById('glossary').value = 'three\\t '")
        browser.find_element(By.ID, "glossary").send_keys(" ")  # an input event
        wait.until(seen.visibility_of_element_located((By.ID, "error")))
        error = browser.find_element(By.ID, "error").text
        assert error == "'glossary', entry 1: the target term is empty", error
