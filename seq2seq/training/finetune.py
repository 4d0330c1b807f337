"""Fine-tuning: a run that starts from a trained checkpoint of ours (train.init_from), its
vocabularies kept, instead of from random weights: a released model made better on new data.

    make data    read_source: train.init_from -> a checkpoint whose model and vocab sections
                 are the config's -> its vocabularies copied to data/<corpus.name>/
                 (tokens/vocab.py: copy_vocabs): the new corpus is encoded with them
    make train   set_up (run.py): the parts of a fresh run, a fresh optimizer among them
                 -> resume_from_last: the run's own last.pt, if it has one (best_and_last.py)
                 -> else start_from_source: the checkpoint's weights, on its vocabularies

Step 0 of the new run is the checkpoint's model exactly; from there it is an ordinary run in
its own runs/<experiment>/: the config's train.lr, warmup_steps and max_steps, best.pt,
last.pt, resuming (which reads train.init_from again only for what keeps its knowledge).

Keeping what the start knew, without its training data (train.keep_teacher, keep_weights):
start_model is the checkpoint's model, frozen beside the one that trains: the teacher whose
distribution is part of each token's target (training/loss.py), and the weights that
pull_toward_start draws the trained ones back to after each step.
"""

from pathlib import Path

import torch

from seq2seq.checkpoint import read_state
from seq2seq.config import Config
from seq2seq.exports.argos_package import SUFFIX
from seq2seq.model.transformer import Transformer
from seq2seq.support.errors import UserError
from seq2seq.tokens.special import PAD
from seq2seq.training.resume import model_differences
from seq2seq.training.run import Run


def read_source(config: Config) -> dict:
    """The raw state of the checkpoint train.init_from names, checked: a readable checkpoint
    of the model and vocabulary settings the config has (its config's, key by key)."""
    path = Path(config.train.init_from)
    if path.is_dir() or path.suffix == SUFFIX:
        raise UserError(
            f"train.init_from: {path} is a package, not a checkpoint: import it first "
            f"(python -m seq2seq.import_model {path}), which writes the checkpoint and the "
            "config.yaml a fine-tuning config takes as its base (docs/adapt.md)"
        )
    if not path.is_file():
        raise UserError(f"train.init_from: there is no checkpoint at {path}")
    try:
        state = read_state(path)
    except UserError as error:
        raise UserError(f"train.init_from: {error}") from None
    if differences := model_differences(state["config"], config):
        named = "; ".join(
            f"{key} is {saved!r} there, {now!r} in the config" for key, saved, now in differences
        )
        raise UserError(
            f"train.init_from: {path} holds another model than {config.file} describes: "
            f"{named}. Set these as the checkpoint has them"
        )
    return state


def start_from_source(run: Run) -> None:
    """A fresh run (none to resume) with train.init_from starts from that checkpoint's weights,
    which must be on the vocabularies the corpus was encoded with; without it, nothing to do."""
    config = run.config
    if config.train.init_from is None:
        return
    state = read_source(config)
    if (state["src_vocab"], state["tgt_vocab"]) != tuple(v.model_bytes for v in run.vocabs):
        raise UserError(
            f"{config.data_dir}/ holds other vocabularies than {config.train.init_from} "
            f"(train.init_from): run {config.make_command('data')} to encode the corpus with "
            "the checkpoint's"
        )
    run.model.load_state_dict(state["model"])
    run.origin = state["info"].get("origin", {})  # an imported model's, kept on
    if run.world.main:
        print(f"starting from the weights of {config.train.init_from} (train.init_from)")


def start_model(run: Run) -> Transformer | None:
    """train.init_from's model, frozen, on the run's device, when train.keep_teacher or
    keep_weights asks for it (else None)."""
    train_cfg = run.config.train
    if not (train_cfg.keep_teacher or train_cfg.keep_weights):
        return None
    model = Transformer(run.config.model, *map(len, run.vocabs), pad_id=PAD)
    model.load_state_dict(read_source(run.config)["model"])
    return model.to(run.device).eval().requires_grad_(False)


@torch.no_grad()
def pull_toward_start(model: Transformer, start: Transformer, amount: float) -> None:
    """Every weight `amount` of the way back to its start value: w += amount x (w0 - w)."""
    for weight, initial in zip(model.parameters(), start.parameters(), strict=True):
        weight.lerp_(initial, amount)
