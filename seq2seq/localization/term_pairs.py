"""Teaching a model to follow glossaries (train.terms): term pairs drawn from the training
pairs themselves, written into a share of their sources as terms.py writes a glossary's.

    train.src, train.tgt (data/<corpus>/: `make data`'s), their words casefolded
      -> Dice of each source word and target word that meet in a pair (cooccurrence.py)
      -> lexicon: a source word (in MIN_PAIRS pairs at least, in at most FREQUENT of them: not
         "the") -> the target word it scores best with, where it is that word's best too and
         scores MIN_DICE at least, in the target's commonest form: "layer" -> "Ebene"
      -> Teaching.written(chunk): each pair whose reference has the lexicon's target of one
         of its source words (an inflected form counted: terms.used), with probability
         train.terms, gets up to MOST of them written in: "the layers [[ Ebene ]] are red"
         against the reference "die Ebenen sind rot": the model learns to put the term in
         its sentence, inflected; SWAPPED of them with another term's target, in the
         reference too ("the dog [[ Katze ]] runs" -> "die Katze läuft"): the model learns
         to follow the note, not what it knows

The annotations live in the token ids alone (dataset.py: the train split's ids are made from
the annotated pairs, and its stamp says with which settings); the text files stay as they
are, so validation and the scores read plain sentences.
"""

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from seq2seq.localization.cooccurrence import dice_scores
from seq2seq.localization.terms import Term, annotated, cased, inflected, used
from seq2seq.support.paths import text_files
from seq2seq.text.parallel import iter_parallel

MIN_PAIRS = 5
FREQUENT = 0.1  # of the pairs: a word in more is a function word ("the"), never a term
MIN_DICE = 0.3
MOST = 2  # terms written into one source
# of the terms written in: their target swapped for another term's, in the source and the
# reference alike ("the dog [[ Katze ]]" -> "die Katze"): only copying the note gets these
# right, so the model learns to follow a glossary and not its own knowledge alone
SWAPPED = 0.5
WORD = re.compile(r"[^\W\d_]{3,}")  # a word that can be a term: 3 letters or more


def words(text: str) -> list[str]:
    return [word.casefold() for word in WORD.findall(text)]


def lexicon(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """The term pairs of `pairs` (the module's rules): source word -> target word."""
    ids = [{}, {}]  # word -> id, each side
    forms: Counter = Counter()  # target words as written
    coded = []
    for src, tgt in pairs:
        forms.update(WORD.findall(tgt))
        coded.append(tuple([ids[side].setdefault(w, len(ids[side])) for w in words(text)]
                           for side, text in enumerate((src, tgt))))  # fmt: skip
    s, t, dice, tgt_counts = dice_scores(coded, len(ids[0]), len(ids[1]))
    src_counts = Counter(i for src, _ in coded for i in set(src))
    frequent = FREQUENT * len(pairs)
    fit = [
        MIN_PAIRS <= src_counts[a] <= frequent and MIN_PAIRS <= tgt_counts[b] <= frequent
        for a, b in zip(s.tolist(), t.tolist(), strict=True)
    ]
    best_target, best_source = {}, {}
    for a, b, score in zip(s[fit].tolist(), t[fit].tolist(), dice[fit].tolist(), strict=True):
        if score >= best_target.get(a, (0.0, -1))[0]:
            best_target[a] = (score, b)
        if score >= best_source.get(b, (0.0, -1))[0]:
            best_source[b] = (score, a)
    src_words, tgt_words = (list(side) for side in ids)
    written = {}
    for form, _ in forms.most_common():
        written.setdefault(form.casefold(), form)
    return {
        src_words[a]: written[tgt_words[b]]
        for a, (score, b) in best_target.items()
        if score >= MIN_DICE and best_source[b][1] == a
    }


def terms_in(src: str, tgt: str, pairs: dict[str, str]) -> list[Term]:
    """The terms of `pairs` in the source `src` whose target its reference `tgt` has."""
    found = []
    for match in WORD.finditer(src):
        target = pairs.get(match.group().casefold())
        if target and used(tgt, target):
            found.append(Term(match.group(), cased(target, match.group()), *match.span(), False))
    return found


def swapped_in(tgt: str, term: Term, other: str) -> str | None:
    """The reference `tgt` with the word that is `term`'s target (an inflected form of it)
    replaced by `other`, cased as that word; None if no word of it is."""
    for match in re.finditer(r"\w+", tgt):
        if inflected(match.group().casefold(), term.target):
            return tgt[: match.start()] + cased(other, match.group()) + tgt[match.end() :]
    return None


@dataclass
class Teaching:
    """train.terms for the training split of `data_dir`: `annotated` writes terms into chunks
    of its pairs, in order, the same way each time (`seed`)."""

    data_dir: Path
    share: float
    seed: int
    annotated: int = 0  # pairs annotated so far
    pairs: dict[str, str] = field(default_factory=dict)  # the lexicon, made at first use

    @property
    def stamp(self) -> dict:
        """What the annotated ids were made with (dataset.py keeps it in ids.json)."""
        return {"share": self.share, "seed": self.seed, "most": MOST, "min_dice": MIN_DICE,
                "swapped": SWAPPED}  # fmt: skip

    def start(self) -> None:
        """The lexicon of the training pairs, and a fresh random stream."""
        self.pairs = lexicon(list(iter_parallel(*text_files(self.data_dir, "train"))))
        targets = sorted(set(self.pairs.values()))  # by kind: German nouns are capitalised
        self.targets = {kind: [t for t in targets if t[0].isupper() == kind] for kind in (0, 1)}
        self.random, self.annotated = random.Random(self.seed), 0

    def written(self, chunk: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """`chunk`'s pairs, a share of those with terms written in (the module's rules)."""
        result = []
        for src, tgt in chunk:
            terms = terms_in(src, tgt, self.pairs)
            if terms and self.random.random() < self.share:
                chosen = self.random.sample(terms, min(MOST, len(terms)))
                src, tgt = self.with_terms(src, tgt, sorted(chosen, key=lambda t: t.start))
                self.annotated += 1
            result.append((src, tgt))
        return result

    def with_terms(self, src: str, tgt: str, terms: list[Term]) -> tuple[str, str]:
        """The pair with `terms` written into its source, each, at SWAPPED odds, swapped for
        another term's target of its kind (a noun for a noun) in the source and the
        reference alike."""
        given = []
        for term in terms:
            other = self.random.choice(self.targets[term.target[0].isupper()])
            swapped = swapped_in(tgt, term, other) if self.random.random() < SWAPPED else None
            if swapped is not None:
                tgt, term = swapped, term._replace(target=cased(other, term.text))
            given.append(term)
        return annotated(src, given)[0], tgt
