"""Checkpoints: everything needed to translate, in one file written atomically.

A checkpoint holds the experiment config, the model weights and the bytes of both
sentencepiece models, so `python -m seq2seq.translate --checkpoint file.pt` needs nothing
else: no config file, no data directory. The checkpoint training resumes from
(runs/<experiment>/last.pt) also holds a `training` entry: optimizer, step, random states
(see seq2seq/train.py).

A checkpoint proves itself: it carries the SHA-256 of all its other contents (`sha256`),
checked on every load, so a flipped byte anywhere in the weights, the vocabularies or the
training state is an error naming the file, never a model that quietly translates nonsense;
and no checkpoint with a non-finite weight is ever written.
"""

import hashlib
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch

from seq2seq.config import Config, config_from_dict
from seq2seq.model.transformer import Transformer
from seq2seq.support.errors import UserError
from seq2seq.support.files import atomic_write
from seq2seq.tokens.special import PAD
from seq2seq.tokens.vocab import Vocab, read_vocab

FORMAT = 2  # 2: with its checksum


@dataclass
class Checkpoint:
    config: Config
    model: Transformer
    src_vocab: Vocab
    tgt_vocab: Vocab
    info: dict  # training step, validation scores, `example`: the first validation source
    sha256: str = ""  # the file's checksum (above): which checkpoint an export was made from

    @property
    def one_vocabulary(self) -> bool:
        """Trained with vocab.joint: one sentencepiece model on both sides."""
        return self.src_vocab.model_bytes == self.tgt_vocab.model_bytes


def save_checkpoint(
    path: str | Path,
    config: Config,
    model: Transformer,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    info: dict,
    training: dict | None = None,
) -> None:
    state = {
        "format": FORMAT,
        "config": config.to_dict(),
        "model": model.state_dict(),
        "src_vocab": src_vocab.model_bytes,
        "tgt_vocab": tgt_vocab.model_bytes,
        "info": info,
    }
    if training is not None:
        state["training"] = training
    if name := non_finite(state["model"]):
        raise ValueError(f"not writing {path}: {name} is not finite")
    state["sha256"] = checksum(state)
    serialized = io.BytesIO()  # then a full disk is an OSError, not torch's RuntimeError
    torch.save(state, serialized)
    with atomic_write(path, "wb") as file:
        file.write(serialized.getbuffer())


def non_finite(weights: dict[str, torch.Tensor]) -> str | None:
    """The name of the first weight holding a NaN or an infinity, if any."""
    return next(
        (name for name, w in weights.items() if w.is_floating_point() and not w.isfinite().all()),
        None,
    )


def checksum(state: dict) -> str:
    """SHA-256 of a checkpoint's entries but "sha256": every key, number and string, and every
    tensor's dtype, shape and bytes, in the order they are stored."""
    digest = hashlib.sha256()

    def feed(value) -> None:
        if isinstance(value, torch.Tensor):
            flat = value.detach().cpu().contiguous().reshape(-1)
            digest.update(f"tensor {value.dtype} {tuple(value.shape)}:".encode())
            digest.update(flat.view(torch.uint8).numpy())
        elif isinstance(value, dict):
            digest.update(f"dict {len(value)}:".encode())
            for key, item in value.items():
                feed(key)
                feed(item)
        elif isinstance(value, list | tuple):
            digest.update(f"list {len(value)}:".encode())
            for item in value:
                feed(item)
        elif isinstance(value, bytes):
            digest.update(f"bytes {len(value)}:".encode() + value)
        else:  # str, int, float, bool, None: repr() is exact for each
            digest.update(f"{type(value).__name__} {value!r};".encode())

    feed({key: value for key, value in state.items() if key != "sha256"})
    return digest.hexdigest()


def read_state(
    path: Path, device: torch.device | str = "cpu", trained_by: str = "`make train`"
) -> dict:
    """The raw dictionary of a checkpoint file, or a UserError saying why it cannot be read
    (if it is missing: that `trained_by` makes it)."""
    if not path.exists():
        raise UserError(f"no trained model at {path}: run {trained_by} first")
    try:
        if not zipfile.is_zipfile(path):  # what torch.save writes (torch.load's error: a page)
            raise ValueError("not a zip archive, as torch.save writes: cut short, or not ours")
        state = torch.load(path, map_location=device, weights_only=True)
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            found = state.get("format") if isinstance(state, dict) else type(state).__name__
            older = " (an older seq2seq's: train it again)" if found == 1 else ""
            raise ValueError(f"format {found!r}, expected {FORMAT}{older}")
    except Exception as error:  # truncated file, another program's file
        first_line = str(error).partition("\n")[0]
        raise UserError(f"{path} is not a readable checkpoint ({first_line})") from None
    if state.get("sha256") != checksum(state):
        raise UserError(
            f"{path} is damaged: its contents do not match their checksum (a disk or copy "
            "error): use another copy, or train again"
        )
    return state


def read_config(path: Path) -> Config:
    """A checkpoint's config alone, its weights left on disk (mapped, not read)."""
    return read_header(path)[0]


def read_header(path: Path) -> tuple[Config, dict]:
    """A checkpoint's config and info (step, scores, an imported model's origin), its weights
    left on disk (mapped, not read)."""
    if not path.exists():
        raise UserError(f"no trained model at {path}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        return config_from_dict(state["config"], source=str(path)), dict(state["info"])
    except (OSError, RuntimeError, KeyError, TypeError) as error:
        raise UserError(f"{path} is not a readable checkpoint ({error})") from None


def load_checkpoint(
    path: str | Path, device: torch.device | str = "cpu", trained_by: str = "`make train`"
) -> Checkpoint:
    path = Path(path)
    state = read_state(path, device, trained_by)
    try:
        config = config_from_dict(state["config"], source=f"{path} (config)")
        src_vocab = read_vocab(state["src_vocab"], config.vocab)
        tgt_vocab = read_vocab(state["tgt_vocab"])
        model = Transformer(config.model, len(src_vocab), len(tgt_vocab), pad_id=PAD)
        model.load_state_dict(state["model"])
    except UserError:
        raise
    except Exception as error:  # missing entries, mismatched weights
        raise UserError(f"{path} is not a readable checkpoint ({error})") from None
    model.to(device).eval()
    return Checkpoint(config, model, src_vocab, tgt_vocab, state["info"], state["sha256"])
