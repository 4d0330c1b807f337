"""Terms: a glossary's entries (source term -> target term) followed in translations.

    terms {"layer": "Ebene", "GitHub": "GitHub"}, a sentence "Layers on GitHub"
      -> found(sentence, terms): each entry where it stands, whole words, the longest first
         ("layer" also as "Layer", "LAYER" and "layers": an entry in lower case matches any
         case, an English plural -s/-es too; "GitHub" as written or in capitals)
           Term("Layers", "Ebene", 0, 6, False)  Term("GitHub", "GitHub", 10, 16, True)
      -> do-not-translate (target == source): a placeable (placeholders.py), so the source's
         own text comes back verbatim, exactly once
      -> the others, by decode.terms:
           annotate  "Layers [[ Ebene ]] on GitHub": the target term written after the source
                     term, as a model taught terms reads it (train.terms, term_pairs.py); it
                     puts the term in its sentence, inflected ("Ebenen")
           mask      a placeable given back as the target term, cased as the source's
                     ("Ebene"): any model, no inflection
         auto: annotate for a model taught terms, else mask; a sentence whose annotated
         translation lacks a term is translated again with the terms masked (translate_texts)
    used(output, target): whether the output has the term, an inflected form counted
      (INFLECTION: German "Ebenen" for "Ebene"); term_use(...) the share over sentences

Annotation is text: a package exported from a taught model follows terms wherever it is given
the annotated text (LibreTranslate included), which `annotated` writes.
"""

import functools
import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from seq2seq.text.placeholders import Placeable, Protected, find, protect

OPEN, CLOSE = "[[", "]]"  # around a target term written into the source
PLURAL = r"(?:e?s)?"  # an English plural after a source term
# the endings a target term's stem is taken without, and the letters an inflected form may add
ENDINGS = ("en", "er", "es", "e", "n", "s")
INFLECTION = 3


class Term(NamedTuple):
    """An entry where it stands in a sentence: `text` is the sentence's own, `target` the
    glossary's, cased as the text is."""

    text: str
    target: str
    start: int
    end: int
    verbatim: bool  # a do-not-translate entry (its target is its source): kept as it is


class Compiled(NamedTuple):
    pattern: re.Pattern
    by_key: dict[str, list[tuple[str, str]]]  # casefolded source -> its (source, target)s


@functools.lru_cache(maxsize=64)
def compiled(entries: tuple[tuple[str, str], ...]) -> Compiled:
    """One regex for every source term of `entries`, the longest first."""
    by_key: dict[str, list[tuple[str, str]]] = {}
    for source, target in entries:
        by_key.setdefault(source.casefold(), []).append((source, target))
    alternatives = "|".join(map(re.escape, sorted(by_key, key=len, reverse=True)))
    pattern = re.compile(rf"(?<!\w)(?P<term>{alternatives})(?P<plural>{PLURAL})(?!\w)", re.I)
    return Compiled(pattern, by_key)


def found(sentence: str, terms: Mapping[str, str]) -> list[Term]:
    """The entries of `terms` in `sentence`, in order, none overlapping (the module's rules)."""
    return found_in([sentence], terms)[0]


def found_in(sentences: list[str], terms: Mapping[str, str]) -> list[list[Term]]:
    """`found` for each of `sentences`, the glossary's regex looked up once."""
    if not terms:
        return [[] for _ in sentences]
    glossary = compiled(tuple(terms.items()))
    return [terms_of(sentence, glossary) for sentence in sentences]


def terms_of(sentence: str, glossary: Compiled) -> list[Term]:
    result = []
    for match in glossary.pattern.finditer(sentence):
        written = match.group("term")
        candidates = glossary.by_key[written.casefold()]
        entry = next((e for e in candidates if matches(written, e[0])), None)
        if entry is None:
            continue
        source, target = entry
        text, span = match.group(), match.span()
        if source == target:  # do-not-translate: the source's own text, plural and all
            result.append(Term(text, text, *span, verbatim=True))
        else:
            result.append(Term(text, cased(target, written), *span, verbatim=False))
    return result


def matches(written: str, source: str) -> bool:
    """Whether `written` is `source` in a case it allows: as written, in capitals, or any
    case for a source in lower case."""
    return written in (source, source.upper()) or source == source.lower()


def cased(target: str, written: str) -> str:
    """`target` in the case the source term was written in: capitals for capitals (of more
    than one letter), a capital first letter for one."""
    if len(written) > 1 and written.isupper():
        return target.upper()
    if written[:1].isupper():
        return target[:1].upper() + target[1:]
    return target


def annotated(sentence: str, terms: list[Term]) -> tuple[str, list[Term]]:
    """`sentence` with each term that is not verbatim followed by its target, as a model
    taught terms reads it ("the layer [[ Ebene ]] is red"), and the verbatim terms where
    they stand in it."""
    parts, kept, done, shift = [], [], 0, 0
    for term in terms:
        if term.verbatim:
            kept.append(term._replace(start=term.start + shift, end=term.end + shift))
            continue
        note = f" {OPEN} {term.target} {CLOSE}"
        parts += [sentence[done : term.end], note]
        done, shift = term.end, shift + len(note)
    return "".join([*parts, sentence[done:]]), kept


def stem(word: str) -> str:
    """A target word without the first of ENDINGS it has, if a stem of 4 letters is left."""
    folded = word.casefold()
    for ending in ENDINGS:
        if folded.endswith(ending) and len(folded) - len(ending) >= 4:
            return folded[: -len(ending)]
    return folded


def used(output: str, target: str) -> bool:
    """Whether `output` has `target`: each of its words, in order, as a word of the output
    that starts with its stem and adds at most INFLECTION letters ("Ebenen" for "Ebene",
    "Benutzern" for "Benutzer"); a term that is not a word (a name with marks: "C++"), as it
    is written."""
    wanted = re.findall(r"\w+", target)
    if not wanted or "".join(wanted) != re.sub(r"\s+", "", target):
        return target in output
    words = iter(w.casefold() for w in re.findall(r"\w+", output))
    return all(any(inflected(word, one) for word in words) for one in wanted)


def inflected(word: str, term_word: str) -> bool:
    base = stem(term_word)
    return word.startswith(base) and len(word) - len(base) <= INFLECTION


class TermUse(NamedTuple):
    """Of the target terms a glossary put in sentences, how many their outputs used."""

    used: int
    terms: int


def term_use(outputs: Iterable[str], sentence_terms: Iterable[list[Term]]) -> TermUse:
    """Over outputs and each one's source's terms: how many target terms are used (`used`;
    a verbatim one only as it is written)."""
    hits = total = 0
    for output, terms in zip(outputs, sentence_terms, strict=True):
        for term in terms:
            total += 1
            hits += term.target in output if term.verbatim else used(output, term.target)
    return TermUse(hits, total)


def shielded(
    sentence: str, terms: list[Term], mask: str | None, placeholders: bool, annotate: bool
) -> Protected:
    """`sentence` as the model gets it, with its `terms`: annotated (`annotate`) or masked
    and given back as their targets, the verbatim ones kept as placeables either way, with
    its own placeables if `placeholders` (placeholders.py)."""
    if annotate:
        sentence, terms = annotated(sentence, terms)
    given = [Placeable(t.target, "term", t.start, t.end) for t in terms]
    own = find(sentence) if placeholders else []
    clear = [g for g in given if not any(p.start < g.end and g.start < p.end for p in own)]
    return protect(sentence, mask, sorted(own + clear, key=lambda p: p.start))
