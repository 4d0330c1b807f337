"""Each catalog format's entries as sentence pairs: gettext PO and MO, XLIFF 1.2 and 2.x, TMX
(catalogs.py reads a source's catalogs through FORMATS, by their names' suffixes).

    .po .mo        a gettext catalog            polib        msgid -> msgstr
    .xlf .xliff    an XLIFF 1.2 or 2.x file     defusedxml   <source> -> <target>
    .tmx           a translation memory         defusedxml   <tuv> of src_lang -> of tgt_lang

    FORMATS[suffix](path, (src_lang, tgt_lang), skipped) -> (source, target) pairs, the
      entries that are no pairs counted in `skipped`, by why

Entries that are not pairs are skipped, counted by why (an entry is one catalog message; a
plural one gives two pairs):
    header        gettext's msgid "" entry: the catalog's metadata, no text
    obsolete      gettext's #~ entries, which the program no longer has
    fuzzy         translations no one has reviewed: gettext's fuzzy flag; an XLIFF 1.2 target
                  whose state is needs-review-*, needs-adaptation or needs-l10n; an XLIFF 2
                  segment with state="initial" given (the spec's default, but a file that
                  records no states would lose every segment: only one that says so is skipped)
    untranslated  no translation: an empty msgstr (or any empty plural form), an XLIFF unit
                  without target text or whose state is new or needs-translation, a TMX unit
                  without a variant in one of the pair's languages

What a pair is made of:
- gettext: the msgid is the source side (corpus.src_lang: gettext's msgids are usually
  English), the msgstr the target. A plural entry gives msgid -> msgstr[0] and msgid_plural ->
  msgstr[1] (the plural form of most languages with two; a language with one form, ja or zh,
  gives the first pair alone; the forms past [1], Russian's or Polish's "many", have no
  English text of their own and are left out). msgctxt tells two entries of one msgid apart
  for the program; it is no text to translate, and the pair is kept without it.
- XLIFF: <source> -> <target>, each <segment> of an XLIFF 2 unit a pair; a file that names
  its languages (1.2: source-language, target-language; 2: srcLang, trgLang) must name the
  pair's. TMX: each unit's variant in src_lang -> its variant in tgt_lang.
- Inline markup: the text inside <g>, <pc>, <mrk> and <hi> is kept, the tags are not; a
  placeholder keeps the original text where the format carries it: the native code inside
  XLIFF 1.2's and TMX's <ph>, <bpt>, <ept>, <it> and <ut> (<ph>%s</ph> is %s, <bpt>&lt;b&gt;
  </bpt> is <b>), XLIFF 2's <originalData> for its <ph/>, <sc/>, <ec/> and <pc>'s two ends
  (by dataRef), else their equiv (2) or equiv-text (1.2) attribute, else nothing; XLIFF 2's
  <cp hex="..."/> is its character. So a string keeps its %s, {0} and <b> as the program has them.
- Languages: a code matches the pair's side case-insensitively, with or without a region
  either way ("de" matches "de-DE", "de_de", "DE"); a TMX unit takes the exact match first.

XML is read with defusedxml (a thin layer over the standard library's ElementTree): catalogs
come from other people (a url: source, a download), and it refuses the entity declarations and
external references that make a small file expand without bound or read other files, whatever
Expat the Python links (the standard library alone is safe from them only with Expat >= 2.4.1).
polib (MIT) reads PO and MO; translate-toolkit, which reads all of these, is GPL, and our
licence is MIT. Both are the optional extra `catalogs`: pip install 'seq2seq[catalogs]'.
"""

import importlib
import re
import struct
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from xml.etree.ElementTree import Element, ParseError

from seq2seq.support.errors import UserError
from seq2seq.text.parallel import CorpusError

Pair = tuple[str, str]
Skipped = dict[str, int]  # entries that are not pairs, by why
Code = Callable[[Element, str], str]  # an inline element and its inner text -> the text it keeps

XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
FUZZY_STATES = {  # XLIFF 1.2's target states of a translation that needs a person's review
    "needs-review-translation", "needs-review-adaptation", "needs-review-l10n",
    "needs-adaptation", "needs-l10n",
}  # fmt: skip
UNTRANSLATED_STATES = {"new", "needs-translation"}  # XLIFF 1.2's, of a target yet to be written


def skip(skipped: Skipped, why: str) -> None:
    skipped[why] = skipped.get(why, 0) + 1


def needs(module: str, path: Path):
    """An optional extra's module, or a one-line error naming it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        needed = module.split(".")[0]
        raise UserError(f"{path} needs {needed}: pip install 'seq2seq[catalogs]'") from None


def same_language(code: str, wanted: str) -> bool:
    """de matches de-DE, de_de and DE, and de-DE matches de: one is the other, or its region."""
    a, b = (c.strip().replace("_", "-").lower() for c in (code, wanted))
    return a == b or a.startswith(b + "-") or b.startswith(a + "-")


# gettext: PO and MO, through polib.


def read_po(path: Path, languages: tuple[str, str], skipped: Skipped) -> Iterator[Pair]:
    return gettext_pairs(gettext_catalog(path, "pofile"), skipped)


def read_mo(path: Path, languages: tuple[str, str], skipped: Skipped) -> Iterator[Pair]:
    return gettext_pairs(gettext_catalog(path, "mofile"), skipped)


def gettext_catalog(path: Path, kind: str):
    """polib's POFile or MOFile of a file, or a one-line error naming it (and the line)."""
    polib = needs("polib", path)
    what = kind[:2].upper()
    try:
        return getattr(polib, kind)(str(path))
    except (OSError, ValueError, struct.error) as error:  # UnicodeDecodeError is a ValueError
        message = str(error).replace(f"{path} ", "")  # polib's: "... po file PATH (line 3)"
        line = re.search(r"^Syntax error in po file \(line (\d+)\):? *", message)
        where, message = (f", line {line[1]}", message[line.end() :]) if line else ("", message)
        reason = message or "syntax error"
        raise CorpusError(f"{path}{where}: not a valid {what} file ({reason})") from None


def gettext_language(path: Path) -> str:
    """A gettext catalog's Language header ("" where it has none)."""
    kind = "mofile" if path.name.lower().endswith(".mo") else "pofile"
    return gettext_catalog(path, kind).metadata.get("Language", "").strip()


def gettext_pairs(catalog, skipped: Skipped) -> Iterator[Pair]:
    if catalog.metadata:  # polib takes the header entry out, into the metadata
        skip(skipped, "header")
    for entry in catalog:
        why = gettext_skip(entry)
        if why:
            skip(skipped, why)
            continue
        forms = plural_forms(entry)
        yield entry.msgid, forms[0]
        if entry.msgid_plural and len(forms) > 1:
            yield entry.msgid_plural, forms[1]


def gettext_skip(entry) -> str | None:
    """Why an entry is no pair, or None."""
    if entry.obsolete:
        return "obsolete"
    if getattr(entry, "fuzzy", False):  # an MO file keeps no flags (msgfmt leaves fuzzy out)
        return "fuzzy"
    if not entry.msgid:  # a header entry polib did not take as the catalog's (a second one)
        return "header"
    forms = plural_forms(entry)
    return "untranslated" if not forms or not all(forms) else None


def plural_forms(entry) -> list[str]:
    if entry.msgid_plural:
        return [entry.msgstr_plural[n] for n in sorted(entry.msgstr_plural, key=int)]
    return [entry.msgstr]


# XML: XLIFF and TMX, through defusedxml.


def local(tag: str) -> str:
    """An element's name without its namespace: {urn:...xliff:document:1.2}source -> source."""
    return tag.rpartition("}")[2]


def children(element: Element, name: str) -> list[Element]:
    return [child for child in element if local(child.tag) == name]


def child(element: Element, name: str) -> Element | None:
    found = children(element, name)
    return found[0] if found else None


def inline(element: Element | None, code: Code) -> str:
    """An element's text, each inline element in it replaced by code(element, its inner text)."""
    if element is None:
        return ""
    parts = [element.text or ""]
    for inner in element:
        parts += [code(inner, inline(inner, code)), inner.tail or ""]
    return "".join(parts)


def xml_error(path: Path, error: Exception) -> CorpusError:
    """A one-line error naming the file, and the line where the parser knows it."""
    if isinstance(error, ParseError):
        line, column = error.position
        reason = re.sub(r": line \d+, column \d+$", "", str(error))
        return CorpusError(f"{path}, line {line}, column {column}: not well-formed XML ({reason})")
    return CorpusError(
        f"{path}: refused: it declares an XML entity or refers to an external one "
        f"({type(error).__name__}), which can expand without bound or read other files"
    )


def xml_events(path: Path) -> Iterator[tuple[str, Element]]:
    """The ("start" | "end", element) events of an XML file, read as it goes, with its errors
    as one line."""
    etree = needs("defusedxml.ElementTree", path)
    from defusedxml import DefusedXmlException

    try:
        yield from etree.iterparse(str(path), events=("start", "end"))
    except (ParseError, DefusedXmlException) as error:
        raise xml_error(path, error) from None


def xml_root(path: Path, name: str) -> Element:
    """The whole tree of a (small) XML file whose root element is `name`."""
    events = xml_events(path)
    _, root = next(events, ("", Element("")))
    if local(root.tag) != name:
        raise CorpusError(f"{path}: not a {name} file (its root element is <{local(root.tag)}>)")
    for _ in events:  # to its end
        pass
    return root


def check_languages(path: Path, declared: tuple[str | None, str | None], languages) -> None:
    for side, code, wanted in zip(("source", "target"), declared, languages, strict=True):
        if code and not same_language(code, wanted):
            key = "src_lang" if side == "source" else "tgt_lang"
            raise CorpusError(
                f"{path}: its {side} language is {code}, the pair's is {wanted} (corpus.{key})"
            )


def pair_or_skip(source: str, target: str, why: str | None, skipped: Skipped) -> Iterator[Pair]:
    why = why or (None if target.strip() else "untranslated")
    if why:
        skip(skipped, why)
    else:
        yield source, target


def read_xliff(path: Path, languages: tuple[str, str], skipped: Skipped) -> Iterator[Pair]:
    root = xml_root(path, "xliff")
    version = root.get("version", "")
    if version.startswith("1."):
        return xliff1_pairs(path, root, languages, skipped)
    if version.startswith("2."):
        return xliff2_pairs(path, root, languages, skipped)
    raise CorpusError(f"{path}: XLIFF version {version!r}; versions 1.x and 2.x are read")


def xliff1_pairs(path: Path, root: Element, languages, skipped: Skipped) -> Iterator[Pair]:
    for file in children(root, "file"):
        declared = (file.get("source-language"), file.get("target-language"))
        check_languages(path, declared, languages)
        for unit in file.iter():
            if local(unit.tag) == "trans-unit":
                target = child(unit, "target")
                state = target.get("state", "") if target is not None else ""
                why = "fuzzy" if state in FUZZY_STATES else None
                why = "untranslated" if state in UNTRANSLATED_STATES else why
                source = inline(child(unit, "source"), xliff1_code)
                yield from pair_or_skip(source, inline(target, xliff1_code), why, skipped)


def xliff1_code(element: Element, inner: str) -> str:
    """XLIFF 1.2: <x/>, <bx/>, <ex/> stand for code they do not hold: their equiv-text, if any;
    <ph>, <bpt>, <ept>, <it> hold it (inner); <g>, <mrk> hold text (inner)."""
    if local(element.tag) in ("x", "bx", "ex"):
        return element.get("equiv-text", "")
    return inner


def xliff2_pairs(path: Path, root: Element, languages, skipped: Skipped) -> Iterator[Pair]:
    check_languages(path, (root.get("srcLang"), root.get("trgLang")), languages)
    for unit in root.iter():
        if local(unit.tag) != "unit":
            continue
        code = xliff2_code(unit)
        for segment in children(unit, "segment"):
            target = child(segment, "target")
            why = "fuzzy" if segment.get("state") == "initial" else None
            source = inline(child(segment, "source"), code)
            yield from pair_or_skip(source, inline(target, code), why, skipped)


def xliff2_code(unit: Element) -> Code:
    """XLIFF 2: <ph/>, <sc/>, <ec/> and <pc>'s ends stand for the code in the unit's
    <originalData> (by dataRef), else their equiv; <sm/>, <em/> mark nothing to keep; <cp/> is a
    character; <pc>, <mrk> hold text (inner)."""

    def original(element: Element, ref: str, equiv: str) -> str:
        return data.get(element.get(ref), element.get(equiv, ""))

    def code(element: Element, inner: str) -> str:
        name = local(element.tag)
        if name in ("ph", "sc", "ec"):
            return original(element, "dataRef", "equiv")
        if name == "pc":
            start = original(element, "dataRefStart", "equivStart")
            return start + inner + original(element, "dataRefEnd", "equivEnd")
        if name == "cp":
            return code_point(element.get("hex", ""))
        return "" if name in ("sm", "em") else inner

    data = {e.get("id"): inline(e, code) for e in unit.iter() if local(e.tag) == "data"}
    return code


def code_point(hex_digits: str) -> str:
    try:
        return chr(int(hex_digits, 16))
    except ValueError:
        return "\ufffd"


def read_tmx(path: Path, languages: tuple[str, str], skipped: Skipped) -> Iterator[Pair]:
    """A TMX file's units, read as it goes (a translation memory may be large)."""
    events = xml_events(path)
    _, root = next(events, ("", Element("")))
    if local(root.tag) != "tmx":
        raise CorpusError(f"{path}: not a tmx file (its root element is <{local(root.tag)}>)")
    for event, element in events:
        if event == "end" and local(element.tag) == "tu":
            source, target = (variant_text(element, language) for language in languages)
            why = None if source.strip() else "untranslated"
            yield from pair_or_skip(source, target, why, skipped)
            element.clear()


def variant_text(unit: Element, language: str) -> str:
    """A TMX unit's text in a language (xml:lang, or TMX 1.1's lang): the exact code's
    variant, else the first that matches; every inline element's content kept."""
    variants = [(v.get(XML_LANG) or v.get("lang") or "", v) for v in children(unit, "tuv")]
    close = [(code, v) for code, v in variants if code and same_language(code, language)]
    exact = [v for code, v in close if code.replace("_", "-").lower() == language.lower()]
    chosen = (exact or [v for _, v in close] or [None])[0]
    return inline(child(chosen, "seg"), lambda element, inner: inner) if chosen is not None else ""


Reader = Callable[[Path, tuple[str, str], Skipped], Iterable[Pair]]
FORMATS: dict[str, Reader] = {
    ".po": read_po,
    ".mo": read_mo,
    ".xlf": read_xliff,
    ".xliff": read_xliff,
    ".tmx": read_tmx,
}
SUFFIXES = tuple(FORMATS)
