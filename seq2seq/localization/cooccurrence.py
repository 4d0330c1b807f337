"""How often the items of two sides meet in pairs, and the Dice score of each two that do:
the vocabulary map's candidates (exports/vocab_map.py: piece ids) and the term pairs drawn
from training pairs (localization/term_pairs.py: word ids).

    pairs of id lists: ([s, s, ...], [t, t, ...]) ...
      -> c(s): pairs with s, c(t): pairs with t, c(s, t): pairs with both (once a pair)
      -> Dice 2 c(s, t) / (c(s) + c(t)): 1 for two that always come together
"""

from collections.abc import Iterable

import numpy as np


def pair_counts(
    pairs: Iterable[tuple[list[int], list[int]]], src_size: int, tgt_size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """-> c(s) (src_size,), c(t) (tgt_size,), and the (s, t) pairs that meet, as codes
    s * tgt_size + t (sorted, unique), with their c(s, t): each piece counted once a pair."""
    src_counts, tgt_counts = np.zeros(src_size, np.int64), np.zeros(tgt_size, np.int64)
    codes = []
    for src, tgt in pairs:
        s, t = np.unique(np.asarray(src, np.int64)), np.unique(np.asarray(tgt, np.int64))
        src_counts[s] += 1
        tgt_counts[t] += 1
        codes.append((s[:, None] * tgt_size + t[None, :]).ravel())
    met, together = np.unique(np.concatenate(codes or [np.zeros(0, np.int64)]), return_counts=True)
    return src_counts, tgt_counts, met, together


def dice_scores(
    pairs: Iterable[tuple[list[int], list[int]]], src_size: int, tgt_size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """-> s, t (the ids of each two that meet), their Dice scores, and c(t) (tgt_size,)."""
    src_counts, tgt_counts, met, together = pair_counts(pairs, src_size, tgt_size)
    s, t = np.divmod(met, tgt_size)
    return s, t, 2 * together / (src_counts[s] + tgt_counts[t]), tgt_counts
