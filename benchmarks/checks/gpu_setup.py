"""What every check of make gpu-check (gpu_check.py) shares: the recipe, the sizes of a full
and a quick run, the device, how a check says it cannot run here (Skip) and its problems."""

from dataclasses import dataclass

import torch

from benchmarks.common import ROOT
from seq2seq.config import Config, load_config

RECIPE = ROOT / "configs/numbers_gpu.yaml"


@dataclass(frozen=True)
class Sizes:
    budgets: tuple[int, ...]  # train.batch_tokens of the training checks
    steps: int  # of each training check; validations (and meters) every steps / 3
    resume_steps: int  # the resume check's runs (stopped at 3/4 of it)
    ddp_steps: int
    compare_batches: int  # compare_training's batches and rounds
    compare_rounds: int
    attention_lengths: tuple[int, ...]  # odd source lengths
    overrides: tuple[str, ...] = ()  # on top of the recipe


FULL = Sizes((6000, 24000, 96000), 300, 200, 100, 40, 3, (1, 3, 5, 7, 13, 31, 63, 127))
QUICK = Sizes(
    (300, 600, 1200), 30, 20, 10, 3, 1, (1, 3, 7, 13),
    ("corpus.train_size=2000", "corpus.valid_size=100", "corpus.test_size=200",
     "model.d_model=32", "model.n_heads=2", "model.enc_layers=1", "model.dec_layers=1",
     "model.d_ff=64", "train.warmup_steps=10"),
)  # fmt: skip


class Skip(Exception):
    """This check cannot run here; the message says why."""


def problems(*checks: tuple[bool, str]) -> list[str]:
    """A check's problems: the message of each (holds, message) that does not hold."""
    return [message for holds, message in checks if not holds]


@dataclass
class Setup:
    """What every check shares: the device, the sizes, the recipe and the scratch folder
    (the current directory while the checks run)."""

    device: torch.device
    quick: bool
    sizes: Sizes

    def config(self, *overrides: str) -> Config:
        return load_config(RECIPE, self.overrides(*overrides))

    def overrides(self, *more: str) -> list[str]:
        return [*self.sizes.overrides, f"train.device={self.device}", *more]

    def command_config(self, *more: str) -> list[str]:
        """--config and overrides for a `python -m seq2seq.<command>` subprocess."""
        return ["--config", str(RECIPE), *self.overrides(*more)]

    @property
    def on_cuda(self) -> bool:
        return self.device.type == "cuda"
