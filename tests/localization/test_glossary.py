"""Glossaries as data (seq2seq/localization/glossary.py): TSV, CSV and TBX (v2 and v3) files read as
their entries in order, and each fault a one-line GlossaryError naming the file, the line (or
the TBX entry) and what is wrong."""

import pytest

from seq2seq.localization import glossary
from seq2seq.localization.glossary import (
    GlossaryError,
    checked_entries,
    entries_tsv,
    parse_entries,
    read_glossary,
)

ENTRIES = {"Layer": "Ebene", "GIMP": "GIMP", 'say "hi", then': "sag „hallo“, dann"}

TBX_V2 = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE martif SYSTEM "TBXBasiccoreStructV02.dtd">
<martif type="TBX-Basic" xml:lang="en">
  <text><body>
    <termEntry id="c1">
      <langSet xml:lang="en"><tig><term>Layer</term></tig></langSet>
      <langSet xml:lang="de-DE"><tig><term>Ebene</term></tig>
        <tig><term>Schicht</term></tig></langSet>
    </termEntry>
    <termEntry id="c2">
      <langSet xml:lang="en"><ntig><termGrp><term>GIMP</term></termGrp></ntig></langSet>
      <langSet xml:lang="fr"><tig><term>GIMP</term></tig></langSet>
      <langSet xml:lang="de"><ntig><termGrp><term>GIMP</term></termGrp></ntig></langSet>
    </termEntry>
    <termEntry id="c3"><langSet xml:lang="en"><tig><term>only English</term></tig></langSet>
    </termEntry>
  </body></text>
</martif>
"""
TBX_V3 = """<?xml version="1.0" encoding="UTF-8"?>
<tbx type="TBX-Basic" style="dca" xml:lang="en" xmlns="urn:iso:std:iso:30042:ed-2">
  <text><body>
    <conceptEntry id="1">
      <langSec xml:lang="en"><termSec><term>Layer</term></termSec>
        <termSec><term>Level</term></termSec></langSec>
      <langSec xml:lang="de"><termSec><term>Ebene</term></termSec></langSec>
    </conceptEntry>
  </body></text>
</tbx>
"""


def written(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_tsv_and_csv_give_their_entries_in_order(tmp_path):
    tsv = "".join(f"{s}\t{t}\n" for s, t in ENTRIES.items())
    csv = 'Layer,Ebene\n\nGIMP,GIMP,en,de\n"say ""hi"", then","sag „hallo“, dann"\r\n'
    for name, text in (("terms.tsv", "\ufeff" + tsv + "\n  \n"), ("terms.csv", csv)):
        read = read_glossary(written(tmp_path, name, text), "en", "de")
        assert (read.name, read.source_lang, read.target_lang) == ("terms", "en", "de")
        assert list(read.entries.items()) == list(ENTRIES.items())
    assert parse_entries(entries_tsv(ENTRIES), "tsv") == ENTRIES  # what GET .../entries gives


def test_tbx_v2_and_v3_give_each_concepts_source_terms_its_first_target(tmp_path):
    v2 = read_glossary(written(tmp_path, "gimp.tbx", TBX_V2), "en", "de")
    assert v2.entries == {"Layer": "Ebene", "GIMP": "GIMP"}  # c3 has no German: passed over
    v3 = read_glossary(written(tmp_path, "v3.tbx", TBX_V3), "EN", "de")
    assert v3.entries == {"Layer": "Ebene", "Level": "Ebene"}
    backwards = {"Ebene": "Layer", "Schicht": "Layer", "GIMP": "GIMP"}
    assert parse_entries(TBX_V2, "tbx", pair=("de", "en")) == backwards


@pytest.mark.parametrize(
    ("name", "text", "fault"),
    [
        ("a.tsv", "Layer\tEbene\nStone\t \n", "a.tsv, line 2: the target term is empty"),
        ("a.tsv", "\tEbene\n", "a.tsv, line 1: the source term is empty"),
        ("a.tsv", "Layer Ebene\n", "a.tsv, line 1: no tab between its source and target terms"),
        ("a.tsv", "a\tb\n\nLay\ter\tEbene\n", "a.tsv, line 3: a tab in a term: one tab between"),
        ("a.tsv", "Layer\tEbene\nx\ty\nLayer\tSchicht\n",
         "a.tsv, line 3: 'Layer' has two targets, 'Ebene' (line 1) and 'Schicht'"),
        ("a.tsv", "Layer\tEbe\u2028ne\n", "a.tsv, line 1: a line break in the target term"),
        ("a.tsv", "Layer\t" + "e" * 1019 + "\n", "a.tsv, line 1: too big: 1,025 bytes"),
        ("a.tsv", "\n \n", "a.tsv: no entries"),
        ("a.csv", '"Lay\ter",Ebene\n', "a.csv, line 1: a tab in the source term"),
        ("a.csv", 'x,y\n"Lay\ner",Ebene\n', "a.csv, line 3: a line break in the source term"),
        ("a.csv", "Layer,Ebene,en\n", "a.csv, line 1: 3 fields; an entry is source,target"),
        ("a.csv", "Layer,Ebene,en,fr\n", "a.csv, line 1: its target language is fr, the pair"),
        ("a.csv", 'Layer,"Ebene\n', "a.csv, line 1: not CSV"),
        ("a.tbx", TBX_V2.replace("de-DE", "fr").replace('"de"', '"it"'),
         "a.tbx: no entry has terms in both en and de (its languages: en, fr, it)"),
        ("a.tbx", TBX_V2.replace("<term>Ebene</term>", "<term> </term>"),
         "a.tbx, entry 1: the target term is empty"),
        ("a.tbx", "<xliff/>", "a.tbx: not TBX (its root element is <xliff>)"),
        ("a.tbx", "<martif><text>", "a.tbx, line 1, column 14: not well-formed XML"),
        ("a.tbx", '<!DOCTYPE m [<!ENTITY a "aaaa">]><martif>&a;</martif>',
         "a.tbx: refused: it declares an XML entity"),
        ("a.txt", "Layer\tEbene\n", "a.txt: a glossary is a .tsv, .csv or .tbx file"),
    ],
)  # fmt: skip
def test_each_fault_is_one_line_naming_the_file_the_place_and_what(tmp_path, name, text, fault):
    path = written(tmp_path, name, text)
    with pytest.raises(GlossaryError) as error:
        read_glossary(path, "en", "de")
    message = str(error.value)
    assert message.startswith(f"{tmp_path}/{fault}") and "\n" not in message, message


def test_not_utf8_and_a_missing_file(tmp_path):
    path = tmp_path / "latin1.tsv"
    path.write_bytes("Stra\xdfe\tstreet\n".encode("latin-1"))
    with pytest.raises(GlossaryError, match=r"latin1.tsv: not UTF-8 \(byte 5\)"):
        read_glossary(path, "de", "en")
    with pytest.raises(GlossaryError, match="cannot read the glossary .*none.tsv"):
        read_glossary(tmp_path / "none.tsv", "de", "en")


def test_the_same_pair_twice_is_one_entry_and_terms_are_stripped():
    assert parse_entries("Layer\tEbene\n Layer \t Ebene\n", "tsv") == {"Layer": "Ebene"}


def test_too_many_entries_or_bytes_are_refused(monkeypatch):
    monkeypatch.setattr(glossary, "MAX_ENTRIES", 2)
    with pytest.raises(GlossaryError, match=r"glossary, line 3: too big: .* at most 2 entries"):
        parse_entries("a\tb\nc\td\ne\tf\n", "tsv")
    monkeypatch.setattr(glossary, "MAX_GLOSSARY_BYTES", 8)
    assert len(parse_entries("a\tb\nc\td\n", "tsv")) == 2  # 4 bytes a line: 8, the most
    with pytest.raises(GlossaryError, match="glossary, line 2: too big"):
        parse_entries("ab\tcd\nc\td\n", "tsv")


def test_inline_entries_go_through_the_same_checks():
    rows = [(1, "Layer", "Ebene"), (2, "Stone", "\ud800")]
    with pytest.raises(GlossaryError, match="^'glossary', entry 2: the target term is not valid"):
        checked_entries(rows, "'glossary'", "entry")
