"""make bench-confidence's own parts (benchmarks/adapt/confidence.py); the figures themselves need
the stand-in (make standin) and its fine-tune (make bench-adapt), and run as make
bench-confidence."""

import pytest

from benchmarks.adapt import confidence
from seq2seq.decoding.confidence import Calibration


def decoded(outputs: list[str], references: list[str], means: list[float]) -> confidence.Decoded:
    """A set decoded alike greedy and beam 4, each string's n best its output and one other."""
    ways = {way: list(outputs) for way in confidence.SIGNALS}
    return confidence.Decoded(
        sources=[f"source of {reference}" for reference in references],
        references=references,
        outputs=ways,
        means={way: list(means) for way in ways},
        pieces={way: [len(o.split()) for o in outputs] for way in ways},
        nbest=[[o, o.upper()] for o in outputs],
        seconds=0.0,
    )


def test_the_sum_counts_the_end_of_the_sentence_as_the_mean_does():
    assert confidence.summed([-0.5, -1.0], [3, 0]) == [-2.0, -1.0]


def test_agreement_is_the_best_against_the_others():
    assert confidence.agreement("ein Hund", []) == 100.0  # nothing to disagree with
    assert confidence.agreement("ein Hund", ["ein Hund", "ein Hund"]) == pytest.approx(100.0)
    assert confidence.agreement("ein Hund", ["ein Hund", "xyz"]) == pytest.approx(50.0)


def test_each_signal_is_measured_and_texts_pair_consecutive_strings():
    outputs = ["ein Hund läuft", "eine Katze", "Datei öffnen", "xyz"]
    references = ["ein Hund läuft", "eine Katze schläft", "Datei öffnen", "Fenster schließen"]
    d = decoded(outputs, references, [-0.1, -0.4, -0.2, -2.5])
    rows, kept = confidence.judged(d, d)
    assert [(r["translations"], r["signal"]) for r in rows] == [
        (way, signal) for way, signals in confidence.SIGNALS.items() for signal in signals
    ]
    first = rows[0]
    assert first["sentences"] == 4 and first["acceptable"] == 0.75
    assert first["spearman"] > 0.5 and first["auroc"] == 1.0  # the worst is the least sure
    assert set(kept) == set(confidence.SIGNALS)
    texts = confidence.text_level(d, Calibration(2.0, 1.0))
    assert texts["texts"] == 2  # (0, 1) and (2, 3)
    assert texts["lowest"]["mean_confidence"] < texts["weighted mean"]["mean_confidence"]
