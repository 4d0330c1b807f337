"""serve.memory: a text a suggestion was sent for (POST /suggest) is answered with it, its white
space aside, on our /translate and LibreTranslate's, the answer saying it came from the memory;
other texts, and every text with the memory off, the model's; the look-up an index's."""

import sqlite3

import pytest

from seq2seq.decoding.engines import TorchEngine
from seq2seq.localization.fuzzy import repaired
from seq2seq.localization.suggestions import Suggestions

from helpers import call, running

PAIR = {"source": "en", "target": "digits"}
BETTER = "3 la 3 (corrected)"


def test_the_latest_suggestion_is_recalled_for_a_texts_normalised_form_by_an_index(database):
    store = Suggestions(database)
    store.add("three is three", "3 la 3", "en", "digits")
    store.add(" three\tis  three\n", BETTER, "en", "digits")  # the same text, sent again
    store.add("three is three", "trois", "en", "fr")
    texts = ["three   is three ", "three is"]
    assert store.recalled(texts, "en", "digits") == [BETTER, None]
    assert store.recalled(["three is three"], "en", "fr") == ["trois"]
    assert store.count("en", "digits") == 2
    plan = store.db.read(lambda db: planned(db, store.sql.RECALL))
    store.close()
    assert "memory_texts" in plan or "PRIMARY KEY" in plan or "USING INDEX" in plan, plan


def planned(db, recall: str) -> str:
    """How the database finds a memory entry (PostgreSQL: told to use an index if it can)."""
    if db.kind == "sqlite":
        return db.execute(f"EXPLAIN QUERY PLAN {recall}", ("en", "digits", "x")).fetchall()[0][-1]
    db.execute("SET enable_seqscan = off")  # (a table this small is read whole otherwise)
    return str(db.execute(f"EXPLAIN {recall}", ("en", "digits", "x")).fetchall())


def translations(url: str) -> tuple[dict, dict, dict]:
    """Ours, LibreTranslate's (a list, and one text) answers for the remembered text (its white
    space changed) and another."""
    texts = ["  three is\tthree ", "one is one"]
    ours = call(url, "POST", "/translate", {"text": texts, **PAIR})[1]
    theirs = call(url, "POST", "/translate", {"q": texts, **PAIR})[1]
    one = call(url, "POST", "/translate", {"q": texts[0], **PAIR})[1]
    return ours, theirs, one


def test_a_suggested_text_is_answered_from_the_memory_on_both_apis(
    trained_numbers_checkpoint, tmp_path
):
    model = TorchEngine(trained_numbers_checkpoint[0])
    kept = {"suggestions": True, "suggestions_file": str(tmp_path / "suggestions.db")}
    with running(model, memory=True, **kept) as server:
        before = call(server.url, "POST", "/translate", {"text": ["three is three"], **PAIR})[1]
        suggestion = {"q": "three is three", "s": BETTER, **PAIR}
        assert call(server.url, "POST", "/suggest", suggestion)[0] == 200
        ours, theirs, one = translations(server.url)
        ranked = {"text": ["three is three"], "nbest": 2, **PAIR}
        nbest = call(server.url, "POST", "/translate", ranked)[1]
        html = {"q": ["<p>three is three</p>", "<p>three is three</p><p>one</p>"], **PAIR}
        marked = call(server.url, "POST", "/translate", {**html, "format": "html"})[1]
    assert before["memory"] == [False] and before["translations"] != [BETTER]
    model_says = ours["translations"][1]
    assert ours == {
        "translations": [BETTER, model_says], "warnings": [], "memory": [True, False],
        "confidence": [1.0, None],  # the memory's: sure; the model's: none (no calibration)
    }  # fmt: skip
    assert theirs["translatedText"][0] == BETTER and theirs["fromMemory"] == [True, False]
    assert one == {"translatedText": BETTER, "fromMemory": True, "confidence": 1.0}
    assert nbest["translations"] == [[{"translation": BETTER, "score": 0.0}]]
    assert marked["translatedText"][0] == f"<p>{BETTER}</p>"  # a text node, remembered
    assert marked["fromMemory"] == [True, False]  # a text: all its nodes, or not
    assert marked["confidence"] == [1.0, None]  # a text: the least sure of its nodes
    with running(model, **kept) as server:  # the memory off: the same file, the model's
        ours_off, theirs_off, one_off = translations(server.url)
    assert ours_off["translations"] == [before["translations"][0], model_says]
    assert "memory" not in ours_off and "fromMemory" not in theirs_off
    assert one_off["translatedText"] != BETTER and "fromMemory" not in one_off


def test_a_file_from_before_the_memory_has_it_made_from_its_suggestions(tmp_path):
    path = tmp_path / "suggestions.db"
    with sqlite3.connect(path) as connection:  # as Suggestions made it before the memory
        connection.execute(
            "CREATE TABLE suggestions (q TEXT NOT NULL, s TEXT NOT NULL, source TEXT NOT NULL, "
            "target TEXT NOT NULL, count INTEGER NOT NULL DEFAULT 1, first_at TEXT NOT NULL, "
            "last_at TEXT NOT NULL, PRIMARY KEY (source, target, q, s))"
        )
        connection.executemany(
            "INSERT INTO suggestions (q, s, source, target, first_at, last_at) "
            "VALUES (?, ?, 'en', 'digits', ?, ?)",
            [("three is three", BETTER, "2026-02", "2026-02"),
             ("three  is three", "3 la 3", "2026-01", "2026-01")],
        )  # fmt: skip
    connection.close()
    store = Suggestions(path)
    assert store.recalled(["three is three"], "en", "digits") == [BETTER]  # the latest
    store.close()


def test_a_text_like_a_corrected_one_has_its_translation_repaired_by_the_correction(
    trained_numbers_checkpoint, tmp_path
):
    model = TorchEngine(trained_numbers_checkpoint[0])
    kept = {"suggestions": True, "suggestions_file": str(tmp_path / "suggestions.db")}
    corrected, new = "three is three", "three is four"
    with running(model, memory=True, memory_fuzzy=0.6, **kept) as server:
        asked = {"text": [corrected, new, "one"], **PAIR}
        first = call(server.url, "POST", "/translate", asked)[1]
        before, now, one = first["translations"]
        better = f"{before} (corrected)"
        call(server.url, "POST", "/suggest", {"q": corrected, "s": better, **PAIR})
        ours = call(server.url, "POST", "/translate", {"text": [new, "one"], **PAIR})[1]
        theirs = call(server.url, "POST", "/translate", {"q": new, **PAIR})[1]
    assert "fuzzy" not in first  # nothing in the memory yet
    assert ours["translations"] == [repaired(before, better, now), one]
    assert ours["translations"][0].endswith("(corrected)")
    assert ours["fuzzy"] == [pytest.approx(2 / 3), None] and ours["memory"] == [False, False]
    assert theirs["translatedText"] == ours["translations"][0] and not theirs["fromMemory"]
