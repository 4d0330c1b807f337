"""HTML in, HTML out: the text of an HTML fragment to translate, and the translations put back
(LibreTranslate's `format: html`, seq2seq/service/libretranslate.py).

    '<p title="a > b">seven is seven <!-- x --> <b>&amp; two</b></p><script>s()</script>'
      Python's HTML parser (html.parser) -> where each text node starts and ends
        text nodes: "seven is seven ", " ", "&amp; two"; not tags, attribute values,
        comments, declarations, nor the content of <script> and <style>, of an element
        marked translate="no" (HTML's own attribute), or of one of the `ignored` tags asked
        (DeepL's ignore_tags)
      -> texts(): those not blank, unescaped, stripped: ["seven is seven", "& two"]
      -> put_back(fragment, translations): each replaced by its translation (escaped), in the
         same white space; every other character of the fragment as it was

Markup is kept byte for byte, entities in it included (`<b>&nbsp;</b>` stays so); a text
node is translated as a text (split into its sentences: seq2seq/text/sentences.py), so a
sentence split by a tag (`seven <b>is</b> seven`) is translated in pieces, as LibreTranslate's
own HTML handling does.
"""

import html
import re
from collections.abc import Iterator
from html.parser import HTMLParser

RAW_TEXT = {"script", "style"}  # elements whose content is code, not text


class TextNodes(HTMLParser):
    """The text nodes of a fragment, as (start, end) character offsets into it."""

    def __init__(self, fragment: str, ignored: tuple[str, ...] = ()):
        super().__init__(convert_charrefs=True)  # an entity is part of its text node
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", fragment)]
        self.starts: list[tuple[int, bool]] = []  # every construct's offset; True: text
        self.ignored = RAW_TEXT | {tag.lower() for tag in ignored}
        self.kept: list[str] = []  # the open elements whose content is kept as it is
        self.feed(fragment)
        self.close()
        ends = [start for start, _ in self.starts[1:]] + [len(fragment)] * bool(self.starts)
        pairs = zip(self.starts, ends, strict=True)
        self.spans = merged((s, e) for (s, text), e in pairs if text and s < e)

    def here(self, text: bool = False) -> None:
        line, column = self.getpos()
        self.starts.append((self.line_starts[line - 1] + column, text))

    def handle_data(self, data: str) -> None:
        self.here(text=not self.kept)

    def handle_starttag(self, tag: str, attrs) -> None:
        """A kept element opens (or, inside one, another of its name: its end is not the
        kept one's)."""
        self.here()
        no = any(name == "translate" and (value or "").lower() == "no" for name, value in attrs)
        if tag in self.ignored or no or self.kept and tag == self.kept[-1]:
            self.kept.append(tag)

    def handle_endtag(self, tag: str) -> None:
        self.here()
        if self.kept and tag == self.kept[-1]:
            self.kept.pop()

    def handle_startendtag(self, tag: str, attrs) -> None:
        self.here()

    def handle_comment(self, data: str) -> None:
        self.here()

    def handle_decl(self, decl: str) -> None:
        self.here()

    def handle_pi(self, data: str) -> None:
        self.here()

    def unknown_decl(self, data: str) -> None:
        self.here()


def merged(spans: Iterator[tuple[int, int]]) -> list[tuple[int, int]]:
    """Adjacent spans as one (the parser may hand one text node over in pieces)."""
    result: list[tuple[int, int]] = []
    for start, end in spans:
        if result and result[-1][1] == start:
            result[-1] = (result[-1][0], end)
        else:
            result.append((start, end))
    return result


def texts(fragment: str, ignored: tuple[str, ...] = ()) -> list[str]:
    """The text nodes of `fragment` that are not blank, unescaped and stripped (none inside
    an `ignored` element)."""
    nodes = (html.unescape(fragment[s:e]) for s, e in TextNodes(fragment, ignored).spans)
    return [node.strip() for node in nodes if node.strip()]


def put_back(fragment: str, translations: Iterator[str], ignored: tuple[str, ...] = ()) -> str:
    """`fragment` with each text node that is not blank (texts()'s, of the same `ignored`)
    replaced by the next translation (escaped), in the node's own leading and trailing white
    space; the rest as it was."""
    parts, done = [], 0
    for start, end in TextNodes(fragment, ignored).spans:
        node = fragment[start:end]
        if html.unescape(node).strip():
            lead, trail = re.match(r"(\s*).*?(\s*)$", node, re.DOTALL).groups()
            node = lead + html.escape(next(translations), quote=False) + trail
        parts += [fragment[done:start], node]
        done = end
    return "".join([*parts, fragment[done:]])
