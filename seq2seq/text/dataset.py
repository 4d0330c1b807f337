"""Token ids on disk: each split encoded once by `make data`, memory-mapped by training.

For each split and side, `make data` encodes the text file (data/<name>/train.src ...) with its
vocabulary, a chunk of lines at a time, into two flat binary files (nanoGPT's train.bin, with
an index as in fairseq's binarized datasets):

    train.src.ids   the piece ids of every sentence, one after another, no BOS/EOS:
                    uint16 when the vocabulary has at most 65,536 pieces, else int32
    train.src.idx   int64 offsets, N + 1 of them: sentence i is ids[idx[i] : idx[i + 1]]

ids.json records for each file what it was made from (the SHA-256 of the text and of the
vocabulary), its dtype and its size, so that `make data` re-encodes only what changed and
training knows which data it trains on.

Training opens them with TokenPairs: the files are memory-mapped, so a process holds only the
sentence lengths (two int32 arrays) and the operating system reads the pieces a batch needs.

    pairs = TokenPairs(data_dir, "train")
    pairs.src_lengths, pairs.tgt_lengths   (N,) pieces per sentence, for the batch sampler
    pairs.batch(indices)                   -> src (B, S), decoder input (B, T), output (B, T)
"""

import hashlib
import itertools
import json
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from seq2seq.support.files import atomic_write, file_hash, write_json
from seq2seq.support.paths import IDS_STAMP, SIDES, id_files, text_files
from seq2seq.text.batching import pair_tensors
from seq2seq.text.parallel import SPLITS, CorpusError, iter_lines
from seq2seq.text.vocab import Vocab

CHUNK = 10_000  # sentences encoded at a time


def id_dtype(vocab: Vocab) -> np.dtype:
    return np.dtype(np.uint16 if len(vocab) <= 1 << 16 else np.int32)


def count_lines(path: Path) -> int:
    with path.open("rb") as file:
        return sum(block.count(b"\n") for block in iter(lambda: file.read(1 << 20), b""))


def encode_file(text: Path, vocab: Vocab, ids_path: Path, idx_path: Path, label: str) -> dict:
    """Encode a text file into ids_path and idx_path, CHUNK lines at a time; returns its
    entry of the stamp."""
    dtype = id_dtype(vocab)
    lines = iter_lines(text)
    sentences = total = 0
    lines_total = count_lines(text)
    # disable=None: a bar on a terminal only, nothing in a log file
    bar = tqdm(total=lines_total, desc=label, unit=" lines", leave=False, disable=None)
    with atomic_write(ids_path, "wb") as ids_file, atomic_write(idx_path, "wb") as idx_file:
        idx_file.write(np.zeros(1, np.int64).tobytes())
        while chunk := list(itertools.islice(lines, CHUNK)):
            encoded = vocab.encode(chunk)
            lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
            flat = np.fromiter(itertools.chain.from_iterable(encoded), dtype, int(lengths.sum()))
            ids_file.write(flat.tobytes())
            idx_file.write((total + np.cumsum(lengths)).tobytes())
            total += int(lengths.sum())
            sentences += len(chunk)
            bar.update(len(chunk))
    bar.close()
    return {"dtype": dtype.name, "sentences": sentences, "pieces": total}


def build_ids(data_dir: Path, vocabs: tuple[Vocab, Vocab], vocab_files: list[Path]) -> int:
    """Encode every split that changed (its text or its vocabulary) since the last time;
    returns how many files were encoded."""
    stamp_path = data_dir / IDS_STAMP
    stamp = json.loads(stamp_path.read_text("utf-8")) if stamp_path.exists() else {}
    vocab_hashes = [file_hash(path) for path in vocab_files]
    encoded = 0
    for split in SPLITS:
        for side, text, vocab, vocab_hash in zip(
            SIDES, text_files(data_dir, split), vocabs, vocab_hashes, strict=True
        ):
            made_from = {"text_sha256": file_hash(text), "vocab_sha256": vocab_hash}
            key = f"{split}.{side}"
            ids_path, idx_path = id_files(data_dir, split, side)
            entry = stamp.get(key, {})
            if ids_path.exists() and idx_path.exists() and entry.get("made_from") == made_from:
                continue
            entry = encode_file(text, vocab, ids_path, idx_path, f"encoding {text.name}")
            stamp[key] = {**entry, "made_from": made_from}
            write_json(stamp_path, stamp)  # after each file: an interrupted run keeps the rest
            encoded += 1
    return encoded


def open_side(data_dir: Path, split: str, side: str, entry: dict | None, vocab_file: Path | None):
    """One side's ids (memory-mapped) and offsets (N + 1,), checked against its stamp entry
    and, if given, against the vocabulary file they must have been encoded with."""
    ids_path, idx_path = id_files(data_dir, split, side)
    if entry is None or not ids_path.exists() or not idx_path.exists():
        raise CorpusError(f"no token ids for {split}.{side} in {data_dir}/: run `make data`")
    if vocab_file and entry["made_from"]["vocab_sha256"] != file_hash(vocab_file):
        raise CorpusError(
            f"{ids_path} was encoded with another vocabulary than {vocab_file}: run `make data`"
        )
    ids = np.memmap(ids_path, dtype=entry["dtype"], mode="r")
    offsets = np.fromfile(idx_path, dtype=np.int64)
    if len(offsets) != entry["sentences"] + 1 or offsets[-1] != len(ids):
        raise CorpusError(f"{ids_path} does not match {idx_path}: run `make data`")
    return ids, offsets


class TokenPairs:
    """A split's sentence pairs as memory-mapped token ids (see the module's docstring).
    With `vocab_files` (src.model, tgt.model), the ids must have been encoded with them."""

    def __init__(
        self, data_dir: Path, split: str, vocab_files: list[Path] | None = None, source_eos=True
    ):
        self.source_eos = source_eos  # model.source_eos: whether EOS closes each source
        stamp_path = data_dir / IDS_STAMP
        if not stamp_path.exists():
            raise CorpusError(f"no token ids in {data_dir}/ ({IDS_STAMP}): run `make data`")
        stamp = json.loads(stamp_path.read_text("utf-8"))
        self.ids, offsets, made_from = {}, {}, []
        for side, vocab_file in zip(SIDES, vocab_files or [None, None], strict=True):
            entry = stamp.get(f"{split}.{side}")
            self.ids[side], offsets[side] = open_side(data_dir, split, side, entry, vocab_file)
            made_from.append(entry["made_from"])
        if len(offsets["src"]) != len(offsets["tgt"]):
            raise CorpusError(f"{data_dir}/{split}: source and target differ in length")
        self.starts = {side: offsets[side][:-1] for side in SIDES}  # (N,) int64
        self.src_lengths = np.diff(offsets["src"]).astype(np.int32)  # (N,)
        self.tgt_lengths = np.diff(offsets["tgt"]).astype(np.int32)  # (N,)
        # what the ids were made from identifies the training data (resuming checks it)
        self.content_hash = hashlib.sha256(json.dumps(made_from).encode()).hexdigest()

    def __len__(self) -> int:
        return len(self.src_lengths)

    def pieces(self, side: str, i: int) -> np.ndarray:
        """The ids of sentence i of one side."""
        start = self.starts[side][i]
        length = (self.src_lengths if side == "src" else self.tgt_lengths)[i]
        return self.ids[side][start : start + length]

    def batch(self, indices: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Pairs `indices` -> source (B, S), decoder input (B, T), decoder output (B, T), as
        seq2seq/text/batching.py's pair_tensors makes them."""
        sources = [self.pieces("src", i) for i in indices]
        targets = [self.pieces("tgt", i) for i in indices]
        return pair_tensors(sources, targets, self.source_eos)
