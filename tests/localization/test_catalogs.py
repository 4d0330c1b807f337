"""Catalogs as sources (seq2seq/localization/catalogs.py, catalog_formats.py): gettext PO and MO
written by polib itself (and compiled by GNU msgfmt where it is installed), XLIFF 1.2 and 2.0
and TMX files written here by hand after their specifications, read as pairs, their skipped
entries counted in report.json, and a folder's catalogs held out whole for valid and test."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import polib
import pytest

from seq2seq import data
from seq2seq.config import ConfigError, config_from_dict
from seq2seq.corpora.corpus_types import build_corpus
from seq2seq.localization.catalog_formats import same_language
from seq2seq.localization.catalogs import (
    PROGRAM_GROUPS,
    catalog_files,
    held_out,
    program,
    read_catalogs,
)
from seq2seq.support.errors import UserError
from seq2seq.text.parallel import load_split

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


def locale_tree(root, programs=("alpha", "beta", "gamma", "delta", "epsilon", "zeta")):
    """A usr/share/locale/de/LC_MESSAGES of MO catalogs, one per program, each with ENTRIES
    and strings of its own; and the shared ones (Open file ...) in every catalog."""
    folder = root / "locale/de/LC_MESSAGES"
    for name in programs:
        own = [polib.POEntry(msgid=f"{name} {i}", msgstr=f"{name.upper()} {i}") for i in range(3)]
        catalog = write_po(root / "po" / f"{name}.po", ENTRIES + own)
        folder.mkdir(parents=True, exist_ok=True)
        catalog.save_as_mofile(str(folder / f"{name}.mo"))
    return folder


def catalog_config(train_sources, **corpus):
    return config_from_dict(
        {
            "corpus": {
                "type": "sources", "name": "catalogs", "src_lang": "en", "tgt_lang": "de",
                "train_sources": train_sources, **corpus,
            },
            "clean": {"drop_identical": False},
        }
    )  # fmt: skip


def test_report_json_counts_each_sources_skipped_entries(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    locale_tree(tmp_path / "a", ("alpha", "beta"))
    locale_tree(tmp_path / "b", ("gamma", "delta", "epsilon"))
    (tmp_path / "memory.tmx").write_text(TMX, encoding="utf-8")
    config = catalog_config(
        [{"file": "a/po/"}, {"file": "b/locale/de/LC_MESSAGES"}, {"file": "memory.tmx"}],
        valid_source={"file": "b/po/gamma.po"}, test_source={"file": "b/po/delta.po"},
    )  # fmt: skip
    assert build_corpus(config) == {"train": 6 + 3 + 2, "valid": 3, "test": 9}
    report = json.loads((tmp_path / "data/catalogs/report.json").read_text())
    po, mo, tmx = report["train"]["sources"].values()
    assert po["skipped"] == {key: 2 * count for key, count in SKIPPED.items()}  # 2 catalogs
    assert mo["skipped"] == {"header": 3}  # the compiler left out the rest
    assert tmx["skipped"] == {"untranslated": 1}
    assert report["train"]["skipped"] == {"header": 5, "fuzzy": 2, "untranslated": 5, "obsolete": 2}
    assert report["valid"]["skipped"] == report["test"]["skipped"] == SKIPPED
    # alpha's shared strings are in test, beta's (and every MO's) duplicates of them
    assert (po["read"], po["kept"], po["removed"]["in_other_split"]) == (18, 6, 6)
    assert (po["removed"]["duplicate"], mo["removed"]["duplicate"]) == (6, 18)
    assert (mo["kept"], tmx["kept"]) == (3, 2)
    assert "train_sources[0] (a/po/): 18 pairs read (10 entries skipped: 2 header, 2 fuzzy, " in (
        capsys.readouterr().out
    )


def test_hold_out_puts_each_program_in_one_split_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = locale_tree(tmp_path)
    config = catalog_config([{"file": str(folder), "hold_out": 0.34}])  # 6 programs: 1, 1, 4
    assert build_corpus(config) == {"train": 12, "valid": 3, "test": 9}
    programs = {}
    for split in ("train", "valid", "test"):
        for source, _ in load_split(config, split):
            if source.split()[0] in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta"):
                programs.setdefault(source.split()[0], set()).add(split)
    assert len(programs) == 6 and all(len(splits) == 1 for splits in programs.values())
    held = [program for program, splits in programs.items() if splits != {"train"}]
    assert len(held) == 2
    report = json.loads((tmp_path / "data/catalogs/report.json").read_text())
    (valid_label,) = report["valid"]["sources"]
    assert valid_label.startswith(f"train_sources[0] ({folder}, 1 held out: ")
    # the shared strings are the test split's (written first), and none is in train
    assert ("Open file", "Datei öffnen") in load_split(config, "test")
    assert ("Open file", "Datei öffnen") not in load_split(config, "train")

    # another language's tree of the same programs holds out the same ones
    shutil.copytree(folder, tmp_path / "locale/fr/LC_MESSAGES")
    build_corpus(catalog_config([{"file": "locale/fr/LC_MESSAGES", "hold_out": 0.34}]))
    french = json.loads((tmp_path / "data/catalogs/report.json").read_text())
    for split in ("valid", "test"):
        (label,) = report[split]["sources"]
        assert [label.split(" held out: ")[1]] == [
            label.split(" held out: ")[1] for label in french[split]["sources"]
        ]


@pytest.mark.parametrize(
    ("share", "sizes"), [(0.01, (4, 1, 1)), (0.34, (4, 1, 1)), (0.5, (2, 2, 2)), (0.99, (2, 2, 2))]
)
def test_hold_out_holds_one_program_each_at_least_and_trains_on_one(tmp_path, share, sizes):
    paths = [tmp_path / f"{name}.mo" for name in "abcdef"] + [tmp_path / "a.po"]
    splits = held_out(tmp_path, paths, share, seed=1)
    programs = {split: {path.stem for path in found} for split, found in splits.items()}
    assert tuple(len(programs[split]) for split in ("train", "valid", "test")) == sizes
    assert set().union(*programs.values()) == set("abcdef")
    assert sum(map(len, splits.values())) == len(paths)
    assert any({tmp_path / "a.po", tmp_path / "a.mo"} <= set(found) for found in splits.values())


@pytest.mark.parametrize(
    ("source", "corpus", "expected"),
    [
        ({"file": "po", "hold_out": 1.5}, {}, r"'corpus.train_sources\[0\].hold_out' must be in"),
        ({"file": "a.po", "hold_out": 0.1}, {}, "is for a file: source that names a folder"),
        ({"url": "https://x.org/a.tmx", "hold_out": 0.1}, {}, "names a folder of catalogs"),
        (
            {"file": "po", "hold_out": 0.1}, {"valid_source": {"file": "v.po"}},
            "'corpus.valid_source' is given, but a training source's hold_out makes",
        ),
        ({"file": "a.txt"}, {}, r"be a catalog \(.po, .mo, .xlf, .xliff, .tmx\) or a folder"),
        ({"file": "a.po", "programs": "user"}, {}, r"\[0\].programs' is for a file: source"),
    ],
)  # fmt: skip
def test_catalog_source_config_problems_name_the_key(source, corpus, expected):
    with pytest.raises(ConfigError, match=expected):
        catalog_config([source], **corpus)


PROGRAMS = tuple(f"program{i:02}" for i in range(30))


def test_a_folders_programs_fall_in_three_groups_the_same_in_every_language(tmp_path):
    """Source.programs: base, user and held_out split a folder's programs, whole and apart,
    about 60/20/20; a program is in the same group in another language's folder (same name)
    and under any corpus.seed."""
    groups = {}
    for language in ("de", "fr"):
        folder = locale_tree(tmp_path / language, PROGRAMS)
        groups[language] = {
            group: {program(folder, path) for path in catalog_files(folder, group)}
            for group in PROGRAM_GROUPS
        }
    assert groups["de"] == groups["fr"]
    named = list(groups["de"].values())
    assert set().union(*named) == set(PROGRAMS) and sum(map(len, named)) == len(PROGRAMS)
    assert all(len(names) >= 3 for names in named) and len(groups["de"]["base"]) >= 12


def test_a_source_of_the_user_programs_reads_theirs_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = locale_tree(tmp_path, PROGRAMS)
    user = {program(folder, path) for path in catalog_files(folder, "user")}
    for seed in (1, 2):
        sources = [{"file": str(folder), "programs": "user", "hold_out": 0.5}]
        config = catalog_config(sources, seed=seed)
        build_corpus(config)
        pairs = [p for split in ("train", "valid", "test") for p in load_split(config, split)]
        own = {source.split()[0] for source, _ in pairs if source.split()[0] in PROGRAMS}
        assert own == user  # every user program, in one split or another, and no other


def test_a_folder_without_catalogs_and_too_few_programs_to_hold_out(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match=r"empty holds no catalog \(no .po, .mo"):
        build_corpus(catalog_config([{"file": "empty"}], valid_size=1, test_size=1))
    locale_tree(tmp_path, ("alpha", "beta"))
    with pytest.raises(UserError, match="holds 2 program.* hold_out needs 3 at least"):
        build_corpus(catalog_config([{"file": "po", "hold_out": 0.5}]))


def test_make_data_on_a_folder_of_catalogs(tmp_path, monkeypatch, capsys):
    """python -m seq2seq.data, end to end: corpus, vocabularies and token ids."""
    monkeypatch.chdir(tmp_path)
    locale_tree(tmp_path)
    (tmp_path / "catalogs.yaml").write_text(
        "corpus: {type: sources, name: catalogs, src_lang: en, tgt_lang: de,\n"
        "  train_sources: [{file: locale/de/LC_MESSAGES, hold_out: 0.34}]}\n",
        encoding="utf-8",
    )
    data.main(["--config", "catalogs.yaml"])
    out = capsys.readouterr().out
    assert "corpus data/catalogs/: train 12, valid 3, test 9 pairs" in out
    assert "(locale/de/LC_MESSAGES, 4 catalogs): 36 pairs read (4 entries skipped: 4 header)" in out
    assert (tmp_path / "data/catalogs/train.src").read_text().count("\n") == 12


def test_a_pairs_accelerator_is_taken_out_of_both_sides_as_translation_takes_it(tmp_path):
    """What the model learns is what it is shown at translation (placeholders.unaccelerated):
    the words, the mark wherever the translator put it dropped."""
    write_po(tmp_path / "gtk.po", [
        polib.POEntry(msgid="_Save", msgstr="Spei_chern"),
        polib.POEntry(msgid="Save &As", msgstr="Speichern &unter"),
        polib.POEntry(msgid="snake_case", msgstr="snake_case"),
    ])  # fmt: skip
    assert read(tmp_path / "gtk.po")[0] == [
        ("Save", "Speichern"), ("Save As", "Speichern unter"), ("snake_case", "snake_case"),
    ]  # fmt: skip
