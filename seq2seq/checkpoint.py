"""Checkpoints: everything needed to translate, in one file written atomically.

A checkpoint holds the experiment config, the model weights and the bytes of both
sentencepiece models, so `python -m seq2seq.translate --checkpoint file.pt` needs nothing
else: no config file, no data directory. The checkpoint training resumes from
(runs/<experiment>/last.pt) also holds a `training` entry: optimizer, step, random states
(see seq2seq/train.py).
"""

from dataclasses import dataclass
from pathlib import Path

import torch

from seq2seq.config import Config, config_from_dict
from seq2seq.errors import UserError
from seq2seq.files import atomic_write
from seq2seq.model import Transformer
from seq2seq.vocab import Vocab

FORMAT = 1


@dataclass
class Checkpoint:
    config: Config
    model: Transformer
    src_vocab: Vocab
    tgt_vocab: Vocab
    info: dict  # training step, validation scores, `example`: the first validation source

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
    with atomic_write(path, "wb") as file:
        torch.save(state, file)


def read_state(
    path: Path, device: torch.device | str = "cpu", trained_by: str = "`make train`"
) -> dict:
    """The raw dictionary of a checkpoint file, or a UserError saying why it cannot be read
    (if it is missing: that `trained_by` makes it)."""
    if not path.exists():
        raise UserError(f"no trained model at {path}: run {trained_by} first")
    try:
        state = torch.load(path, map_location=device, weights_only=True)
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            found = state.get("format") if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"format {found!r}, expected {FORMAT}")
    except Exception as error:  # truncated file, another program's file
        raise UserError(f"{path} is not a readable checkpoint ({error})") from None
    return state


def load_checkpoint(
    path: str | Path, device: torch.device | str = "cpu", trained_by: str = "`make train`"
) -> Checkpoint:
    path = Path(path)
    state = read_state(path, device, trained_by)
    try:
        config = config_from_dict(state["config"], source=f"{path} (config)")
        src_vocab = Vocab(state["src_vocab"], config.vocab)
        tgt_vocab = Vocab(state["tgt_vocab"])
        model = Transformer(config.model, len(src_vocab), len(tgt_vocab))
        model.load_state_dict(state["model"])
    except UserError:
        raise
    except Exception as error:  # missing entries, mismatched weights
        raise UserError(f"{path} is not a readable checkpoint ({error})") from None
    model.to(device).eval()
    return Checkpoint(config, model, src_vocab, tgt_vocab, state["info"])
