"""python -m seq2seq.suggestions: list (by pair, text, date), remove (from the suggestions
training reads, and from the memory, which falls back to the text's latest suggestion left),
import of a TMX, PO and XLIFF file through the checks POST /suggest makes, the refused counted."""

import pytest

from seq2seq.localization.suggestions import Suggestions, read_suggestions
from seq2seq.suggestions import main
from seq2seq.support.errors import UserError

OPEN = "Open the file"


@pytest.fixture
def kept(database):
    """A suggestions file (or PostgreSQL database): two suggestions for OPEN, the latest "Die
    Datei öffnen", and one in another pair."""
    path = database
    store = Suggestions(path)
    store.add(OPEN, "Datei öffnen", "en", "de")
    store.add(" Open  the file", "Die Datei öffnen", "en", "de")  # the same text, normalised
    store.add("Close", "Fermer", "en", "fr")
    store.close()
    return path


def listed(capsys, *args: str) -> list[list[str]]:
    main(["list", *args])
    return [line.split("\t") for line in capsys.readouterr().out.splitlines()]


def test_list_shows_each_suggestion_with_its_id_by_pair_text_and_date(kept, capsys, tmp_path):
    rows = listed(capsys, str(kept))
    assert [row[0] for row in rows] == ["1", "2", "3"]
    assert rows[1][1:3] == ["en-de", "1"] and rows[1][4:] == ["Open  the file", "Die Datei öffnen"]
    assert [row[0] for row in listed(capsys, str(kept), "--pair", "en-fr")] == ["3"]
    assert [row[0] for row in listed(capsys, str(kept), "--grep", "DATEI")] == ["1", "2"]
    assert listed(capsys, str(kept), "--grep", "%") == []  # a character, not a wildcard
    assert listed(capsys, str(kept), "--since", "2999-01-01") == []
    assert len(listed(capsys, str(kept), "--since", rows[0][3][:10])) == 3
    with pytest.raises(UserError, match="--since yesterday: not a date"):
        main(["list", str(kept), "--since", "yesterday"])
    with pytest.raises(UserError, match="none.db: no such suggestions file"):
        main(["list", str(tmp_path / "none.db")])


def test_remove_takes_a_suggestion_from_training_and_the_memory_falls_back(kept, capsys):
    with pytest.raises(UserError, match="no suggestion 9: list shows the ids"):
        main(["remove", str(kept), "2", "9"])  # none removed
    assert len(read_suggestions(kept, "en", "de")) == 2
    main(["remove", str(kept), "2"])
    assert "removed 1 suggestion(s)" in capsys.readouterr().out
    store = Suggestions(kept)
    assert read_suggestions(kept, "en", "de") == [(OPEN, "Datei öffnen")]
    assert store.recalled([OPEN], "en", "de")[0] == "Datei öffnen"  # the one left
    main(["remove", str(kept), "1"])
    assert read_suggestions(kept, "en", "de") == []
    assert store.recalled([OPEN], "en", "de")[0] is None  # none left: the model's again
    assert store.recalled(["Close"], "en", "fr")[0] == "Fermer"
    store.close()


TMX = """<?xml version="1.0" encoding="UTF-8"?>
<tmx version="1.4"><header srclang="en" datatype="plaintext" segtype="sentence"
 adminlang="en" o-tmf="x" creationtool="x" creationtoolversion="1"/><body>
<tu><tuv xml:lang="en"><seg>Save the document</seg></tuv>
    <tuv xml:lang="de-DE"><seg>Das Dokument speichern</seg></tuv></tu>
<tu><tuv xml:lang="en"><seg>Print the whole page</seg></tuv>
    <tuv xml:lang="de"><seg>Print the whole page</seg></tuv></tu>
<tu><tuv xml:lang="en"><seg>Quit</seg></tuv><tuv xml:lang="de"><seg>   </seg></tuv></tu>
<tu><tuv xml:lang="en"><seg>Help</seg></tuv><tuv xml:lang="de"><seg>{long}</seg></tuv></tu>
</body></tmx>
"""
PO = """msgid ""
msgstr "Content-Type: text/plain; charset=UTF-8\\n"

msgid "Remove the selected files"
msgstr "Die ausgewählten Dateien entfernen"

msgid "Rename the folder"
msgstr ""

msgid "Sort the list by name and size"
msgstr "Sort the list by name and the size of each"
"""
XLIFF = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="2.0" xmlns="urn:oasis:names:tc:xliff:document:2.0" srcLang="en" trgLang="de">
<file id="f"><unit id="1"><segment><source>Undo the last change</source>
<target>Die letzte Änderung rückgängig machen</target></segment></unit>
<unit id="2"><segment><source>Abidjan</source><target>Abidjan</target></segment></unit>
</file></xliff>
"""


def test_import_keeps_a_catalogs_pairs_through_the_checks_and_counts_the_refused(tmp_path, capsys):
    pytest.importorskip("polib", reason="gettext catalogs are the extra seq2seq[catalogs]")
    pytest.importorskip("lingua", reason="language detection is the extra seq2seq[detect]")
    path = tmp_path / "suggestions.db"
    for name, text in (("memory.tmx", TMX.format(long="Hilfe " * 30)), ("de.po", PO),
                       ("app.xliff", XLIFF)):  # fmt: skip
        (tmp_path / name).write_text(text)
        main(["import", str(path), "--from", str(tmp_path / name), "--target", "de",
              "--config", str(tmp_path / "none.yaml")])  # fmt: skip
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith("kept 1 of ") and said[0].endswith(
        "memory.tmx's pairs as en-de suggestions; refused 2 (copy 1, too_long 1); "
        "skipped 1 (untranslated 1)"
    )  # white space only: the reader's untranslated
    assert said[1].endswith("refused 1 (wrong_language 1); skipped 2 (header 1, untranslated 1)")
    assert said[2].startswith("kept 2 of ")
    store = Suggestions(path)
    assert store.recalled(["save  the document"], "en", "de")[0] is None  # the case is the text's
    assert store.recalled(["Save the  document"], "en", "de")[0] == "Das Dokument speichern"
    assert store.recalled(["Abidjan"], "en", "de")[0] == "Abidjan"
    assert store.recalled(["Print the whole page"], "en", "de")[0] is None
    assert read_suggestions(path, "en", "de") == [
        ("Save the document", "Das Dokument speichern"),
        ("Remove the selected files", "Die ausgewählten Dateien entfernen"),
        ("Undo the last change", "Die letzte Änderung rückgängig machen"),
        ("Abidjan", "Abidjan"),
    ]
    store.close()


def test_an_import_refuses_an_entity_declaration_and_a_file_it_cannot_read(tmp_path):
    path, bomb = tmp_path / "suggestions.db", tmp_path / "bomb.tmx"
    with pytest.raises(UserError, match="notes.txt: not a catalog"):
        main(["import", str(path), "--from", str(tmp_path / "notes.txt"), "--target", "de"])
    with pytest.raises(UserError, match="none.po: no such file"):
        main(["import", str(path), "--from", str(tmp_path / "none.po"), "--target", "de"])
    assert not path.exists()  # nothing made
    pytest.importorskip("defusedxml", reason="XML catalogs are the extra seq2seq[catalogs]")
    bomb.write_text(
        '<?xml version="1.0"?><!DOCTYPE tmx [<!ENTITY a "aaaaaaaaaa">]><tmx><body><tu>'
        "<tuv xml:lang='en'><seg>&a;</seg></tuv><tuv xml:lang='de'><seg>b</seg></tuv></tu>"
        "</body></tmx>"
    )
    with pytest.raises(UserError, match="bomb.tmx: refused: it declares an XML entity"):
        main(["import", str(path), "--from", str(bomb), "--target", "de"])
    assert read_suggestions(path, "en", "de") == []  # nothing kept
