"""Metrics: exact match, token accuracy, sacreBLEU."""

import pytest
import sacrebleu

from seq2seq.training.metrics import score, token_accuracy


def test_token_accuracy_counts_missing_and_extra_tokens():
    assert token_accuracy(["1 2 la 3"], ["1 2 la 3"]) == 1.0
    assert token_accuracy(["1 2 la"], ["1 2 la 3"]) == 0.75  # one missing
    assert token_accuracy(["1 2 la 3 4"], ["1 2 la 3"]) == 0.8  # one extra
    assert token_accuracy(["9 2 la 3"], ["1 2 la 3"]) == 0.75


def test_scores_match_sacrebleu_and_exact_match():
    hyps = ["the cat sat on the mat", "a dog runs", "1 2 la 3"]
    refs = ["the cat sat on a mat", "a dog runs", "1 2 la 3"]
    result = score(hyps, refs)
    assert result["exact_match"] == 2 / 3
    assert result["n_sentences"] == 3
    assert abs(result["bleu"] - sacrebleu.corpus_bleu(hyps, [refs]).score) < 1e-9
    assert abs(result["chrf"] - sacrebleu.corpus_chrf(hyps, [refs]).score) < 1e-9
    assert result["bleu_signature"].startswith("nrefs:1|case:mixed")


def test_lowercased_bleu_ignores_case_only():
    result = score(["A Dog runs fast ."], ["a dog runs fast ."])
    assert result["bleu"] < 100 and result["bleu_lowercase"] == pytest.approx(100)
    assert "case:lc" in result["bleu_lowercase_signature"]
