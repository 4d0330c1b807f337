"""Glossaries: a language pair's source term -> target term entries, read from DeepL's two
formats (TSV, CSV) and from TBX, each checked whole before anything is kept.

    read_glossary(path, source_lang, target_lang)   a file, its format by its suffix:
      .tsv   one entry a line, source<TAB>target                          (DeepL's)
      .csv   one entry a line, source,target in CSV's quoting; a line may  (DeepL's)
             add its source and target languages: source,target,en,de
      .tbx   TBX (ISO 30042): TBX-Basic and TBX v2 (<martif>: termEntry > langSet > tig or
             ntig > term), TBX v3 (<tbx>: conceptEntry > langSec > termSec > term); each
             concept with terms of both languages an entry (each source term -> its first
             target term), concepts with one of them only passed over
      -> Glossary(name: the file's stem, source_lang, target_lang, entries in file order)
    parse_entries(text, entries_format, origin)     the service's (POST /v2/glossaries): a
      request's TSV, CSV or TBX text
    checked_entries(rows, origin, unit)             any (place, source, target) rows, e.g.
      a request's inline {source: target}, through the same checks
    entries_tsv(entries)                            the entries as DeepL's TSV, to hand back

An entry whose target is its source (a name, a product) is a do-not-translate entry.

Each fault is a GlossaryError, one line naming the file (or what `origin` says: "glossary"),
the place (TSV and CSV: the line; TBX and inline entries: the entry's number) and the fault:
a side empty; a tab or a line break in a term; a source term given two different targets
(the same pair twice is one entry); languages not the pair's (a CSV line's, or no TBX concept
with both); past one of LIMITS. Lines that are blank are passed over; terms are stripped of
the white space around them.

TBX is XML from other people: it is read with the standard library's ElementTree after
refusing any entity declaration (<!ENTITY: none of TBX's own), the one way a small file
expands without bound (a DOCTYPE naming TBX's DTD is fine: the DTD is never fetched).
"""

import csv
import io
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from seq2seq.localization.catalog_formats import XML_LANG, local, same_language
from seq2seq.support.errors import UserError

# The limits on one glossary, DeepL's where it has one: bytes of an entry (source, tab and
# target, UTF-8), entries, bytes of them all (as TSV), bytes of a glossary's name.
MAX_ENTRY_BYTES = 1024
MAX_ENTRIES = 10_000
MAX_GLOSSARY_BYTES = 10 * 2**20  # DeepL's 10 MiB
MAX_NAME_BYTES = 1024
FORMATS = ("tsv", "csv", "tbx")  # by a file's suffix, or a request's entries_format


class GlossaryError(UserError):
    """A glossary that cannot be kept: where (file and line, or entry) and what is wrong."""


@dataclass
class Glossary:
    """A pair's entries, source term -> target term, in the order they were given."""

    name: str
    source_lang: str
    target_lang: str
    entries: dict[str, str]


Row = tuple[int, str, str]  # (its place: a line or an entry's number, source, target)


def read_glossary(path: Path, source_lang: str, target_lang: str) -> Glossary:
    """The glossary file at `path` for source_lang -> target_lang (format by its suffix)."""
    entries_format = path.suffix.lower().removeprefix(".")
    if entries_format not in FORMATS:
        raise GlossaryError(f"{path}: a glossary is a .tsv, .csv or .tbx file")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise GlossaryError(f"cannot read the glossary {path}: {error.strerror}") from None
    text = utf8(data, str(path))
    entries = parse_entries(text, entries_format, str(path), (source_lang, target_lang))
    return Glossary(path.stem, source_lang, target_lang, entries)


def utf8(data: bytes, origin: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise GlossaryError(f"{origin}: not UTF-8 (byte {error.start + 1})") from None


def parse_entries(
    text: str, entries_format: str, origin: str = "glossary", pair: tuple[str, str] = ("", "")
) -> dict[str, str]:
    """The entries of a glossary's `text` in `entries_format` (tsv, csv, tbx) for `pair`
    (source and target language: a CSV line's and TBX's are checked against it), checked
    whole; `origin` names it in an error."""
    if entries_format == "tsv":
        return checked_entries(tsv_rows(text, origin), origin)
    if entries_format == "csv":
        return checked_entries(csv_rows(text, origin, pair), origin)
    return checked_entries(tbx_rows(text, origin, pair), origin, "entry")


def tsv_rows(text: str, origin: str) -> Iterator[Row]:
    for number, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        terms = line.split("\t")
        if len(terms) != 2:
            fault = "no tab between" if len(terms) == 1 else "a tab in a term: one tab between"
            raise GlossaryError(f"{origin}, line {number}: {fault} its source and target terms")
        yield number, terms[0], terms[1]


def csv_rows(text: str, origin: str, pair: tuple[str, str]) -> Iterator[Row]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        for fields in reader:
            number = reader.line_num
            if not any(field.strip() for field in fields):
                continue
            if len(fields) not in (2, 4):
                raise GlossaryError(
                    f"{origin}, line {number}: {len(fields)} fields; an entry is source,target "
                    "or source,target,source language,target language"
                )
            if len(fields) == 4:
                check_pair(fields[2:], pair, f"{origin}, line {number}")
            yield number, fields[0], fields[1]
    except csv.Error as error:
        raise GlossaryError(f"{origin}, line {reader.line_num}: not CSV ({error})") from None


def check_pair(languages: list[str], pair: tuple[str, str], where: str) -> None:
    """A CSV line's languages, the pair's (either side unknown: "", anything)."""
    for side, code, wanted in zip(("source", "target"), languages, pair, strict=True):
        if wanted and not same_language(code, wanted):
            raise GlossaryError(f"{where}: its {side} language is {code}, the pair's is {wanted}")


def tbx_rows(text: str, origin: str, pair: tuple[str, str]) -> Iterator[Row]:
    """Each TBX concept's entries: its source terms, each -> its first target term."""
    if "<!ENTITY" in text:
        raise GlossaryError(
            f"{origin}: refused: it declares an XML entity, which can expand without bound"
        )
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as error:
        line, column = error.position
        where = f"{origin}, line {line}, column {column}"
        raise GlossaryError(f"{where}: not well-formed XML") from None
    if local(root.tag) not in ("martif", "tbx"):
        raise GlossaryError(f"{origin}: not TBX (its root element is <{local(root.tag)}>)")
    concepts = [e for e in root.iter() if local(e.tag) in ("termEntry", "conceptEntry")]
    languages, found = set(), False
    for number, concept in enumerate(concepts, 1):
        sides = ([], [])
        for language_set in (e for e in concept if local(e.tag) in ("langSet", "langSec")):
            code = language_set.get(XML_LANG, "")
            languages.add(code)
            terms = ["".join(t.itertext()) for t in language_set.iter() if local(t.tag) == "term"]
            for side, wanted in zip(sides, pair, strict=True):
                if same_language(code, wanted):
                    side += terms
        if sides[0] and sides[1]:
            found = True
            yield from ((number, source, sides[1][0]) for source in sides[0])
    if concepts and not found:
        raise GlossaryError(
            f"{origin}: no entry has terms in both {pair[0]} and {pair[1]} (its languages: "
            f"{', '.join(sorted(languages)) or 'none named'})"
        )


def checked_entries(rows: Iterable[Row], origin: str, unit: str = "line") -> dict[str, str]:
    """The entries of `rows`, each checked (an error names `origin` and the row's place, its
    `unit`: line, entry), and all of them within the limits; none at all is a fault too."""
    entries: dict[str, str] = {}
    places: dict[str, int] = {}
    total = 0
    for place, source, target in rows:
        where = f"{origin}, {unit} {place}"
        source, target = source.strip(), target.strip()
        check_entry(source, target, where)
        if entries.get(source, target) != target:
            raise GlossaryError(
                f"{where}: {source!r} has two targets, {entries[source]!r} ({unit} "
                f"{places[source]}) and {target!r}"
            )
        entries.setdefault(source, target)
        places.setdefault(source, place)
        total += len(f"{source}\t{target}\n".encode())
        if len(entries) > MAX_ENTRIES or total > MAX_GLOSSARY_BYTES:
            raise GlossaryError(
                f"{where}: too big: a glossary holds at most {MAX_ENTRIES:,} entries and "
                f"{MAX_GLOSSARY_BYTES:,} bytes"
            )
    if not entries:
        raise GlossaryError(f"{origin}: no entries")
    return entries


def check_entry(source: str, target: str, where: str) -> None:
    for side, term in (("source", source), ("target", target)):
        if not term:
            raise GlossaryError(f"{where}: the {side} term is empty")
        try:
            term.encode("utf-8")
        except UnicodeEncodeError:  # JSON's "\ud800": half of a UTF-16 pair
            raise GlossaryError(f"{where}: the {side} term is not valid Unicode") from None
        if "\t" in term:
            raise GlossaryError(f"{where}: a tab in the {side} term {term!r}")
        if re.search(r"[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]", term):
            raise GlossaryError(f"{where}: a line break in the {side} term {term!r}")
    size = len(f"{source}\t{target}".encode())
    if size > MAX_ENTRY_BYTES:
        raise GlossaryError(
            f"{where}: too big: {size:,} bytes; an entry holds at most {MAX_ENTRY_BYTES:,}"
        )


def entries_tsv(entries: dict[str, str]) -> str:
    """The entries as DeepL's TSV: source<TAB>target, a line each."""
    return "".join(f"{source}\t{target}\n" for source, target in entries.items())
