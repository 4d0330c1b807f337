"""A translation's confidence (seq2seq/decoding/confidence.py): the measures against scipy's and
scikit-learn's, the logistic fit against scikit-learn's, and the signals of what no model
decided (a glossary's whole terms, a sentence given back untranslated)."""

import math
import random

import pytest
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from seq2seq.decoding.confidence import (
    SURE_SIGNAL,
    UNTRANSLATED_SIGNAL,
    Calibration,
    auroc,
    calibration_error,
    confidence_of,
    fit,
    measured,
    pearson,
    sentence_chrfs,
    spearman,
    text_confidence,
)
from seq2seq.support.errors import UserError


def noisy(n: int, seed: int) -> tuple[list[float], list[float]]:
    """Signals (mean log-probabilities, rounded: ties) and chrFs that follow them loosely."""
    rng = random.Random(seed)
    signals = [round(-rng.expovariate(1.5), 1) for _ in range(n)]
    chrfs = [min(100.0, max(0.0, 70 + 25 * s + rng.gauss(0, 15))) for s in signals]
    return signals, chrfs


@pytest.mark.parametrize("seed", range(3))
def test_the_correlations_and_the_roc_area_are_scipys_and_scikit_learns(seed):
    signals, chrfs = noisy(300, seed)
    assert pearson(signals, chrfs) == pytest.approx(stats.pearsonr(signals, chrfs)[0])
    assert spearman(signals, chrfs) == pytest.approx(stats.spearmanr(signals, chrfs)[0])
    good = [c >= 50 for c in chrfs]
    assert auroc(signals, good) == pytest.approx(roc_auc_score(good, signals))
    assert math.isnan(auroc(signals, [True] * len(signals)))


@pytest.mark.parametrize("seed", range(3))
def test_the_fit_is_scikit_learns_logistic_regression(seed):
    signals, chrfs = noisy(500, seed)
    calibration = fit(signals, chrfs)
    good = [c >= calibration.bound for c in chrfs]
    # ours: Newton's method on the standardised signal, a ridge of 1e-3 a sentence on its slope
    mean, spread = sum(signals) / 500, stats.tstd(signals) * math.sqrt(499 / 500)
    standard = [[(s - mean) / spread] for s in signals]
    theirs = LogisticRegression(C=1 / (1e-3 * 500), tol=1e-10).fit(standard, good)
    slope, intercept = theirs.coef_[0][0], theirs.intercept_[0]
    assert calibration.slope == pytest.approx(slope / spread, rel=1e-4)
    assert calibration.intercept == pytest.approx(intercept - slope * mean / spread, rel=1e-4)
    assert calibration.sentences == 500 and calibration.acceptable == sum(good) / 500
    probabilities = [calibration.probability(s) for s in sorted(signals)]
    assert probabilities == sorted(probabilities) and 0 < probabilities[0] < probabilities[-1] < 1
    # fitted on itself, a logistic fit is calibrated: its mean is the share acceptable
    assert sum(map(calibration.probability, signals)) / 500 == pytest.approx(sum(good) / 500)


def test_a_set_all_good_or_all_bad_gives_its_share_to_all():
    assert fit([-0.1, -0.5, -2.0], [90, 80, 70]).probability(-9.0) == pytest.approx(0.99)
    assert fit([-0.1, -0.5], [10, 20]).probability(0.0) == pytest.approx(0.01)
    assert fit([], []).sentences == 0


def test_what_no_model_decided_is_sure_or_unsure_whatever_the_fit():
    for calibration in (Calibration(2.0, 1.0), Calibration(0.0, 4.6)):
        assert calibration.probability(SURE_SIGNAL) == 1.0
        assert calibration.probability(UNTRANSLATED_SIGNAL) == 0.0
    calibration = Calibration(2.0, 1.0)
    signals, sentences = [-0.5, UNTRANSLATED_SIGNAL, SURE_SIGNAL], ["Ja.", "Nein?", "Ok"]
    # weighted by length: 3 x 0.5 (sigmoid(0)) + 5 x 0 + 2 x 1, over 10 characters
    assert confidence_of(calibration, signals, sentences) == pytest.approx(0.35)
    assert text_confidence([0.2, 0.8], ["", "x"]) == pytest.approx(0.5)  # at least 1 each
    assert confidence_of(calibration, [], []) == 1.0  # an empty text


def test_calibration_error_is_the_weighted_gap_of_each_bin():
    # bin 0.8-0.9: mean 0.85, 1 of 2 good (gap 0.35); bin 0.1-0.2: mean 0.1, 0 of 2 good (0.1)
    confidences, good = [0.82, 0.88, 0.1, 0.1], [True, False, False, False]
    assert calibration_error(confidences, good) == pytest.approx((0.35 * 2 + 0.1 * 2) / 4)
    assert calibration_error([1.0, 0.0], [True, False]) == 0.0


def test_withholding_the_least_sure_keeps_the_better_translations():
    chrfs = [float(c) for c in range(10, 110, 10)]  # 10 ... 100
    figures = measured([c / 100 for c in chrfs], chrfs, 50.0)
    assert figures["chrf_all"] == 55.0 and figures["chrf_kept_withholding_20"] == 65.0
    assert figures["chrf_kept_withholding_50"] == 80.0 and figures["auroc"] == 1.0
    assert figures["spearman"] == pytest.approx(1.0) and figures["acceptable"] == 0.6


def test_sentence_chrf_is_sacrebleus():
    assert sentence_chrfs(["ein Hund läuft", "x"], ["ein Hund läuft", "ein Hund"]) == [
        pytest.approx(100.0),
        pytest.approx(0.0),
    ]


@pytest.mark.parametrize(
    "saved, named",
    [
        ({"slope": 1.0}, "intercept"),
        ({"slope": "x", "intercept": 0.0}, "finite numbers"),
        ({"slope": 1.0, "intercept": 0.0, "signal": "agreement"}, "'agreement'"),
    ],
)
def test_a_broken_calibration_is_refused_naming_where(saved, named):
    with pytest.raises(UserError, match=f"metadata.json: .*{named}"):
        Calibration.read(saved, "metadata.json")


def test_a_calibration_reads_back_as_it_was_saved():
    calibration = fit(*noisy(100, 0))
    assert Calibration.read(calibration.to_dict()) == calibration
    assert Calibration.read(None) is None
