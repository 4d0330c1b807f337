"""Fine-tuning: a run that starts from a trained checkpoint of ours (train.init_from), its
vocabularies kept, instead of from random weights: a released model made better on new data.

    make data    read_source: train.init_from -> a checkpoint whose model and vocab sections
                 are the config's -> its vocabularies copied to data/<corpus.name>/
                 (text/vocab.py: copy_vocabs): the new corpus is encoded with them
    make train   set_up (run.py): the parts of a fresh run, a fresh optimizer among them
                 -> resume_from_last: the run's own last.pt, if it has one (best_and_last.py)
                 -> else start_from_source: the checkpoint's weights, on its vocabularies

Step 0 of the new run is the checkpoint's model exactly; from there it is an ordinary run in
its own runs/<experiment>/: the config's train.lr, warmup_steps and max_steps, best.pt,
last.pt, resuming (which never reads train.init_from again).
"""

from pathlib import Path

from seq2seq.checkpoint import read_state
from seq2seq.config import Config
from seq2seq.support.errors import UserError
from seq2seq.training.resume import model_differences
from seq2seq.training.run import Run


def read_source(config: Config) -> dict:
    """The raw state of the checkpoint train.init_from names, checked: a readable checkpoint
    of the model and vocabulary settings the config has (its config's, key by key)."""
    path = Path(config.train.init_from)
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
    if run.world.main:
        print(f"starting from the weights of {config.train.init_from} (train.init_from)")
