"""Token ids on disk: each split encoded once by `make data`, memory-mapped by training.

For each split, `make data` encodes the two text files (data/<name>/train.src, train.tgt)
with their vocabularies, a chunk of pairs at a time, each side into two flat binary files
(nanoGPT's train.bin, with an index as in fairseq's binarized datasets):

    train.src.ids   the piece ids of every sentence, one after another, no BOS/EOS:
                    uint16 when the vocabulary has at most 65,536 pieces, else int32
    train.src.idx   int64 offsets, N + 1 of them: sentence i is ids[idx[i] : idx[i + 1]]

A pair longer in pieces than the model takes (Limits: its positions) is left out of the ids,
counted, and its line kept in the text, which the scores still read (a source cut to fit, with
a warning): training never meets a pair its model cannot take.

ids.json records for each split what it was made from (the SHA-256 of each text and of each
vocabulary, and the model's limits), each side's dtype and size, and the pairs left out, so
that `make data` re-encodes only what changed and training knows which data it trains on.

Training opens them with TokenPairs: the files are memory-mapped, so a process holds only the
sentence lengths (two int32 arrays) and the operating system reads the pieces a batch needs.

    pairs = TokenPairs(data_dir, "train", limits=Limits.of(config))
    pairs.src_lengths, pairs.tgt_lengths   (N,) pieces per sentence, for the batch sampler
    pairs.batch(indices)                   -> src (B, S), decoder input (B, T), output (B, T)
"""

import contextlib
import hashlib
import itertools
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from seq2seq.localization.term_pairs import Teaching
from seq2seq.options import Config
from seq2seq.support.files import atomic_write, file_hash, write_json
from seq2seq.support.paths import IDS_STAMP, SIDES, id_files, text_files, vocab_files
from seq2seq.text.parallel import SPLITS, CorpusError, iter_lines
from seq2seq.tokens.batching import pair_tensors
from seq2seq.tokens.vocab import Vocab

CHUNK = 10_000  # pairs encoded at a time
SHOWN = 5  # the lines of the pairs left out that ids.json names, the first ones


def id_dtype(vocab: Vocab) -> np.dtype:
    return np.dtype(np.uint16 if len(vocab) <= 1 << 16 else np.int32)


def count_lines(path: Path) -> int:
    with path.open("rb") as file:
        return sum(block.count(b"\n") for block in iter(lambda: file.read(1 << 20), b""))


@dataclass(frozen=True)
class Limits:
    """The most pieces the model takes on each side (ModelConfig.longest_source and
    longest_output): a pair longer on either side is left out of the ids."""

    src: int
    tgt: int

    @classmethod
    def of(cls, config: Config) -> "Limits":
        return cls(config.model.longest_source, config.model.longest_output)

    def fits(self, src_length: int, tgt_length: int) -> bool:
        return src_length <= self.src and tgt_length <= self.tgt


class IdsWriter:
    """One side's .ids and .idx files (above), written a chunk of sentences at a time."""

    def __init__(self, ids_file, idx_file, dtype: np.dtype):
        self.ids_file, self.idx_file, self.dtype = ids_file, idx_file, dtype
        self.sentences = self.pieces = 0
        idx_file.write(np.zeros(1, np.int64).tobytes())

    def write(self, sentences: list[list[int]]) -> None:
        lengths = np.fromiter(map(len, sentences), np.int64, len(sentences))
        flat = np.fromiter(itertools.chain.from_iterable(sentences), self.dtype, lengths.sum())
        self.ids_file.write(flat.tobytes())
        self.idx_file.write((self.pieces + np.cumsum(lengths)).tobytes())
        self.sentences, self.pieces = self.sentences + len(sentences), self.pieces + lengths.sum()

    def entry(self) -> dict:
        return {"dtype": self.dtype.name, "sentences": self.sentences, "pieces": int(self.pieces)}


def encode_split(
    data_dir: Path, split: str, vocabs: tuple[Vocab, Vocab], limits: Limits,
    teaching: Teaching | None = None,
) -> dict:  # fmt: skip
    """Encode a split's two text files in step, CHUNK pairs at a time, leaving out the pairs
    longer than `limits`, the sources with terms written in by `teaching` (train.terms);
    returns its entry of the stamp: each side's dtype, sentences and pieces, and the pairs
    left out (too_long_for_model: how many, the first lines)."""
    texts = text_files(data_dir, split)
    pairs = zip(*map(iter_lines, texts), strict=True)  # write_pairs wrote them line for line
    dropped: list[int] = []
    # disable=None: a bar on a terminal only, nothing in a log file
    bar = tqdm(total=count_lines(texts[0]), desc=f"encoding {split}", unit=" pairs",
               leave=False, disable=None)  # fmt: skip
    with contextlib.ExitStack() as stack:
        writers = []
        for side, vocab in zip(SIDES, vocabs, strict=True):
            paths = id_files(data_dir, split, side)  # .ids, .idx
            files = [stack.enter_context(atomic_write(path, "wb")) for path in paths]
            writers.append(IdsWriter(*files, id_dtype(vocab)))
        for first in itertools.count(1, CHUNK):  # the chunk's first line
            if not (chunk := list(itertools.islice(pairs, CHUNK))):
                break
            chunk = teaching.written(chunk) if teaching else chunk
            src, tgt = (
                vocab.encode([pair[side] for pair in chunk]) for side, vocab in enumerate(vocabs)
            )
            fits = [limits.fits(len(s), len(t)) for s, t in zip(src, tgt, strict=True)]
            dropped += [first + i for i, fit in enumerate(fits) if not fit]
            for writer, ids in zip(writers, (src, tgt), strict=True):
                writer.write(list(itertools.compress(ids, fits)))
            bar.update(len(chunk))
        if dropped and not writers[0].sentences:  # nothing written: the files are not kept
            raise CorpusError(
                f"{data_dir}/{split}: every pair ({len(dropped):,}) is longer than the model "
                f"takes ({limits.src:,} source and {limits.tgt:,} target pieces at most)"
            )
    bar.close()
    entries = {side: writer.entry() for side, writer in zip(SIDES, writers, strict=True)}
    return entries | {"too_long_for_model": {"pairs": len(dropped), "lines": dropped[:SHOWN]}}


def build_ids(
    data_dir: Path, vocabs: tuple[Vocab, Vocab], limits: Limits, teaching: Teaching | None = None
) -> dict[str, dict]:
    """Encode every split that changed (its text, its vocabularies, the model's limits or, for
    the training split, `teaching`: train.terms) since the last time; returns the stamp's
    entry of each split encoded now."""
    stamp_path = data_dir / IDS_STAMP
    stamp = json.loads(stamp_path.read_text("utf-8")) if stamp_path.exists() else {}
    vocab_hashes = [file_hash(path) for path in vocab_files(data_dir)]
    encoded = {}
    for split in SPLITS:
        texts = text_files(data_dir, split)
        made_from = {
            side: {"text_sha256": file_hash(text), "vocab_sha256": vocab_hash}
            for side, text, vocab_hash in zip(SIDES, texts, vocab_hashes, strict=True)
        } | {"limits": asdict(limits)}
        taught = teaching if split == "train" else None
        if taught:
            made_from["terms"] = taught.stamp
        on_disk = all(path.exists() for side in SIDES for path in id_files(data_dir, split, side))
        if on_disk and stamp.get(split, {}).get("made_from") == made_from:
            continue
        if taught:
            taught.start()
        entry = encode_split(data_dir, split, vocabs, limits, taught)
        stamp[split] = encoded[split] = {**entry, "made_from": made_from}
        write_json(stamp_path, stamp)  # after each split: an interrupted run keeps the rest
    return encoded


def dropped_pairs(data_dir: Path) -> dict[str, dict]:
    """Each split's pairs left out of its ids as too long for the model, as ids.json says."""
    stamp = json.loads((data_dir / IDS_STAMP).read_text("utf-8"))
    return {split: stamp[split]["too_long_for_model"] for split in SPLITS}


def open_side(data_dir: Path, split: str, side: str, entry: dict, vocab_file: Path | None):
    """One side's ids (memory-mapped) and offsets (N + 1,), checked against its split's stamp
    entry and, if given, against the vocabulary file they must have been encoded with."""
    ids_path, idx_path = id_files(data_dir, split, side)
    if not ids_path.exists() or not idx_path.exists():
        raise CorpusError(f"no token ids for {split}.{side} in {data_dir}/: run `make data`")
    if vocab_file and entry["made_from"][side]["vocab_sha256"] != file_hash(vocab_file):
        raise CorpusError(
            f"{ids_path} was encoded with another vocabulary than {vocab_file}: run `make data`"
        )
    ids = np.memmap(ids_path, dtype=entry[side]["dtype"], mode="r")
    offsets = np.fromfile(idx_path, dtype=np.int64)
    if len(offsets) != entry[side]["sentences"] + 1 or offsets[-1] != len(ids):
        raise CorpusError(f"{ids_path} does not match {idx_path}: run `make data`")
    return ids, offsets


def split_entry(data_dir: Path, split: str, limits: Limits | None) -> dict:
    """A split's entry of the stamp; with `limits` (the model's), the ids must hold no pair
    longer than they allow: training meets none."""
    stamp_path = data_dir / IDS_STAMP
    stamp = json.loads(stamp_path.read_text("utf-8")) if stamp_path.exists() else {}
    if split not in stamp:
        raise CorpusError(f"no token ids for {split} in {data_dir}/ ({IDS_STAMP}): run `make data`")
    encoded_for = Limits(**stamp[split]["made_from"]["limits"])
    if limits and not limits.fits(encoded_for.src, encoded_for.tgt):
        raise CorpusError(
            f"{data_dir}/{split}: the token ids hold pairs of up to {encoded_for.src} source and "
            f"{encoded_for.tgt} target pieces, the model takes {limits.src} and {limits.tgt}: "
            "run `make data`"
        )
    return stamp[split]


class TokenPairs:
    """A split's sentence pairs as memory-mapped token ids (see the module's docstring).
    With `vocab_files` (src.model, tgt.model), the ids must have been encoded with them; with
    `limits` (the model's), for a model that takes every pair (split_entry)."""

    def __init__(
        self,
        data_dir: Path,
        split: str,
        vocab_files: list[Path] | None = None,
        source_eos=True,
        limits: Limits | None = None,
    ):
        self.source_eos = source_eos  # model.source_eos: whether EOS closes each source
        entry = split_entry(data_dir, split, limits)
        self.ids, offsets = {}, {}
        for side, vocab_file in zip(SIDES, vocab_files or [None, None], strict=True):
            self.ids[side], offsets[side] = open_side(data_dir, split, side, entry, vocab_file)
        if len(offsets["src"]) != len(offsets["tgt"]):
            raise CorpusError(f"{data_dir}/{split}: source and target differ in length")
        self.starts = {side: offsets[side][:-1] for side in SIDES}  # (N,) int64
        self.src_lengths = np.diff(offsets["src"]).astype(np.int32)  # (N,)
        self.tgt_lengths = np.diff(offsets["tgt"]).astype(np.int32)  # (N,)
        # what the ids were made from identifies the training data (resuming checks it)
        self.content_hash = hashlib.sha256(json.dumps(entry["made_from"]).encode()).hexdigest()

    def __len__(self) -> int:
        return len(self.src_lengths)

    def pieces(self, side: str, i: int) -> np.ndarray:
        """The ids of sentence i of one side."""
        start = self.starts[side][i]
        length = (self.src_lengths if side == "src" else self.tgt_lengths)[i]
        return self.ids[side][start : start + length]

    def batch(self, indices: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Pairs `indices` -> source (B, S), decoder input (B, T), decoder output (B, T), as
        seq2seq/tokens/batching.py's pair_tensors makes them."""
        sources = [self.pieces("src", i) for i in indices]
        targets = [self.pieces("tgt", i) for i in indices]
        return pair_tensors(sources, targets, self.source_eos)
