"""The built-in corpus: English number words to digits, "twenty one is five" -> "2 1 la 5".

Two presets:

* `seed`: nine pairs only, "one is one" -> "1 la 1" ... "nine is nine" -> "9 la 9": a toy
  corpus that a tiny model learns by heart in seconds (docs/walkthrough.py trains on it).
* `default`: sentences "<a> is <b>" for integers 0..999,999, where <b> repeats <a> with
  probability `same_prob` and is another number otherwise. The target writes both numbers
  as digits, one token each, around the word "la".

How numbers are drawn matters. Drawn uniformly from 0..999,999, nine in ten numbers have six
digits, and a model trained on that scores 100% on its own test split but fails on "twenty one
is five". So every number is drawn by first picking its number of digits uniformly from 1 to 6,
then its digits. Round numbers need the same care: with uniform digits, "nine hundred thousand
four" (three zeros in a row) is rare, and a model trained on that gets one in ten such numbers
wrong. So each digit after the first is 0 with probability `zero_prob` (else uniform 0..9).

The valid and test splits measure generalisation to unseen numbers: their first numbers are
held out, so that they appear nowhere in the training split (neither as <a> nor as <b>).
There are too few one- and two-digit numbers to hold any out, so held-out numbers have 3 to
6 digits.
"""

import random
from collections.abc import Iterator

from seq2seq.options import Config, CorpusConfig

MAX_DIGITS = 6

# The valid and test splits hold out at most this many first numbers: half of the 900
# three-digit numbers, for each of the digit counts 3..6 they are drawn from.
MAX_HELD_OUT = 4 * 450

ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()

SEED_PAIRS = [(f"{word} is {word}", f"{n} la {n}") for n, word in enumerate(ONES[1:10], start=1)]


def number_words(n: int) -> str:
    """English words for 0 <= n <= 999,999: 21 -> "twenty one", 1005 -> "one thousand five"."""
    if not 0 <= n < 10**MAX_DIGITS:
        raise ValueError(f"number_words covers 0..{10**MAX_DIGITS - 1}, got {n}")
    if n < 20:
        return ONES[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return TENS[tens] + (f" {ONES[ones]}" if ones else "")
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        return f"{ONES[hundreds]} hundred" + (f" {number_words(rest)}" if rest else "")
    thousands, rest = divmod(n, 1000)
    return f"{number_words(thousands)} thousand" + (f" {number_words(rest)}" if rest else "")


def number_digits(n: int) -> str:
    """The target side of a number: its digits as separate tokens, 21 -> "2 1"."""
    return " ".join(str(n))


def make_pair(a: int, b: int) -> tuple[str, str]:
    return f"{number_words(a)} is {number_words(b)}", f"{number_digits(a)} la {number_digits(b)}"


def draw_number(
    rng: random.Random, zero_prob: float, min_digits: int = 1, allowed=lambda n: True
) -> int:
    """A number whose digit count is uniform in min_digits..6 (0 counts as one digit); each
    digit after the first is 0 with probability zero_prob, else uniform. Numbers that are not
    `allowed` are redrawn with the same digit count, so every magnitude stays as frequent."""
    length = rng.randint(min_digits, MAX_DIGITS)
    while True:
        first = rng.randint(0 if length == 1 else 1, 9)
        rest = [0 if rng.random() < zero_prob else rng.randint(0, 9) for _ in range(length - 1)]
        number = int("".join(map(str, [first, *rest])))
        if allowed(number):
            return number


def generate(corpus: CorpusConfig) -> dict[str, list[tuple[str, str]]]:
    """The default preset: {"train": [...], "valid": [...], "test": [...]}, deterministic in
    corpus.seed, with corpus.train_size, valid_size and test_size pairs."""
    rng = random.Random(corpus.seed)
    assert corpus.valid_size + corpus.test_size <= MAX_HELD_OUT  # checked with the config: problems

    # The first numbers of the valid and test sentences, all distinct, 3 to 6 digits.
    held_out: set[int] = set()
    firsts = []
    for _ in range(corpus.valid_size + corpus.test_size):
        firsts.append(draw_number(rng, corpus.zero_prob, 3, lambda n: n not in held_out))
        held_out.add(firsts[-1])

    def pair(a: int, allowed) -> tuple[str, str]:
        """The sentence "<a> is <b>", b drawn among the allowed numbers."""
        same = rng.random() < corpus.same_prob
        b = a if same else draw_number(rng, corpus.zero_prob, 1, lambda n: n != a and allowed(n))
        return make_pair(a, b)

    def trainable(n: int) -> bool:
        return n not in held_out

    train = [
        pair(draw_number(rng, corpus.zero_prob, 1, trainable), trainable)
        for _ in range(corpus.train_size)
    ]
    evaluation = [pair(a, lambda n: True) for a in firsts]
    return {
        "train": train,
        "valid": evaluation[: corpus.valid_size],
        "test": evaluation[corpus.valid_size :],
    }


def digit_counts(target: str) -> tuple[int, int]:
    """Digits of the first and second number of a target sentence: "2 1 la 5" -> (2, 1)."""
    first, _, second = target.partition(" la ")
    return len(first.split()), len(second.split())


def splits(config: Config) -> dict[str, list[tuple[str, str]]]:
    """Each split's pairs, of the preset corpus.preset."""
    if config.corpus.preset == "seed":
        return {split: list(SEED_PAIRS) for split in ("train", "valid", "test")}
    return generate(config.corpus)


def problems(corpus: CorpusConfig) -> Iterator[str]:
    """Sizes the generator can meet: every split has pairs, and the held-out numbers exist."""
    for key in ("train_size", "valid_size", "test_size"):
        if getattr(corpus, key) <= 0:
            yield f"'corpus.{key}' must be positive"
    held_out = corpus.valid_size + corpus.test_size
    if held_out > MAX_HELD_OUT:
        yield (
            f"'corpus.valid_size' + 'corpus.test_size' is {held_out}; the numbers corpus holds "
            f"out at most {MAX_HELD_OUT:,} distinct numbers"
        )


def exact_match_by_digits(hypotheses: list[str], references: list[str]) -> dict:
    """Exact match grouped by the digit count of the first and of the second number of each
    reference ("2 1 la 5": first 2, second 1), with the group sizes."""
    result: dict = {}
    for which, position in (("first_number", 0), ("second_number", 1)):
        groups: dict[int, list[bool]] = {}
        for hypothesis, reference in zip(hypotheses, references, strict=True):
            digits = digit_counts(reference)[position]
            groups.setdefault(digits, []).append(hypothesis == reference)
        result[which] = {
            str(digits): {"exact_match": sum(hits) / len(hits), "n": len(hits)}
            for digits, hits in sorted(groups.items())
        }
    return result
