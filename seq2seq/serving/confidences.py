"""How sure the service is of each sentence it answers (decoding/confidence.py: a calibrated
chance, 0 to 1, that the translation is acceptable), and what a request's bound withholds.

    a hop's job (batcher.py), decoded by an engine -> its sentences' signals, and the
      calibration of that engine (Job.calibration) -> hop_confidences: each sentence's
      chance (None: the model has no calibration; a glossary's sentence: SURE whatever)
    a pivot's hops -> times: the product of each hop's (the chance that both are
      acceptable, were their mistakes independent); None if a hop's is not known
    a text's sentences (core.py) -> Sentences: the source's (its split), their translations
      and confidences; Sentences.confidence, the text's: their mean weighted by their
      lengths (combined)
    a request's min_confidence and withheld_as, else serve.min_confidence (api.py's
      withholding_field) -> Withholding -> withheld(sentences, bound): the numbers of the
      sentences below the bound, which core.py's withhold gives back as their source (or
      empty: Sentences.given) and lists; one whose confidence is not known is never withheld

The memory's answers, and a text already in the target language, are SURE; a sentence the
engines gave back untranslated (placeholders.bare) is 0.
"""

import math
from collections.abc import Sequence
from typing import NamedTuple

from seq2seq.decoding.confidence import Calibration, text_confidence
from seq2seq.text.sentences import Split

INSTEAD = ("source", "empty")  # what a withheld sentence is given back as


class Withholding(NamedTuple):
    """What a request's answer withholds: each sentence whose confidence is below `least`
    (0: none), given back as its source or empty (`instead`, one of INSTEAD)."""

    least: float = 0.0
    instead: str = "source"


class Sentences(NamedTuple):
    """A text's sentences as the service translated them: the source's (its split: the
    sentences and the white space between them), each one's translation (the best) and its
    confidence (None: not known)."""

    split: Split
    lines: list[str]
    sure: list[float | None]

    @classmethod
    def whole(cls, text: str, translation: str, sure: float | None) -> "Sentences":
        """A text answered whole, as one sentence (the memory's answer, a fuzzy repair)."""
        return cls(Split([text], []), [translation], [sure])

    @property
    def confidence(self) -> float | None:
        """The text's, from its sentences' (combined)."""
        return combined(self.sure, self.split.sentences)

    def given(self, withheld: Sequence[int], instead: str) -> "Sentences":
        """These sentences with those numbered `withheld` given back as their source, or
        empty (`instead`)."""
        lines = list(self.lines)
        for number in withheld:
            lines[number] = self.split.sentences[number] if instead == "source" else ""
        return self._replace(lines=lines)

    @property
    def text(self) -> str:
        """The text's translation: its sentences' in the source's white space."""
        return self.split.join(self.lines)


def combined(confidences: Sequence[float | None], texts: Sequence[str]) -> float | None:
    """A text's confidence from its sentences' (or its parts': LibreTranslate's text nodes),
    `texts` theirs: their mean weighted by their lengths (text_confidence; none: SURE);
    None if one is not known."""
    return None if None in confidences else text_confidence(confidences, texts)


def hop_confidences(calibration: Calibration | None, signals: list[list[float]]) -> list:
    """Each text's confidence in a hop's answer, its texts a sentence each (core.py): its
    engine's `calibration` of the sentence's signal; without one, None (an infinite signal,
    a glossary's sentence or one given back untranslated: 1 or 0 all the same)."""
    return [hop_confidence(calibration, signal) for (signal,) in signals]


def hop_confidence(calibration: Calibration | None, signal: float) -> float | None:
    """One sentence's (hop_confidences)."""
    if calibration is not None:
        return calibration.probability(signal)
    return float(signal > 0) if math.isinf(signal) else None


def times(before: float | None, hop: float | None) -> float | None:
    """A pivoted sentence's confidence so far, with one more hop's: their product."""
    return None if before is None or hop is None else before * hop


def withheld(sentences: Sentences, bound: Withholding) -> list[int]:
    """The numbers (from 0) of the sentences below the bound (none where it is 0, nor any
    whose confidence is not known)."""
    return [
        number for number, sure in enumerate(sentences.sure)
        if bound.least and sure is not None and sure < bound.least
    ]  # fmt: skip


def rounded(sure: float | None) -> float | None:
    """A confidence as the answers give it: 4 decimals."""
    return None if sure is None else round(sure, 4)
