"""The numbers corpus: number words, presets, held-out numbers, determinism, its own score."""

from collections import Counter

import pytest

from seq2seq.config import CorpusConfig
from seq2seq.corpora import numbers


@pytest.mark.parametrize(
    "n, words",
    [
        (0, "zero"),
        (7, "seven"),
        (10, "ten"),
        (15, "fifteen"),
        (20, "twenty"),
        (21, "twenty one"),
        (100, "one hundred"),
        (110, "one hundred ten"),
        (999, "nine hundred ninety nine"),
        (1000, "one thousand"),
        (1005, "one thousand five"),
        (21_000, "twenty one thousand"),
        (100_000, "one hundred thousand"),
        (100_001, "one hundred thousand one"),
        (999_999, "nine hundred ninety nine thousand nine hundred ninety nine"),
    ],
)
def test_number_words(n, words):
    assert numbers.number_words(n) == words


def test_number_words_rejects_out_of_range():
    for n in (-1, 1_000_000):
        with pytest.raises(ValueError):
            numbers.number_words(n)


def test_pair_format():
    assert numbers.make_pair(21, 5) == ("twenty one is five", "2 1 la 5")
    assert numbers.digit_counts("2 1 la 5") == (2, 1)


def test_seed_preset_is_exactly_the_nine_one_is_one_pairs():
    assert numbers.SEED_PAIRS == [
        ("one is one", "1 la 1"),
        ("two is two", "2 la 2"),
        ("three is three", "3 la 3"),
        ("four is four", "4 la 4"),
        ("five is five", "5 la 5"),
        ("six is six", "6 la 6"),
        ("seven is seven", "7 la 7"),
        ("eight is eight", "8 la 8"),
        ("nine is nine", "9 la 9"),
    ]


def settings(seed: int = 3) -> CorpusConfig:
    return CorpusConfig(train_size=5000, valid_size=300, test_size=500, seed=seed)


@pytest.fixture(scope="module")
def corpus():
    return numbers.generate(settings())


def words_to_number(words: str) -> int:
    """Inverse of number_words, written independently, to read the sentences back."""
    value = {w: i for i, w in enumerate(numbers.ONES)} | {
        w: 10 * i for i, w in enumerate(numbers.TENS) if w != "_"
    }
    total = current = 0
    for word in words.split():
        if word == "hundred":
            current *= 100
        elif word == "thousand":
            total, current = (total + current) * 1000, 0
        else:
            current += value[word]
    return total + current


def numbers_of(pairs):
    for src, tgt in pairs:
        a_words, b_words = src.split(" is ")
        a, b = words_to_number(a_words), words_to_number(b_words)
        assert tgt == f"{' '.join(str(a))} la {' '.join(str(b))}", (src, tgt)
        yield a, b


def test_sizes_and_sentences_read_back(corpus):
    assert [len(corpus[s]) for s in ("train", "valid", "test")] == [5000, 300, 500]
    for split in corpus.values():
        list(numbers_of(split))  # every target spells the source's numbers in digits


def test_held_out_numbers_never_occur_in_training(corpus):
    train_numbers = {n for pair in numbers_of(corpus["train"]) for n in pair}
    held_out = [a for split in ("valid", "test") for a, _ in numbers_of(corpus[split])]
    assert held_out, "the valid and test splits hold numbers"
    assert len(set(held_out)) == len(held_out), "held-out first numbers repeat"
    assert not train_numbers & set(held_out)
    assert all(100 <= a <= 999_999 for a in held_out), "held-out numbers have 3 to 6 digits"


def test_every_magnitude_is_well_represented(corpus):
    digits = Counter(len(str(a)) for a, _ in numbers_of(corpus["train"]))
    for d in range(1, 7):  # uniform would be 1/6 = 0.167 each
        assert 0.12 < digits[d] / 5000 < 0.21, digits
    same = sum(a == b for a, b in numbers_of(corpus["train"])) / 5000
    assert 0.45 < same < 0.55


def test_round_numbers_are_well_represented(corpus):
    six_digits = [a for a, _ in numbers_of(corpus["train"]) if a >= 100_000]
    zero_rich = [a for a in six_digits if str(a)[1:].count("0") >= 3]  # like 900_004
    # uniform digits would give about 1%; zero_prob 0.3 gives about 27%
    assert 0.2 < len(zero_rich) / len(six_digits) < 0.35


def test_generation_is_deterministic(corpus):
    assert numbers.generate(settings()) == corpus
    assert numbers.generate(settings(seed=4)) != corpus


def test_exact_match_by_digits():
    refs = ["1 2 la 3", "4 5 6 la 4 5 6", "7 la 8"]
    hyps = ["1 2 la 3", "4 5 6 la 4 5 7", "7 la 8"]
    result = numbers.exact_match_by_digits(hyps, refs)
    assert result["first_number"] == {
        "1": {"exact_match": 1.0, "n": 1},
        "2": {"exact_match": 1.0, "n": 1},
        "3": {"exact_match": 0.0, "n": 1},
    }
    assert result["second_number"]["1"] == {"exact_match": 1.0, "n": 2}
