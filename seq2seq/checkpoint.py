"""Checkpoints: everything needed to translate, in one file written atomically.

A checkpoint holds the experiment config, the model weights and the bytes of both
sentencepiece models, so `python -m seq2seq.translate --checkpoint file.pt` needs nothing
else: no config file, no data directory.
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
    info: dict  # training step, validation scores


def save_checkpoint(
    path: str | Path,
    config: Config,
    model: Transformer,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    info: dict,
) -> None:
    state = {
        "format": FORMAT,
        "config": config.to_dict(),
        "model": model.state_dict(),
        "src_vocab": src_vocab.model_bytes,
        "tgt_vocab": tgt_vocab.model_bytes,
        "info": info,
    }
    with atomic_write(path, "wb") as file:
        torch.save(state, file)


def load_checkpoint(path: str | Path, device: torch.device | str = "cpu") -> Checkpoint:
    path = Path(path)
    if not path.exists():
        raise UserError(f"no trained model at {path}: run `make train` first")
    try:
        state = torch.load(path, map_location=device, weights_only=True)
        if state.get("format") != FORMAT:
            raise ValueError(f"format {state.get('format')!r}, expected {FORMAT}")
        config = config_from_dict(state["config"], source=f"{path} (config)")
        src_vocab, tgt_vocab = Vocab(state["src_vocab"]), Vocab(state["tgt_vocab"])
        model = Transformer(config.model, len(src_vocab), len(tgt_vocab))
        model.load_state_dict(state["model"])
    except UserError:
        raise
    except Exception as error:  # truncated file, another program's file, mismatched weights
        raise UserError(f"{path} is not a readable checkpoint ({error})") from None
    model.to(device).eval()
    return Checkpoint(config, model, src_vocab, tgt_vocab, state["info"])
