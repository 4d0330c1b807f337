"""Catalogs as sources (seq2seq/localization/catalogs.py, catalog_formats.py): gettext PO and MO
written by polib itself (and compiled by GNU msgfmt where it is installed), XLIFF 1.2 and 2.0
and TMX files written here by hand after their specifications, read as pairs, their skipped
entries counted in report.json, and a folder's catalogs held out whole for valid and test."""

import shutil
import subprocess
import sys
from pathlib import Path

import polib
import pytest

from seq2seq import data
from seq2seq.localization.catalog_formats import same_language
from seq2seq.support.errors import UserError

from samples import PAIRS, SKIPPED, TMX, read, write_po


def test_a_po_file_gives_its_translated_entries_and_counts_the_rest(tmp_path):
    write_po(tmp_path / "app.po")
    assert read(tmp_path / "app.po") == (PAIRS, SKIPPED)


@pytest.mark.slow
def test_an_mo_file_compiled_by_polib_and_by_msgfmt_reads_as_its_po(tmp_path):
    """MO files hold the translated entries only (fuzzy, untranslated and obsolete ones are
    left out by the compiler), sorted by msgid: the same pairs, and the header."""
    catalog = write_po(tmp_path / "app.po")
    catalog.save_as_mofile(str(tmp_path / "polib.mo"))
    pairs, skipped = read(tmp_path / "polib.mo")
    assert sorted(pairs) == sorted(PAIRS) and skipped == {"header": 1}
    if not shutil.which("msgfmt"):  # GNU gettext (apt package gettext): not required
        pytest.skip("no msgfmt to compile with")
    subprocess.run(["msgfmt", "-o", tmp_path / "gnu.mo", tmp_path / "app.po"], check=True)
    # msgfmt keeps a plural entry with an empty form (polib does not): skipped on reading
    assert read(tmp_path / "gnu.mo") == (pairs, {"header": 1, "untranslated": 1})


def test_a_language_with_one_plural_form_pairs_the_singular_only(tmp_path):
    entry = polib.POEntry(msgid="%d file", msgid_plural="%d files", msgstr_plural={0: "%d 个"})
    write_po(tmp_path / "zh.po", [entry], language="zh_CN")
    assert read(tmp_path / "zh.po", ("en", "zh")) == ([("%d file", "%d 个")], {"header": 1})


XLIFF_1_2 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file original="app.properties" source-language="en-US" target-language="de-DE"
        datatype="plaintext">
    <body>
      <trans-unit id="1">
        <source>Hello <g id="1">world</g></source>
        <target state="translated">Hallo <g id="1">Welt</g></target>
      </trans-unit>
      <group id="g">
        <trans-unit id="2">
          <source>Delete <ph id="1">%s</ph>?<x id="2" equiv-text="{0}"/></source>
          <target state="final">&lt;b&gt; <ph id="1">%s</ph> löschen?<x id="2"/></target>
        </trans-unit>
      </group>
      <trans-unit id="3">
        <source><bpt id="1">&lt;b&gt;</bpt>Bold<ept id="1">&lt;/b&gt;</ept></source>
        <target><bpt id="1">&lt;b&gt;</bpt>Fett<ept id="1">&lt;/b&gt;</ept></target>
      </trans-unit>
      <trans-unit id="4">
        <source>Maybe</source>
        <target state="needs-review-translation">Vielleicht</target>
      </trans-unit>
      <trans-unit id="5"><source>Never</source></trans-unit>
      <trans-unit id="6">
        <source>Later</source><target state="needs-translation">Später</target>
      </trans-unit>
    </body>
  </file>
</xliff>
"""

XLIFF_2_0 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.0" srcLang="en" trgLang="de">
  <file id="f1">
    <unit id="u1">
      <originalData>
        <data id="d1">%1$s</data>
        <data id="d2">&lt;b&gt;</data>
        <data id="d3">&lt;/b&gt;</data>
      </originalData>
      <segment state="final">
        <source>Welcome, <ph id="1" dataRef="d1"/>!</source>
        <target>Willkommen, <ph id="1" dataRef="d1"/>!</target>
      </segment>
      <ignorable><source> </source></ignorable>
      <segment>
        <source><pc id="2" dataRefStart="d2" dataRefEnd="d3">New</pc> mail<cp hex="2026"/></source>
        <target><pc id="2" dataRefStart="d2" dataRefEnd="d3">Neue</pc> Post<cp hex="2026"/></target>
      </segment>
    </unit>
    <group id="g1">
      <unit id="u2">
        <segment state="reviewed">
          <source><mrk id="m1" translate="no">Linux</mrk> kernel<ph id="3" equiv="{n}"/></source>
          <target><mrk id="m1" translate="no">Linux</mrk>-Kernel<ph id="3" equiv="{n}"/></target>
        </segment>
      </unit>
    </group>
    <unit id="u3">
      <segment state="initial"><source>Draft</source><target>Entwurf</target></segment>
    </unit>
    <unit id="u4"><segment><source>Nothing</source></segment></unit>
  </file>
</xliff>
"""


XLIFF_PAIRS = {  # XLIFF 1.2 keeps the native code of placeholders; 2, each segment's original data
    "app.xlf": (
        XLIFF_1_2,
        [("Hello world", "Hallo Welt"), ("Delete %s?{0}", "<b> %s löschen?"),
         ("<b>Bold</b>", "<b>Fett</b>")],
        {"fuzzy": 1, "untranslated": 2},
    ),
    "app.xliff": (
        XLIFF_2_0,
        [("Welcome, %1$s!", "Willkommen, %1$s!"), ("<b>New</b> mail…", "<b>Neue</b> Post…"),
         ("Linux kernel{n}", "Linux-Kernel{n}")],
        {"fuzzy": 1, "untranslated": 1},
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", XLIFF_PAIRS)
def test_xliff_keeps_the_text_and_the_code_of_placeholders(tmp_path, name):
    text, pairs, skipped = XLIFF_PAIRS[name]
    (tmp_path / name).write_text(text, encoding="utf-8")
    assert read(tmp_path / name) == (pairs, skipped)


def test_tmx_takes_each_side_by_its_language_an_exact_code_first(tmp_path):
    (tmp_path / "memory.tmx").write_text(TMX, encoding="utf-8")
    assert read(tmp_path / "memory.tmx") == (
        [("Print %s pages", "Drucke %s Seiten"), ("<i>Hi</i> you", "<i>Hoi</i> du")],
        {"untranslated": 1},
    )
    pairs, _ = read(tmp_path / "memory.tmx", ("de", "fr"))  # either way round
    assert pairs == [("Drucke %s Seiten", "Imprimer %s pages")]


def test_language_codes_match_with_or_without_a_region():
    assert same_language("de-DE", "de") and same_language("de", "DE_de")
    assert same_language("pt_BR", "pt-br") and not same_language("pt-BR", "pt-PT")
    assert not same_language("de", "dsb") and not same_language("en", "de")


def test_an_xliff_file_of_another_pair_is_refused(tmp_path):
    path = tmp_path / "app.xlf"
    path.write_text(XLIFF_1_2, encoding="utf-8")
    with pytest.raises(UserError, match=r"app.xlf: its target language is de-DE, the pair's is fr"):
        read(path, ("en", "fr"))


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("bad.po", 'msgid "a"\nmsgstr "b"c"\n', r"bad.po, line 2: not a valid PO file \(unescaped"),
        ("worse.po", 'msgid "a"\nmsgstr "b"\nbogus\n', r"po, line 3: not a valid PO file \(syntax"),
        ("bad.mo", "not a catalog", r"bad.mo: not a valid MO file \(Invalid mo file, magic"),
        ("bad.xlf", XLIFF_1_2.replace("</g></source>", "</source>"), r"bad.xlf, line 7, co"),
        ("bad.tmx", TMX[:-20], r"bad.tmx, line 24, column 4: not well-formed XML \(unclosed tok"),
        ("other.xlf", TMX, r"other.xlf: not a xliff file \(its root element is <tmx>\)"),
        ("new.xlf", XLIFF_1_2.replace('"1.2"', '"3.0"', 1), r"XLIFF version '3.0'; versions 1"),
    ],
)
def test_a_malformed_catalog_is_a_one_line_error_naming_it(tmp_path, name, content, expected):
    (tmp_path / name).write_text(content, encoding="utf-8")
    with pytest.raises(UserError, match=expected) as error:
        read(tmp_path / name)
    assert "\n" not in str(error.value)


def test_xml_entities_are_refused(tmp_path):
    """A billion laughs, cut short: no entity declaration is expanded, nor any read."""
    declaration = '<!DOCTYPE tmx [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>'
    text = TMX.replace('<!DOCTYPE tmx SYSTEM "tmx14.dtd">', declaration).replace("Hi", "&b;")
    (tmp_path / "bomb.tmx").write_text(text, encoding="utf-8")
    with pytest.raises(UserError, match=r"bomb.tmx: refused: it declares an XML entity"):
        read(tmp_path / "bomb.tmx")


def test_without_the_extra_the_error_names_it(tmp_path, monkeypatch):
    write_po(tmp_path / "app.po")
    monkeypatch.setitem(sys.modules, "polib", None)  # import polib raises ImportError
    with pytest.raises(UserError, match=r"app.po needs polib: pip install 'seq2seq\[catalogs\]'"):
        read(tmp_path / "app.po")


def test_make_data_without_the_extra_stops_before_writing_anything(tmp_path, monkeypatch):
    """A config whose source is a folder of catalogs, without polib: one line naming the key
    and the extra, before any split is written."""
    monkeypatch.chdir(tmp_path)
    Path("mine.yaml").write_text(
        "corpus: {type: sources, name: mine, src_lang: en, tgt_lang: de, train_sources: "
        "[{file: 'other.{lang}'}, {file: catalogs}]}\n"
    )
    monkeypatch.setitem(sys.modules, "polib", None)
    expected = (
        r"^mine.yaml: corpus.train_sources\[1\] needs polib: pip install 'seq2seq\[catalogs\]'$"
    )
    with pytest.raises(UserError, match=expected):
        data.main(["--config", "mine.yaml"])
    assert not Path("data").exists()
