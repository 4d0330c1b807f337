"""Scores of translations against references, all on detokenized text.

* exact_match: share of sentences translated exactly right (0..1), the number that matters
  for the numbers corpus (which adds it by digit count: seq2seq/corpora/numbers.py);
* token_accuracy: share of whitespace-separated token positions that agree, counted over the
  longer of hypothesis and reference, so missing and extra tokens both cost;
* BLEU and chrF from sacreBLEU, with their signatures, so figures are comparable; and BLEU on
  lowercased text, the variant most published Multi30k results use.
"""

from sacrebleu.metrics import BLEU, CHRF


def exact_match(hypotheses: list[str], references: list[str]) -> float:
    return sum(h == r for h, r in zip(hypotheses, references, strict=True)) / len(references)


def token_accuracy(hypotheses: list[str], references: list[str]) -> float:
    correct = total = 0
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        hyp, ref = hypothesis.split(), reference.split()
        correct += sum(h == r for h, r in zip(hyp, ref, strict=False))  # up to the shorter
        total += max(len(hyp), len(ref))
    return correct / total if total else 1.0


def sacrebleu_scores(hypotheses: list[str], references: list[str]) -> dict:
    """sacreBLEU's standard BLEU (cased, 13a tokenizer) and chrF, and BLEU on lowercased text,
    which is closer to how most published Multi30k figures were computed (lowercased,
    tokenized text); each with the signature that says exactly how."""
    bleu, bleu_lowercase, chrf = BLEU(), BLEU(lowercase=True), CHRF()
    return {
        "bleu": bleu.corpus_score(hypotheses, [references]).score,
        "bleu_signature": str(bleu.get_signature()),
        "bleu_lowercase": bleu_lowercase.corpus_score(hypotheses, [references]).score,
        "bleu_lowercase_signature": str(bleu_lowercase.get_signature()),
        "chrf": chrf.corpus_score(hypotheses, [references]).score,
        "chrf_signature": str(chrf.get_signature()),
    }


def score(hypotheses: list[str], references: list[str]) -> dict:
    """Every metric of this module (a corpus type adds its own: seq2seq/corpora/corpus_types.py)."""
    return {
        "exact_match": exact_match(hypotheses, references),
        "token_accuracy": token_accuracy(hypotheses, references),
        **sacrebleu_scores(hypotheses, references),
        "n_sentences": len(references),
    }
