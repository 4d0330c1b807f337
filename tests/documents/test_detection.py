"""Language detection (seq2seq/documents/detection.py) on held-out Multi30k sentences, whole and
cut to their first words; what it cannot tell apart is a one-line error.
benchmarks/results/detection.md sets it beside LibreTranslate's own detector."""

import gzip

import pytest

from seq2seq.documents.detection import Detector
from seq2seq.support.errors import UserError

from helpers import ROOT

pytest.importorskip("lingua", reason="language detection is an optional extra: .[detect]")
CORPUS = ROOT.parent / "shared/corpora/multi30k"


def held_out(language: str) -> list[str]:
    with gzip.open(CORPUS / f"test_2016_flickr.{language}.gz", "rt", encoding="utf-8") as lines:
        return [line.strip() for line in lines][:300]


@pytest.mark.skipif(not CORPUS.exists(), reason="needs ../shared/corpora/multi30k")
def test_whole_sentences_and_single_words_are_told_apart():
    """Every whole sentence, and nearly every first word alone ("A", "Ein", "Two", "Zwei"),
    of 300 held-out sentences a language."""
    detector = Detector(["de", "en-GB"])
    for language, code in (("de", "de"), ("en", "en-GB")):
        sentences = held_out(language)
        assert [detector.detect(s)[0][0] for s in sentences] == [code] * len(sentences)
        words = [s.split()[0] for s in sentences]
        right = sum(detector.detect(word)[0][0] == code for word in words)
        assert right >= 0.95 * len(words), (language, right)
    ranked = detector.detect("Zwei Hunde spielen im Schnee.")
    assert [code for code, _ in ranked] == ["de", "en-GB"]
    assert ranked[0][1] > 90 > ranked[1][1]


def test_a_language_the_detectors_do_not_know_is_one_line():
    with pytest.raises(UserError, match="language detection does not know digits"):
        Detector(["en", "digits"])
