"""How sure a translation is: a number from 0 to 1, the estimated chance that it is acceptable,
read from the model that made it (no second model).

    each sentence's translation -> its signal: the mean log-probability a piece of the output,
      (engines.Translations.signals)  EOS counted, as the search scored it (beam.per_piece):
                                      free on every engine (torch, CTranslate2, Argos)
    signal -> Calibration           -> confidence = sigmoid(slope * signal + intercept)
                                      fitted on the model's validation set at each validation
                                      (training, import, improvement), kept in the checkpoint
                                      (info "confidence"), the exports and a package's metadata
    a text's sentences' confidences -> the text's: their mean weighted by each sentence's
                                      length (text_confidence)

"Acceptable" is a sentence chrF (sacrebleu's, 0-100) of at least ACCEPTABLE_CHRF against the
reference. A confidence is a probability fitted on the model's own validation set: on text
like that set it means what it says (a confidence of 0.8: about 8 in 10 such translations
reach the bound); on other text it still orders translations from the least sure to the
surest, and the calibration error there is measured, not promised (docs/confidence.md).
Answers from the translation memory, and sentences whose every word is a glossary term, are
SURE.
"""

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from seq2seq.support.errors import UserError
from seq2seq.support.paths import CONFIDENCE

ACCEPTABLE_CHRF = 50.0  # a sentence chrF at or above it: acceptable (docs/confidence.md: why)
SURE = 1.0  # the confidence of the memory's answers
SURE_SIGNAL = math.inf  # a sentence whose every word is a glossary term: its confidence is 1
UNTRANSLATED_SIGNAL = -math.inf  # a sentence given back untranslated: its confidence is 0
SIGNAL = "mean_log_prob"  # the one signal kept (docs/confidence.md: the others measured)


@dataclass(frozen=True)
class Calibration:
    """A logistic map from a model's signal to the chance its translation is acceptable."""

    slope: float
    intercept: float
    bound: float = ACCEPTABLE_CHRF  # the sentence chrF that is acceptable
    sentences: int = 0  # how many it was fitted on
    acceptable: float = 0.0  # the share of those that were
    beam_size: int = 1  # the search that translated them (a calibration holds for its own)
    signal: str = SIGNAL

    def probability(self, signal: float) -> float:
        """A signal (mean log-probability a piece) -> its confidence, 0 to 1 (SURE_SIGNAL: 1,
        UNTRANSLATED_SIGNAL: 0)."""
        if math.isinf(signal):
            return float(signal > 0)
        z = self.slope * signal + self.intercept
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def read(cls, saved: dict | None, where: str = "checkpoint info") -> "Calibration | None":
        """A calibration saved by to_dict (None: the model has none)."""
        if saved is None:
            return None
        try:
            calibration = cls(**saved)
            numbers = (calibration.slope, calibration.intercept, calibration.bound)
            if not all(isinstance(n, int | float) and math.isfinite(n) for n in numbers):
                raise TypeError("slope, intercept and bound must be finite numbers")
        except TypeError as error:
            raise UserError(f"{where}: its confidence calibration is not valid ({error})") from None
        if calibration.signal != SIGNAL:
            raise UserError(f"{where}: a confidence of signal {calibration.signal!r}, not {SIGNAL}")
        return calibration

    @classmethod
    def load(cls, folder: Path) -> "Calibration | None":
        """An export's (exports/ctranslate2.py: export_calibration; None: it has none)."""
        path = folder / CONFIDENCE
        return cls.read(json.loads(path.read_text()), str(path)) if path.exists() else None


def confidence_of(calibration: Calibration, signals: Sequence[float], sentences: Sequence[str]):
    """A text's confidence from its sentences' signals (translate_texts' Translated.signals)
    and the sentences themselves (Texts.splits)."""
    return text_confidence([calibration.probability(s) for s in signals], sentences)


def calibration_of(engine) -> Calibration:
    """The engine's calibration, or a one-line error saying how a model gets one."""
    if engine.calibration is None:
        raise UserError(NOT_CALIBRATED)
    return engine.calibration


NOT_CALIBRATED = (
    "the model has no confidence calibration (a model trained, imported or improved before "
    "confidences were, or a package from elsewhere): `python -m seq2seq.evaluate --calibrate "
    "--checkpoint PATH` fits one on its config's validation set"
)


def fit(
    signals: Sequence[float], chrfs: Sequence[float], beam_size: int = 1,
    bound: float = ACCEPTABLE_CHRF,
) -> Calibration:  # fmt: skip
    """The Calibration of `signals` (of translations by a search of `beam_size`) against
    whether their sentence chrF (`chrfs`) reaches `bound`: a logistic regression (Newton's
    method on the standardised signal, a little ridge so that a set without overlap still
    has a finite slope)."""
    points = [(s, c >= bound) for s, c in zip(signals, chrfs, strict=True) if math.isfinite(s)]
    n = len(points)
    share = sum(good for _, good in points) / n if n else 0.0
    mean = sum(s for s, _ in points) / n if n else 0.0
    spread = math.sqrt(sum((s - mean) ** 2 for s, _ in points) / n) if n else 0.0
    if spread == 0 or share in (0.0, 1.0):  # nothing to tell apart: the share, for all
        rate = min(max(share, 0.01), 0.99)
        return Calibration(0.0, math.log(rate / (1 - rate)), bound, n, share, beam_size)
    xs = [(s - mean) / spread for s, _ in points]
    ys = [float(good) for _, good in points]
    a, b, ridge = 0.0, 0.0, 1e-3 * n
    for _ in range(50):
        ps = [1 / (1 + math.exp(-(a * x + b))) for x in xs]
        ga = sum((p - y) * x for p, y, x in zip(ps, ys, xs, strict=True)) + ridge * a
        gb = sum(p - y for p, y in zip(ps, ys, strict=True))
        ws = [p * (1 - p) for p in ps]
        haa = sum(w * x * x for w, x in zip(ws, xs, strict=True)) + ridge
        hab = sum(w * x for w, x in zip(ws, xs, strict=True))
        hbb = sum(ws)
        det = haa * hbb - hab * hab
        da, db = (hbb * ga - hab * gb) / det, (haa * gb - hab * ga) / det
        a, b = a - da, b - db
        if abs(da) + abs(db) < 1e-9:
            break
    return Calibration(a / spread, b - a * mean / spread, bound, n, share, beam_size)


def text_confidence(confidences: Sequence[float], sentences: Sequence[str]) -> float:
    """A text's confidence from its sentences': their mean weighted by each sentence's length
    in characters (at least 1), which orders texts by their chrF better than the lowest does
    and is nearer calibrated (docs/confidence.md); SURE if it has none."""
    weights = [max(len(sentence), 1) for sentence in sentences]
    if not weights:
        return SURE
    return sum(c * w for c, w in zip(confidences, weights, strict=True)) / sum(weights)


def sentence_chrfs(hypotheses: Sequence[str], references: Sequence[str]) -> list[float]:
    """Each hypothesis's sentence chrF against its reference (sacrebleu's, 0-100)."""
    from sacrebleu.metrics import CHRF

    chrf = CHRF()
    return [chrf.sentence_score(h, [r]).score for h, r in zip(hypotheses, references, strict=True)]


def ranks(values: Sequence[float]) -> list[float]:
    """Each value's rank, 1 to n, ties given their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            result[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return result


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Pearson's correlation (0 where either side does not vary)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    cov = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    vx, vy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
    return cov / math.sqrt(vx * vy) if vx and vy else 0.0


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Spearman's correlation: Pearson's of the ranks."""
    return pearson(ranks(xs), ranks(ys))


def auroc(confidences: Sequence[float], good: Sequence[bool]) -> float:
    """The area under the ROC curve of telling the bad translations from the good by their
    confidence: the chance that a good one is surer than a bad one (ties count half)."""
    rank = ranks(confidences)
    positives = sum(good)
    negatives = len(good) - positives
    if not positives or not negatives:
        return math.nan
    total = sum(r for r, g in zip(rank, good, strict=True) if g)
    return (total - positives * (positives + 1) / 2) / (positives * negatives)


def calibration_error(confidences: Sequence[float], good: Sequence[bool], bins: int = 10):
    """Expected calibration error: over `bins` equal-width bins of confidence, the gap between
    the mean confidence and the share acceptable, weighted by the bin's size."""
    total = 0.0
    for k in range(bins):
        inside = [
            (c, g) for c, g in zip(confidences, good, strict=True)
            if k / bins <= c < (k + 1) / bins or (k == bins - 1 and c == 1.0)
        ]  # fmt: skip
        if inside:
            mean = sum(c for c, _ in inside) / len(inside)
            share = sum(g for _, g in inside) / len(inside)
            total += abs(mean - share) * len(inside)
    return total / len(confidences) if confidences else 0.0


def measured(confidences: Sequence[float], chrfs: Sequence[float], bound: float) -> dict:
    """How well `confidences` tell the translations' sentence chrF: Pearson and Spearman,
    ROC AUC for those below `bound`, expected calibration error, and the mean chrF of the
    share kept when the least sure 10/20/50% are withheld (against all)."""
    good = [c >= bound for c in chrfs]
    order = sorted(range(len(chrfs)), key=lambda i: confidences[i])
    kept = {}
    for share in (10, 20, 50):
        rest = order[len(order) * share // 100 :]
        kept[f"chrf_kept_withholding_{share}"] = sum(chrfs[i] for i in rest) / max(len(rest), 1)
    return {
        "sentences": len(chrfs),
        "chrf_bound": bound,
        "acceptable": sum(good) / max(len(good), 1),
        "mean_confidence": sum(confidences) / max(len(confidences), 1),
        "pearson": pearson(confidences, chrfs),
        "spearman": spearman(confidences, chrfs),
        "auroc": auroc(confidences, good),
        "calibration_error": calibration_error(confidences, good),
        "chrf_all": sum(chrfs) / max(len(chrfs), 1),
        **kept,
    }
