"""Stopping and resuming training: what last.pt holds besides the weights, and the checks
that a checkpoint may be resumed with the config at hand.

    Ctrl-C / SIGTERM -> StopOnSignal: training stops after the current step
      -> last.pt: weights, optimizer, gradient scaler, Progress (step, the sampler's position,
         the best validation, patience), every process's random states, the data's hash and
         the batch settings (seq2seq/training/best_and_last.py: save_last)
    the same command again -> check_resumable -> everything put back (resume_from_last)
      -> the same run goes on

On the CPU a resumed run ends bit for bit where an uninterrupted one would
(tests/training/test_resume.py).
"""

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import torch

from seq2seq.config import Config, VocabConfig
from seq2seq.support.errors import UserError


@dataclass
class Progress:
    """Where training stands: what resuming needs besides the weights and the optimizer."""

    step: int = 0
    sampler: dict = field(default_factory=dict)  # EpochSampler.state_dict()
    best: dict | None = None  # the best validation result so far
    validations_without_gain: int = 0
    stopped_early: bool = False  # by train.patience
    keep_start: float | None = None  # the start's BLEU on train.keep_valid (step 0)
    elapsed_s: float = 0.0  # training time before this run
    # a validation that a signal cut short: its log line's figures known before it
    # (train_loss, lr, tokens_per_s); the resumed run validates this step first
    cut_validation: dict | None = None


def random_states(device: torch.device) -> dict:
    """The random state training draws from: dropout. (Batches follow from the seed.)"""
    states = {"torch": torch.get_rng_state()}
    if device.type == "cuda":
        states["cuda"] = torch.cuda.get_rng_state(device)
    return states


def set_random_states(states: dict, device: torch.device) -> None:
    torch.set_rng_state(states["torch"].cpu())
    if device.type == "cuda" and "cuda" in states:
        torch.cuda.set_rng_state(states["cuda"].cpu(), device)


# What a checkpoint must share with the config to be resumed: the shape of the model, what
# it computes, and the vocabularies. (Dropout, attention backend, learning rate, max_steps ...
# may change.)
RESUME_KEYS = {
    "model": [
        "d_model",
        "n_heads",
        "enc_layers",
        "dec_layers",
        "d_ff",
        "tie_embeddings",
        "share_embeddings",
        "norm",
        "norm_epsilon",
        "activation",
        "attention_bias",
        "ffn_bias",
        "output_bias",
        "scale_embeddings",
        "embedding_norm",
        "positions",
        "source_eos",
    ],
    "vocab": list(asdict(VocabConfig())),
}


def model_differences(saved: dict, config: Config) -> list[tuple[str, object, object]]:
    """The RESUME_KEYS on which a checkpoint's config (`saved`, as a dict) and `config` differ,
    each as (section.key, its saved value, config's value)."""
    differences = []
    for section, keys in RESUME_KEYS.items():
        now = asdict(getattr(config, section))
        default = asdict(type(getattr(config, section))())  # for a key older seq2seqs lacked
        then = {**default, **saved.get(section, {})}
        differences += [(f"{section}.{key}", then[key], now[key]) for key in keys
                        if then[key] != now[key]]  # fmt: skip
    return differences


def other_model(saved: dict, config: Config) -> tuple[str, object, object] | None:
    """The first of model_differences; None if there is none."""
    return next(iter(model_differences(saved, config)), None)


def model_mismatch(state: dict, config: Config, vocabs) -> tuple | None:
    """What makes a checkpoint's model another than `config`'s on `vocabs`: (key, saved,
    configured), ("vocabularies",) or None (the same model)."""
    if differs := other_model(state["config"], config):
        return differs
    if (state["src_vocab"], state["tgt_vocab"]) != tuple(v.model_bytes for v in vocabs):
        return ("vocabularies",)
    return None


def check_resumable(state: dict, config: Config, vocabs, data_hash: str, batches: dict, path):
    """A checkpoint resumes only the same model on the same vocabularies and training data,
    cut into the same batches (or the position in the epoch would mean other data)."""
    if mismatch := model_mismatch(state, config, vocabs):
        what = (
            f"on other vocabularies than those in {config.data_dir}/"
            if len(mismatch) == 1
            else "with another config ({}: {!r}, now {!r})".format(*mismatch)
        )
        raise UserError(f"{path} was trained {what}; pass --restart to train from scratch")
    training = state["training"]
    if training["data_sha256"] != data_hash:
        raise UserError(
            f"{path} was trained on other training data than {config.data_dir}/ holds now; "
            "pass --restart to train from scratch"
        )
    for key, saved in training["batching"].items():
        if saved != batches[key]:
            what = {"batch_tokens": "train.batch_tokens"}.get(
                key, "micro-batches per step (processes x train.accumulate)"
            )
            raise UserError(
                f"{path} was saved with {what} = {saved}, now {batches[key]}: the epoch would "
                "be cut into other batches and data skipped or repeated; resume with the same "
                "settings, or pass --restart to train from scratch"
            )


def restore_scaler(scaler: torch.amp.GradScaler, state: dict) -> None:
    """The gradient scaler's state from last.pt. A run saved without fp16 has none (its
    scaler was off): an fp16 run resumed from it starts from a fresh scale."""
    if state:
        scaler.load_state_dict(state)


class CutShort(Exception):
    """A signal during work that StopOnSignal.at_once lets it cut short (a validation)."""


class StopOnSignal:
    """SIGINT (Ctrl-C) and SIGTERM ask training to stop after the current step, save and exit;
    inside `at_once` (a validation: a minute or more on a real corpus) they stop the work at
    once. A second Ctrl-C stops at once; no file is harmed, since every file is written
    atomically."""

    def __enter__(self):
        self.received: int | None = None
        self.urgent = False
        self.previous = {}
        if threading.current_thread() is threading.main_thread():  # signals need the main one
            for number in (signal.SIGINT, signal.SIGTERM):
                self.previous[number] = signal.signal(number, self.handle)
        return self

    def handle(self, number, frame) -> None:
        if self.received is not None:
            raise KeyboardInterrupt
        self.received = number
        if self.urgent:
            raise CutShort

    @contextmanager
    def at_once(self) -> Iterator[None]:
        """Within, a signal (or one already received) raises CutShort at once, between two
        of torch's operations, instead of waiting for the end of the step."""
        if self.received is not None:
            raise CutShort
        self.urgent = True
        try:
            yield
        finally:
            self.urgent = False

    def __exit__(self, *exc) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)
