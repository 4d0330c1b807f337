"""A vocabulary map for CTranslate2 (decode.vmap: its `use_vmap`): the target pieces a source
piece may be translated into, from how often they meet in the training pairs. CTranslate2 then
scores, for a batch, only the target pieces that its source pieces list (and those listed for
every batch): the output layer, D x V multiplications for each output piece, shrinks from V
to those candidates, the largest share of a decoder step of a small model.

    the training pairs (data/<corpus>/train.src, train.tgt), in the model's pieces
      -> c(s): pairs with source piece s, c(t): pairs with target piece t,
         c(s, t): pairs with both (each piece counted once a pair)
      -> the ALWAYS target pieces in most pairs: candidates for every batch
         each source piece's PER_SOURCE target pieces of highest Dice score
             2 c(s, t) / (c(s) + c(t)),
         which ranks a piece that comes with s first, and one that comes with everything
         (already in ALWAYS) last
      -> vmap.txt in the export's folder, CTranslate2's format: a line a source piece,
         "<source piece>\\t<target piece> <target piece> ...", and the ALWAYS line, with an
         empty key, first

CTranslate2 adds <unk>, <s> and </s> to every batch's candidates itself; <pad> is never one.
"""

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from seq2seq.localization.cooccurrence import dice_scores
from seq2seq.tokens.special import EOS
from seq2seq.tokens.vocab import Vocab

FIRST_PIECE = EOS + 1  # the special pieces (special.py) come first: none is a candidate of ours
VMAP = "vmap.txt"  # the file's name in an export, where CTranslate2 looks for it
ALWAYS = 100  # target pieces that are candidates for every batch
PER_SOURCE = 50  # target pieces each source piece adds


def vocab_map(
    pairs: Iterable[tuple[list[int], list[int]]], src_pieces: list[str], tgt_pieces: list[str],
    always: int = ALWAYS, per_source: int = PER_SOURCE,
) -> str:  # fmt: skip
    """vmap.txt's text for `pairs` of piece ids, the pieces of each side's vocabulary in id
    order (Vocab.all_pieces) (the table above)."""
    s, t, dice, tgt_counts = dice_scores(pairs, len(src_pieces), len(tgt_pieces))
    keep = t >= FIRST_PIECE  # no special piece is a candidate of ours
    s, t, dice = s[keep], t[keep], dice[keep]
    order = np.lexsort((t, -dice, s))  # by source piece, then best first (ties: lower id)
    s, t = s[order], t[order]
    best = np.arange(len(s)) - np.searchsorted(s, s) < per_source  # searchsorted: run's start
    s, t = s[best], t[best]
    frequent = np.lexsort((np.arange(len(tgt_counts)), -tgt_counts))
    frequent = frequent[(frequent >= FIRST_PIECE) & (tgt_counts[frequent] > 0)][:always]
    lines = ["\t" + " ".join(tgt_pieces[i] for i in frequent)]
    sources, starts = np.unique(s, return_index=True)
    for source, candidates in zip(sources, np.split(t, starts[1:]), strict=True):
        lines.append(f"{src_pieces[source]}\t" + " ".join(tgt_pieces[i] for i in candidates))
    return "".join(line + "\n" for line in lines)


def training_pairs(data_dir: Path, src_vocab: Vocab, tgt_vocab: Vocab):
    """The training pairs in data_dir (train.src, train.tgt: `make data`'s) as piece ids of
    the vocabularies, or None if they are not there (a checkpoint from elsewhere)."""
    try:
        sources = (data_dir / "train.src").read_text(encoding="utf-8").split("\n")
        targets = (data_dir / "train.tgt").read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        return None
    return zip(src_vocab.encode(sources), tgt_vocab.encode(targets), strict=True)
