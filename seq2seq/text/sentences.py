"""Texts of several sentences: each split into its sentences, all of them translated in one
batch, and each text's translations joined back in the text's own spacing (translate and the
service: seq2seq/translate.py, seq2seq/service/).

    texts  ["Drei ist drei.  Zwei ist zwei!\\nEins.", "Vier."]
      -> split(text, language): the text's lines (a line break always ends a sentence), each
         line's sentences by sentencex's rules for the language: rules, no model, nothing to
         download; a language it has no rules for falls back to a related one's, or English;
         mended where they would cut a placeholder ("%.*s") or leave punctuation alone ("...")
      -> Texts.sentences  ["Drei ist drei.", "Zwei ist zwei!", "Eins.", "Vier."]
         ... translated, one batch: ["3 la 3.", "2 la 2!", "1.", "4."] ...
      -> Texts.joined     ["3 la 3.  2 la 2!\\n1.", "4."]: each text's translations, with
         the white space that stood between its sentences (line breaks included)

A text of one sentence is that sentence whole, white space and all, so its translation is
what it was without splitting: a line of the numbers corpus is one sentence. In a text of
several, the text's own leading and trailing white space goes to the model with its first
and last sentence (which drops it, as it always did).
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass

import sentencex

from seq2seq.text.placeholders import find

LINE = re.compile(r"[^\r\n]+")  # a line, up to a line break: \n, \r\n or \r
WORD = re.compile(r"\w")


@dataclass(frozen=True)
class Split:
    """One text as its sentences and the white space between them: gaps[i] comes after
    sentences[i]."""

    sentences: list[str]
    gaps: list[str]

    def join(self, translations: list[str]) -> str:
        """The text's translation: its sentences' translations, in order, in its gaps."""
        parts = [translations[0]]
        for gap, translation in zip(self.gaps, translations[1:], strict=True):
            parts += [gap, translation]
        return "".join(parts)


def split(text: str, language: str) -> Split:
    """`text` as its sentences, by the rules of `language` (a code: en, de, ...)."""
    spans = list(sentence_spans(text, language))
    if len(spans) < 2:
        return Split([text], [])
    starts = [0] + [start for start, _ in spans[1:]]  # the first from the text's start,
    ends = [end for _, end in spans[:-1]] + [len(text)]  # the last to its end
    sentences = [text[start:end] for start, end in zip(starts, ends, strict=True)]
    gaps = [text[end:start] for (_, end), (start, _) in zip(spans[:-1], spans[1:], strict=True)]
    return Split(sentences, gaps)


def sentence_spans(text: str, language: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each sentence of `text`, without the white space around it."""
    for line in LINE.finditer(text):
        yield from mended(list(line_spans(text, line, language)), text)


def line_spans(text: str, line: re.Match, language: str) -> Iterator[tuple[int, int]]:
    """(start, end) in `text` of each sentence sentencex finds in one of its lines."""
    position = line.start()
    for piece in sentencex.segment(language, line.group()):
        if sentence := piece.strip():
            start = text.index(sentence, position)
            position = start + len(sentence)
            yield start, position


def mended(spans: list, text: str) -> list[tuple[int, int]]:
    """The spans of one line with each cut that falls inside a placeable ("from %.*s":
    sentencex cuts after "%.") joined again, and each span without a word ("...Sorry!") joined
    to the next (the last to the one before): a sentence never splits a placeholder or is
    punctuation. A line of one sentence is not searched."""
    if len(spans) < 2:
        return spans
    first = spans[0][0]
    placeables = [(p.start + first, p.end + first) for p in find(text[first : spans[-1][1]])]
    out: list[tuple[int, int]] = []
    for start, end in spans:
        cut = out and any(a < start and b > out[-1][1] for a, b in placeables)
        if cut or (out and not WORD.search(text[out[-1][0] : out[-1][1]])):
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    if len(out) > 1 and not WORD.search(text[out[-1][0] : out[-1][1]]):
        out[-2:] = [(out[-2][0], out[-1][1])]
    return out


class Texts:
    """Texts as one list of their sentences, to translate in one batch, and what comes back
    for those sentences regrouped text by text."""

    def __init__(self, texts: list[str], language: str | None = None):
        """`language`: the code whose rules split them (None: each text whole, as one)."""
        self.hold(
            [Split([text], []) if language is None else split(text, language) for text in texts]
        )

    def hold(self, splits: list[Split]) -> None:
        self.splits = splits
        self.sentences = [sentence for one in splits for sentence in one.sentences]

    @classmethod
    def together(cls, parts: list["Texts"]) -> "Texts":
        """The texts of several lists as one list, in order (to translate them in one batch)."""
        joined = cls([])
        joined.hold([one for part in parts for one in part.splits])
        return joined

    def __len__(self) -> int:
        """How many texts."""
        return len(self.splits)

    def per_text(self, values: list) -> Iterator[tuple[Split, list]]:
        """A list of one value per sentence -> each text, with its sentences' values."""
        start = 0
        for one in self.splits:
            end = start + len(one.sentences)
            yield one, values[start:end]
            start = end

    def joined(self, translations: list[str]) -> list[str]:
        """A translation per sentence -> a translation per text."""
        return [one.join(share) for one, share in self.per_text(translations)]

    def grouped(self, values: list) -> list[list]:
        """A value per sentence -> each text's list of its sentences'."""
        return [share for _, share in self.per_text(values)]

    def warnings(self, warnings: list[list[str]]) -> list[list[str]]:
        """Each sentence's warnings -> each text's, its sentences' in order."""
        return [[w for sentence in share for w in sentence] for _, share in self.per_text(warnings)]

    def nbest(self, nbest: list[list[tuple[float, str]]]) -> list[list[tuple[float, str]]]:
        """Each sentence's n best (score, translation), best first -> each text's: the Nth of
        each of its sentences joined, with the sum of their scores; as many as its sentence
        with the fewest has."""
        return [
            [
                (sum(score for score, _ in nth), one.join([text for _, text in nth]))
                for nth in zip(*share, strict=False)  # as many as the fewest
            ]
            for one, share in self.per_text(nbest)
        ]
