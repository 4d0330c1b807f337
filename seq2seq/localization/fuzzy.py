"""Fuzzy matches: the texts of a translation memory most like a new one, as a translator's
tool finds them, by an index of words and then an edit distance over words.

    words("Could not open '%s'.")          -> ["could", "not", "open", "s"]
    query(words, rarest)                   -> '"open" OR "could" ...': FTS5's MATCH of the
                                              index (suggestions.py's memory_words), its
                                              candidates ranked by bm25, the rarest words first
    similarity(a_words, b_words)           -> 1 - (word edits) / (longer's words), in [0, 1]:
                                              1.0 the same words, 0.8 one word in five changed

A match counts from serve.memory_fuzzy (e.g. 0.75: at most a quarter of the words changed):
below that, a translator's tools (OmegaT, Trados) show no match either.
"""

import difflib
import re

WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """A text's words, lower case, as FTS5's unicode61 tokenizer splits them (near enough:
    it also folds diacritics, which only widens the candidates)."""
    return WORD.findall(text.lower())


def query(candidates: list[str]) -> str:
    """FTS5's MATCH expression for texts holding any of these words (each quoted: a word may
    be one of FTS5's keywords, AND, OR, NOT, NEAR)."""
    return " OR ".join(f'"{word}"' for word in dict.fromkeys(candidates))


def similarity(a: list[str], b: list[str]) -> float:
    """1 - the word-level Levenshtein distance between a and b / the longer's length."""
    if not a and not b:
        return 1.0
    previous = list(range(len(b) + 1))
    for i, word in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word != other))
            )
        previous = current
    return 1 - previous[-1] / max(len(a), len(b))


def repaired(before: str, corrected: str, now: str) -> str | None:
    """A fuzzy match's correction carried over to a new text, as a three-way merge of words:
    `before` the model's translation of the match's text, `corrected` the user's correction
    of it, `now` the model's translation of the new text. The user's edits (before ->
    corrected) and what the new text changed (before -> now) are both applied where they touch
    different words; where both change the same words differently: None (the model's `now`
    is the answer). Words: runs of non-space, joined by one space."""
    base, ours, theirs = before.split(), corrected.split(), now.split()
    changes = sorted(set(edits(base, ours) + edits(base, theirs)))  # one made twice: once
    for number, (start, end, _) in enumerate(changes):
        for other in changes[number + 1 :]:
            if other[0] < end or start == end == other[0] == other[1]:  # the same words
                return None
    merged, at = [], 0
    for start, end, words in changes:
        merged += base[at:start] + list(words)
        at = end
    return " ".join(merged + base[at:])


def edits(base: list[str], other: list[str]) -> list[tuple[int, int, tuple[str, ...]]]:
    """What turns base into other: (start, end, words) for each of base's spans replaced."""
    matcher = difflib.SequenceMatcher(None, base, other, autojunk=False)
    changed = (op for op in matcher.get_opcodes() if op[0] != "equal")
    return [(i1, i2, tuple(other[j1:j2])) for _, i1, i2, j1, j2 in changed]
