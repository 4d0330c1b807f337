"""The built-in corpus: English number words to digits, "twenty one is five" -> "2 1 la 5".

Two presets:

* `seed`: the nine pairs of seed notebook 004, "one is one" -> "1 la 1" ... "nine is nine".
* `default`: sentences "<a> is <b>" for integers 0..999,999, where <b> repeats <a> with
  probability `same_prob` and is another number otherwise. The target writes both numbers
  as digits, one token each, around the word "la".

How numbers are drawn matters. Drawn uniformly from 0..999,999, nine in ten numbers have six
digits, and a model trained on that scores 100% on its own test split but fails on "twenty one
is five". So every number is drawn by first picking its number of digits uniformly from 1 to 6,
then a number with that many digits.

The valid and test splits measure generalisation to unseen numbers: their first numbers are
held out, so that they appear nowhere in the training split (neither as <a> nor as <b>).
There are too few one- and two-digit numbers to hold any out, so held-out numbers have 3 to
6 digits.
"""

import random

MAX_DIGITS = 6

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


def draw_number(rng: random.Random, min_digits: int = 1) -> int:
    """A number whose digit count is uniform in min_digits..6 (0 counts as one digit)."""
    digits = rng.randint(min_digits, MAX_DIGITS)
    low = 0 if digits == 1 else 10 ** (digits - 1)
    return rng.randint(low, 10**digits - 1)


def generate(
    train_size: int, valid_size: int, test_size: int, same_prob: float, seed: int
) -> dict[str, list[tuple[str, str]]]:
    """The default preset: {"train": [...], "valid": [...], "test": [...]}, deterministic."""
    rng = random.Random(seed)
    held_out_size = valid_size + test_size
    available = sum(9 * 10 ** (d - 1) for d in range(3, MAX_DIGITS + 1))
    if held_out_size > available // 2:
        raise ValueError(f"valid_size + test_size = {held_out_size} is too many held-out numbers")

    # The first numbers of the valid and test sentences, all distinct, 3 to 6 digits.
    held_out: list[int] = []
    seen: set[int] = set()
    while len(held_out) < held_out_size:
        n = draw_number(rng, min_digits=3)
        if n not in seen:
            seen.add(n)
            held_out.append(n)

    def second_number(a: int, allowed) -> int:
        if rng.random() < same_prob:
            return a
        while True:
            b = draw_number(rng)
            if b != a and allowed(b):
                return b

    def not_held_out(n: int) -> bool:
        return n not in seen

    train = []
    while len(train) < train_size:
        a = draw_number(rng)
        if not_held_out(a):
            train.append(make_pair(a, second_number(a, not_held_out)))

    def anything(n: int) -> bool:
        return True

    evaluation = [make_pair(a, second_number(a, anything)) for a in held_out]
    return {
        "train": train,
        "valid": evaluation[:valid_size],
        "test": evaluation[valid_size:],
    }


def digit_counts(target: str) -> tuple[int, int]:
    """Digits of the first and second number of a target sentence: "2 1 la 5" -> (2, 1)."""
    first, _, second = target.partition(" la ")
    return len(first.split()), len(second.split())
