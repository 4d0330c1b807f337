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

A user's catalogs make one too, for any model CTranslate2 decodes, an export or an Argos
package (decode.vmap_catalogs; translate --vmap DIR):

    DIR's gettext catalogs of the model's target language (localization/catalogs.py's
    gettext_catalogs), their (msgid, msgstr) pairs as fine-tuning reads them
      -> each side in the model's tokens (its engine's tokenizers: `tokenize`), as ids of
         its CTranslate2 vocabularies (a token they lack left out)
      -> the map as above, kept in cache_folder()/<key>.txt (~/.cache/seq2seq/vmap), the key
         a hash of the catalogs, the model's files but its weights, the pair, ALWAYS and
         PER_SOURCE: made once (seconds for a system's 94 German catalogs; hashing them
         finds it again in hundredths of a second)
      -> the model's Translator, given its files and this vmap.txt from memory
         (decoding/ctranslate2_engine.py's load_translator): no folder of the user's written
"""

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from seq2seq.exports.ctranslate2_reader import model_vocabularies
from seq2seq.localization.catalogs import gettext_catalogs, gettext_files, read_catalogs
from seq2seq.localization.cooccurrence import dice_scores
from seq2seq.support.errors import UserError, warn
from seq2seq.support.files import atomic_write, file_hash
from seq2seq.tokens.special import EOS
from seq2seq.tokens.vocab import Vocab

# The special pieces (special.py; OpenNMT's four in a published Argos package) come first: none
# is a candidate of ours
FIRST_PIECE = EOS + 1
VMAP = "vmap.txt"  # the file's name in an export, where CTranslate2 looks for it
ALWAYS = 100  # target pieces that are candidates for every batch
PER_SOURCE = 50  # target pieces each source piece adds
WEIGHTS = "model.bin"  # a CTranslate2 model's weights, which a map does not depend on
MADE = 1  # how maps are made of catalogs: raise it when that changes, and kept ones are remade

Tokenize = Callable[[list[str]], list[list[str]]]  # texts -> each one's tokens, the model's


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


def catalog_map(
    catalogs: Path, languages: tuple[str, str], tokenize: tuple[Tokenize, Tokenize],
    folder: Path, model_dir: Path,
) -> str:  # fmt: skip
    """vmap.txt's text for the CTranslate2 model in `model_dir` from the gettext catalogs
    under `catalogs` of `languages` (codes), each side's texts tokenised by that side's of
    `tokenize` (the second table above); kept in the cache, keyed by `folder`'s files (the
    model's, its tokenizers' and settings') but its weights."""
    if not catalogs.is_dir():
        raise UserError(
            f"{catalogs}: no such folder (the vocabulary map's catalogs: a folder of .po or "
            ".mo files)"
        )
    try:
        kept = cache_folder() / f"{map_key(catalogs, languages, folder)}.txt"
    except OSError as error:  # a file that went, a folder that may not be read
        raise UserError(f"cannot read {error.filename}: {error.strerror}") from None
    if kept.is_file():
        return kept.read_text("utf-8")
    pairs = catalog_pairs(catalogs, languages)
    vocabularies = model_vocabularies(model_dir)
    text = vocab_map(piece_ids(pairs, tokenize, vocabularies), *vocabularies)
    try:
        with atomic_write(kept) as file:
            file.write(text)
    except OSError as error:
        warn(f"the vocabulary map is made again next time: {error}")
    return text


def catalog_pairs(catalogs: Path, languages: tuple[str, str]) -> list[tuple[str, str]]:
    """The pairs of the gettext catalogs under `catalogs` of `languages`' target language."""
    pairs = list(read_catalogs(gettext_catalogs(catalogs, languages[1]), languages, {}))
    if not pairs:
        raise UserError(
            f"{catalogs} holds no gettext catalog (.po, .mo) of {languages[1]}, or none "
            f"translated: the vocabulary map of a {languages[0]} -> {languages[1]} model "
            "needs their pairs"
        )
    return pairs


def piece_ids(
    pairs: list[tuple[str, str]], tokenize: tuple[Tokenize, Tokenize],
    vocabularies: tuple[list[str], list[str]],
) -> list[tuple[list[int], list[int]]]:  # fmt: skip
    """Each side of `pairs` tokenised by that side's of `tokenize`, as ids of its vocabulary."""
    source, target = (
        known(tokens([pair[side] for pair in pairs]), pieces)
        for side, (tokens, pieces) in enumerate(zip(tokenize, vocabularies, strict=True))
    )
    return list(zip(source, target, strict=True))


def known(tokens: list[list[str]], pieces: list[str]) -> list[list[int]]:
    """Each text's tokens as ids of `pieces` (a vocabulary in row order), those it lacks left
    out."""
    ids = {piece: i for i, piece in enumerate(pieces)}
    return [[ids[t] for t in one if t in ids] for one in tokens]


def map_key(catalogs: Path, languages: tuple[str, str], folder: Path) -> str:
    """A map's key in the cache: what it is made of (catalog_map's arguments but the
    tokenizers, which `folder`'s files hold), each file by its path and its bytes' hash."""
    model = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != WEIGHTS)
    files = [(catalogs, p) for p in gettext_files(catalogs)] + [(folder, p) for p in model]
    made_of = [MADE, ALWAYS, PER_SOURCE, languages,
               [(str(p.relative_to(root)), file_hash(p)) for root, p in files]]  # fmt: skip
    return hashlib.sha256(json.dumps(made_of).encode()).hexdigest()


def cache_folder() -> Path:
    """Where maps made from catalogs are kept: $XDG_CACHE_HOME/seq2seq/vmap (by default
    ~/.cache/seq2seq/vmap)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "seq2seq/vmap"
