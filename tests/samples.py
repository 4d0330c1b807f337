"""Files as the tests write them: a PO catalog with one entry of each kind and the pairs (and
skipped entries) it gives, a TMX memory, a catalog read as the corpus reads it; a Moses zip of
pairs; Word documents and zips."""

import io
import zipfile

import polib

from seq2seq.localization.catalogs import read_catalogs

LANGUAGES = ("en", "de")


# A catalog with one entry of each kind, and what it gives: (msgid, msgstr) pairs in order.
ENTRIES = [
    polib.POEntry(msgid="Open file", msgstr="Datei öffnen", occurrences=[("main.c", "12")]),
    polib.POEntry(msgctxt="menu", msgid="Open", msgstr="Öffnen"),
    polib.POEntry(msgctxt="verb", msgid="Open", msgstr="Öffne"),
    polib.POEntry(
        msgid="%d file", msgid_plural="%d files", msgstr_plural={0: "%d Datei", 1: "%d Dateien"}
    ),
    polib.POEntry(msgid="Usage: %s FILE\nCopy it.", msgstr="Aufruf: %s DATEI\nKopiert sie."),
    polib.POEntry(msgid="Save", msgstr="Sichern", flags=["fuzzy"]),
    polib.POEntry(msgid="Quit", msgstr=""),
    polib.POEntry(msgid="%d dir", msgid_plural="%d dirs", msgstr_plural={0: "%d Ordner", 1: ""}),
    polib.POEntry(msgid="Old", msgstr="Alt", obsolete=True),
]
PAIRS = [
    ("Open file", "Datei öffnen"),
    ("Open", "Öffnen"),
    ("Open", "Öffne"),
    ("%d file", "%d Datei"),
    ("%d files", "%d Dateien"),
    ("Usage: %s FILE\\nCopy it.", "Aufruf: %s DATEI\\nKopiert sie."),
]
SKIPPED = {"header": 1, "fuzzy": 1, "untranslated": 2, "obsolete": 1}


def write_po(path, entries=ENTRIES, language="de"):
    catalog = polib.POFile()
    catalog.metadata = {
        "Project-Id-Version": path.stem, "Language": language, "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit",
        "Plural-Forms": "nplurals=2; plural=(n != 1);",
    }  # fmt: skip
    catalog.extend(entries)
    path.parent.mkdir(parents=True, exist_ok=True)
    catalog.save(str(path))
    return catalog


def read(path, languages=LANGUAGES):
    skipped = {}
    pairs = list(read_catalogs([path], languages, skipped))
    return pairs, skipped


TMX = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE tmx SYSTEM "tmx14.dtd">
<tmx version="1.4">
  <header creationtool="hand" creationtoolversion="1" datatype="plaintext" segtype="sentence"
          adminlang="en-US" srclang="en-US" o-tmf="none"/>
  <body>
    <tu tuid="1">
      <tuv xml:lang="EN-US"><seg>Print <ph x="1">%s</ph> pages</seg></tuv>
      <tuv xml:lang="fr-FR"><seg>Imprimer <ph x="1">%s</ph> pages</seg></tuv>
      <tuv xml:lang="de-AT"><seg>Drucke <ph x="1">%s</ph> Seiten (AT)</seg></tuv>
      <tuv xml:lang="de"><seg>Drucke <ph x="1">%s</ph> Seiten</seg></tuv>
    </tu>
    <tu tuid="2">
      <tuv lang="en">
        <seg><bpt i="1">&lt;i&gt;</bpt>Hi<ept i="1">&lt;/i&gt;</ept> <hi>you</hi></seg>
      </tuv>
      <tuv lang="de_CH">
        <seg><bpt i="1">&lt;i&gt;</bpt>Hoi<ept i="1">&lt;/i&gt;</ept> <hi>du</hi></seg>
      </tuv>
    </tu>
    <tu tuid="3">
      <tuv xml:lang="en"><seg>French only</seg></tuv>
      <tuv xml:lang="fr"><seg>Seulement en français</seg></tuv>
    </tu>
  </body>
</tmx>
"""


def moses_zip(pairs, name: str, langs: tuple[str, str]) -> bytes:
    """A zip in the layout of OPUS's Moses files: the two sides (name.lang), README, LICENSE
    and ids."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for side, lang in enumerate(langs):
            archive.writestr(f"{name}.{lang}", "".join(p[side] + "\n" for p in pairs))
        archive.writestr(f"{name}.ids", "".join("a\tb\t1\t1\n" for _ in pairs))
        archive.writestr("README", f"{name.partition('.')[0]}, a fixture\n")
        archive.writestr("LICENSE", "CC-BY 2.0 FR\n")
    return buffer.getvalue()


def saved(document) -> bytes:
    """A python-docx, python-pptx or odfpy document's bytes."""
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def word_xml(body: bytes) -> bytes:
    """A .docx's word/document.xml of `body` (its paragraphs)."""
    return (b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
            b"<w:body>" + body + b"</w:body></w:document>")  # fmt: skip


def zipped(members: dict[str, bytes]) -> bytes:
    """A zip of these members (name -> bytes), deflated."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()
