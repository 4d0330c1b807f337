"""Documents that are zip files of XML: Word and PowerPoint (Office Open XML), OpenDocument
text and presentations, EPUB. Their texts out and translations back (formats.py's Document),
every other byte of the file as it was: styles, pictures, tables, links, numbering.

    the zip (at most MOST_MEMBERS files, unpacked to UNZIPPED_PER_BYTE times its size at most,
      and MOST_UNZIPPED bytes: a zip bomb is refused as it unpacks, whatever its headers say)
      -> its members with text (Zipped.members: a .docx's body, headers, footers and notes;
         a .pptx's slides and notes; content.xml and styles.xml; an EPUB's pages and toc.ncx),
         each parsed by lxml (no entities resolved, no DTD, no network)
      -> each paragraph's texts, each of one formatting:
           .docx .pptx  consecutive runs (<w:r>, <a:r>) of the same properties (bold, font,
                        ...; their language and proofing marks aside), with nothing between
                        them but bookmarks and proofing marks: Word splits a sentence into
                        runs for its own reasons; a tab, a break, a field or a picture ends one
           .odt .odp    a paragraph's (<text:p>, <text:h>) own text, each span's and link's:
                        each its own; spaces (<text:s/>) inside one
           .epub        each page's text nodes (markup.py), as an .html file's
    rebuilt: each group's translation in its first text, in the white space around the
      group's; its other texts emptied; each member written back in its order with its own
      compression (an EPUB's and OpenDocument's mimetype first and stored, as they must be)

lxml is the optional extra `files`: pip install 'seq2seq[files]' (the service's extra has it).
"""

import dataclasses
import importlib
import io
import itertools
import re
import zipfile
from collections.abc import Callable, Iterator
from copy import deepcopy
from functools import partial

from seq2seq.documents.formats import BadDocument, Document, TooLarge, html_file, in_place
from seq2seq.support.errors import UserError

MOST_MEMBERS = 10_000  # files in one zip
UNZIPPED_PER_BYTE = 50  # unpacked bytes a zipped byte, at most (text XML packs 5 to 15 times)
MOST_UNZIPPED = 200 * 2**20  # unpacked bytes, at most, whatever the zip's size

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"  # .docx
A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"  # .pptx's text
TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"  # .odt, .odp
XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"

Slot = tuple  # (element, "text" | "tail"): where a piece of text is; (element, None): spaces


def etree():
    """lxml's etree, or a one-line error naming the extra that installs it."""
    try:
        return importlib.import_module("lxml.etree")
    except ImportError:
        raise UserError("documents of XML need lxml: pip install 'seq2seq[files]'") from None


def unzipped(data: bytes) -> list[tuple[zipfile.ZipInfo, bytes]]:
    """The zip's members and their bytes, within the limits above (TooLarge)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        raise BadDocument("not a zip file, as this format is") from None
    if len(infos) > MOST_MEMBERS:
        raise TooLarge(f"a zip of {len(infos):,} files; the limit is {MOST_MEMBERS:,}")
    room = min(MOST_UNZIPPED, max(UNZIPPED_PER_BYTE * len(data), 2**20))
    members = []
    for info in infos:
        try:
            with archive.open(info) as member:
                raw = member.read(room + 1)  # what it unpacks to, not what its header says
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as error:
            raise BadDocument(f"{info.filename} does not unpack: {error}") from None
        room -= len(raw)
        if room < 0:
            raise TooLarge(f"it unpacks to more than {UNZIPPED_PER_BYTE} times its size or "
                           f"{MOST_UNZIPPED // 2**20} MiB (a zip bomb?)")  # fmt: skip
        members.append((info, raw))
    return members


def parsed(raw: bytes, name: str):
    """A member's XML tree (no entities resolved: no billion laughs; no DTD, no network)."""
    lxml = etree()
    parser = lxml.XMLParser(resolve_entities=False, load_dtd=False, no_network=True)
    try:
        return lxml.fromstring(raw, parser).getroottree()
    except lxml.XMLSyntaxError as error:
        raise BadDocument(f"{name} is not XML: {error}") from None


def run_groups(root, ns: str, between: frozenset[str]) -> Iterator[list[Slot]]:
    """Office Open XML: each paragraph's texts (<t>) in groups of consecutive runs of the same
    properties, with only `between` elements (local names) between them."""
    paragraph_tag, text_tag = ns + "p", ns + "t"
    formats: dict = {}  # each run's looks(), worked out once
    for paragraph in root.iter(paragraph_tag):
        group, last = [], None
        for text in paragraph.iter(text_tag):
            if next(text.iterancestors(paragraph_tag)) is not paragraph:
                continue  # a text box's paragraph, inside this one: its own
            if group and not joined(last, text, ns, between, formats):
                yield group
                group = []
            group.append((text, "text"))
            last = text
        if group:
            yield group


def joined(a, b, ns: str, between: frozenset[str], formats: dict) -> bool:
    """Whether the texts a and b (in that order, in one paragraph) read as one: in runs of
    the same properties, with nothing between them but `between` elements. `formats`: each
    run's looks() so far."""
    run_a, run_b = a.getparent(), b.getparent()
    if run_a.tag != ns + "r" or run_b.tag != ns + "r":
        return False
    for run in (run_a, run_b):
        if run not in formats:
            formats[run] = looks(run, ns)
    if formats[run_a] != formats[run_b]:
        return False
    if run_a is run_b:
        return b.getprevious() is a  # a tab or a break between them ends the group
    if a.getnext() is not None or b.getprevious() is not run_b.find(ns + "rPr"):
        return False
    if run_a.getparent() is not run_b.getparent():  # one in a link: different formatting
        return False
    sibling = run_a.getnext()
    while sibling is not run_b:
        if sibling is None or local(sibling.tag) not in between:
            return False
        sibling = sibling.getnext()
    return True


PROOFING = {"lang", "noProof", "dirty", "err", "smtClean"}  # marks, not formatting


def looks(run, ns: str) -> bytes:
    """A run's properties (<rPr>) as bytes, less its language and proofing marks."""
    properties = run.find(ns + "rPr")
    if properties is None:
        return b""
    copy = deepcopy(properties)
    for child in list(copy):
        if local(child.tag) in PROOFING:
            copy.remove(child)
    for name in [name for name in copy.attrib if local(name) in PROOFING]:
        del copy.attrib[name]
    return etree().tostring(copy)


def local(tag) -> str:
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""  # a comment's is not a str


ODF_PARAGRAPHS = (TEXT + "p", TEXT + "h")
ODF_INLINE = {TEXT + "span", TEXT + "a"}  # text of its own formatting, or a link
ODF_SPACES = TEXT + "s"
ODF_INVISIBLE = {TEXT + name for name in ("soft-page-break", "bookmark", "bookmark-start",
                                          "bookmark-end", "reference-mark")}  # fmt: skip


def mixed_groups(root) -> Iterator[list[Slot]]:
    """OpenDocument: each paragraph's own text, and each span's and link's, a group; spaces
    (<text:s/>) and invisible marks inside one; anything else (a tab, a line break, a note,
    a frame) ends one."""
    for paragraph in root.iter(*ODF_PARAGRAPHS):
        groups: list[list[Slot]] = [[]]
        walk(paragraph, groups)
        yield from (group for group in groups if group)


def walk(element, groups: list[list[Slot]]) -> None:
    """The slots of `element`'s content added to groups[-1], a new group begun where the
    formatting changes (see mixed_groups)."""
    groups[-1].append((element, "text"))
    for child in element:
        if child.tag == ODF_SPACES or child.tag in ODF_INVISIBLE:
            groups[-1].append((child, None))
        else:
            groups.append([])
            if child.tag in ODF_INLINE:
                walk(child, groups)
                groups.append([])
        groups[-1].append((child, "tail"))


def slot_text(slot: Slot) -> str:
    element, where = slot
    if where is None:
        return " " * int(element.get(TEXT + "c", "1")) if element.tag == ODF_SPACES else ""
    return getattr(element, where) or ""


def put(group: list[Slot], whole: str, translation: str) -> None:
    """The group's translation in its first text, in the white space around `whole`, its
    text; its other texts emptied, its spaces elements removed."""
    first = next(slot for slot in group if slot[1] is not None)
    for element, where in group:
        if (element, where) == first:
            setattr(element, where, in_place(whole, translation))
            if element.tag == W + "t":
                element.set(XML_SPACE, "preserve")
        elif where is not None:
            setattr(element, where, "")
    for element, where in group:
        if where is None and element.tag == ODF_SPACES and first[0] is not element:
            element.getparent().remove(element)  # its tail, emptied above, with it


def xml_part(raw: bytes, name: str, groups_of: Callable) -> Document:
    """A member of XML: its groups' texts, and the member rebuilt with their translations."""
    tree = parsed(raw, name)
    groups = [(g, "".join(map(slot_text, g))) for g in groups_of(tree.getroot())]
    groups = [(group, whole) for group, whole in groups if whole.strip()]

    def build(translations: Iterator[str]) -> bytes:
        for (group, whole), translation in zip(groups, translations, strict=True):
            put(group, whole, translation)
        standalone = tree.docinfo.standalone
        return etree().tostring(tree, xml_declaration=True, encoding="UTF-8",
                                standalone=standalone)  # fmt: skip

    return Document([whole.strip() for _, whole in groups], build)


@dataclasses.dataclass(frozen=True)
class Zipped:
    """A format that is a zip of XML: the member every such file has, the members with text,
    and how to read one."""

    kind: str  # for errors: "a .docx"
    required: str
    members: str  # a regular expression of their names
    part: Callable[[bytes, str], Document]

    def __call__(self, data: bytes) -> Document:
        members = unzipped(data)
        if self.required not in {info.filename for info, _ in members}:
            raise BadDocument(f"no {self.required} in the zip, as {self.kind} has")
        parts = [
            self.part(raw, info.filename) if re.fullmatch(self.members, info.filename) else None
            for info, raw in members
        ]

        def build(translations: Iterator[str]) -> bytes:
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w") as archive:
                for (info, raw), part in zip(members, parts, strict=True):
                    if part is not None:
                        raw = part.build(itertools.islice(translations, len(part.pieces)))
                    archive.writestr(info, raw)  # its name, date and compression
            return out.getvalue()

        return Document([piece for part in parts if part for piece in part.pieces], build)


DOCX_BETWEEN = frozenset({"proofErr", "bookmarkStart", "bookmarkEnd", "commentRangeStart",
                          "commentRangeEnd", "permStart", "permEnd"})  # fmt: skip
OPENDOCUMENT = partial(xml_part, groups_of=mixed_groups)
FORMATS = {
    ".docx": Zipped(
        "a .docx", "word/document.xml",
        r"word/(document|header\d*|footer\d*|footnotes|endnotes)\.xml",
        partial(xml_part, groups_of=partial(run_groups, ns=W, between=DOCX_BETWEEN)),
    ),
    ".pptx": Zipped(
        "a .pptx", "ppt/presentation.xml", r"ppt/(slides/slide|notesSlides/notesSlide)\d+\.xml",
        partial(xml_part, groups_of=partial(run_groups, ns=A, between=frozenset())),
    ),
    ".odt": Zipped("an .odt", "content.xml", r"content\.xml|styles\.xml", OPENDOCUMENT),
    ".odp": Zipped("an .odp", "content.xml", r"content\.xml|styles\.xml", OPENDOCUMENT),
    ".epub": Zipped("an .epub", "META-INF/container.xml", r".*\.(xhtml|html|htm|ncx)", html_file),
}  # fmt: skip
