"""A document's texts out and their translations back (a Document), and the formats of plain
text: the zip files of XML are office.py's; reading.py picks one by a file's name.

    .txt    each line that is not blank, in the file's own line endings
    .html   each text node (markup.py), the markup byte for byte
    .srt    each subtitle's text (its lines as one), its number and times as they were

    Document.texts   what to translate: each text once, stripped (a heading repeated on every
                     page is translated once); blank ones are not
    Document.rebuilt(translations) -> the translated file's bytes, each text's translation
                     in its place, in the white space that stood around it
"""

import re
import textwrap
from collections.abc import Callable, Iterator

from seq2seq.documents import markup
from seq2seq.support.errors import UserError


class BadDocument(UserError):
    """A file that cannot be translated: not a format listed, or not what its name says."""


class TooLarge(BadDocument):
    """A document with more text, or a zip that unpacks to more, than the limits allow."""


class Document:
    """A file's texts to translate (`texts`), and the file rebuilt with their translations.

    `pieces` are the file's texts in order (a text may repeat), each stripped; `build` makes
    the file from one translation a piece, in the same order."""

    def __init__(self, pieces: list[str], build: Callable[[Iterator[str]], bytes]):
        self.pieces, self.build = pieces, build
        self.texts = list(dict.fromkeys(pieces))  # each once, in order

    @property
    def chars(self) -> int:
        return sum(map(len, self.pieces))

    def rebuilt(self, translations: list[str]) -> bytes:
        """The file with each text replaced by its translation (one for each of `texts`)."""
        if len(translations) != len(self.texts):
            raise ValueError(f"{len(translations)} translations for {len(self.texts)} texts")
        by_text = dict(zip(self.texts, translations, strict=True))
        return self.build(by_text[piece] for piece in self.pieces)


def utf8(data: bytes, what: str) -> str:
    """A text file's bytes as text; a BadDocument if they are not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadDocument(f"not UTF-8 text ({what}): byte {error.start + 1} is not") from None


def in_place(text: str, translation: str) -> str:
    """`translation` in the white space that stood around `text`."""
    lead, trail = re.match(r"(\s*).*?(\s*)$", text, re.DOTALL).groups()
    return lead + translation + trail


def plain_text(data: bytes) -> Document:
    """.txt: each line that is not blank, its line ending kept."""
    lines = utf8(data, ".txt").splitlines(keepends=True)
    chosen = [n for n, line in enumerate(lines) if line.strip()]

    def build(translations: Iterator[str]) -> bytes:
        out = list(lines)
        for n, translation in zip(chosen, translations, strict=True):
            out[n] = in_place(lines[n], translation)
        return "".join(out).encode("utf-8")

    return Document([lines[n].strip() for n in chosen], build)


def html_file(data: bytes, what: str = ".html") -> Document:
    """.html (or an EPUB's page, `what`): its text nodes (markup.py), entities unescaped; the
    markup as it was."""
    page = utf8(data, what)
    return Document(markup.texts(page), lambda t: markup.put_back(page, t).encode("utf-8"))


SUBTITLE = re.compile(r"^\d+[ \t]*\n[^\n]*-->[^\n]*\n(.*?)(?=\n[ \t]*(?:\n|\Z)|\Z)", re.S | re.M)
SUBTITLE_WIDTH = 42  # characters a subtitle's line, at most, as most players and guides take


def subtitles(data: bytes) -> Document:
    """.srt: each subtitle's text, its lines joined with spaces; its translation wrapped again
    in lines of SUBTITLE_WIDTH characters (or its longest line's, if longer)."""
    original = utf8(data, ".srt")
    srt, newline = original.replace("\r\n", "\n"), "\r\n" if "\r\n" in original else "\n"
    found = [match for match in SUBTITLE.finditer(srt) if match[1].strip()]
    if srt.strip() and not found:
        raise BadDocument("no subtitles in it (each a number, a line 'start --> end', its text)")

    def build(translations: Iterator[str]) -> bytes:
        out, done = [], 0
        for match, translation in zip(found, translations, strict=True):
            width = max(SUBTITLE_WIDTH, *map(len, match[1].splitlines()))
            out += [srt[done : match.start(1)], textwrap.fill(translation, width)]
            done = match.end(1)
        return "".join([*out, srt[done:]]).replace("\n", newline).encode("utf-8")

    return Document([" ".join(match[1].split()) for match in found], build)


FORMATS = {".txt": plain_text, ".html": html_file, ".htm": html_file, ".srt": subtitles}
