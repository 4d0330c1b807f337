"""What training shows while it runs: a progress bar on a terminal (or a line every 30 s in a
log file), and the steps' losses and tokens per second since the last validation."""

import math
import sys
import time
from dataclasses import dataclass, field

import torch
from tqdm import tqdm

from seq2seq.support.errors import say


class Report:
    """Progress on stderr: a bar on a terminal; elsewhere (a log file, CI, nohup) a line at the
    first step and then one every `every` seconds, instead of a bar redrawn several times a
    second."""

    def __init__(
        self, total: int, initial: int, enabled: bool, budget_s: float = 0.0, every: float = 30.0
    ):
        self.terminal = enabled and sys.stderr.isatty()
        self.enabled, self.every, self.total, self.budget_s = enabled, every, total, budget_s
        self.last_line = self.last_postfix = -math.inf  # the first step is shown
        self.bar = tqdm(
            total=total, initial=initial, desc="train", unit="step", mininterval=0.5,
            disable=not self.terminal,
        )  # fmt: skip

    def update(
        self, step: int, loss: torch.Tensor | float, lr: float, tokens_per_s: float,
        elapsed_s: float = 0.0,
    ) -> None:  # fmt: skip
        """`loss` may still be computing on the GPU: it is read (waiting for it) only when
        shown, at most twice a second on a terminal, every `every` seconds elsewhere. With a
        time budget, the time left of it shows too."""
        self.bar.update(1)
        now = time.perf_counter()
        left = {"left": minutes_seconds(self.budget_s - elapsed_s)} if self.budget_s else {}
        if self.terminal and now - self.last_postfix >= self.bar.mininterval:
            self.last_postfix = now
            self.bar.set_postfix(
                loss=f"{float(loss):.3f}", lr=f"{lr:.2e}", tok_s=f"{tokens_per_s:,.0f}", **left,
                refresh=False,
            )  # fmt: skip
        if self.enabled and not self.terminal and now - self.last_line >= self.every:
            self.last_line = now
            say(
                f"step {step:,}/{self.total:,}  loss {float(loss):.3f}  lr {lr:.2e}  "
                f"{tokens_per_s:,.0f} tokens/s" + (f"  {left['left']} left" if left else "")
            )

    def write(self, line: str) -> None:
        if self.enabled:
            self.bar.write(line)

    def close(self) -> None:
        self.bar.close()


def minutes_seconds(seconds: float) -> str:
    """12:05 for 725 s (0:00 once past)."""
    minutes, seconds = divmod(max(0, round(seconds)), 60)
    return f"{minutes}:{seconds:02d}"


@dataclass
class Throughput:
    """The steps since the last validation: their losses, kept on the device (reading each
    one would make the host wait for the GPU at every step) and read once, at the next
    validation or stop; their tokens per second."""

    first_step: int  # the step of losses[0]
    losses: list[torch.Tensor] = field(default_factory=list)  # 0-dim, one per step
    tokens: int = 0
    start: float = field(default_factory=time.perf_counter)

    def add(self, loss: torch.Tensor, tokens: int) -> None:
        self.losses.append(loss)
        self.tokens += tokens

    def read_losses(self) -> list[float]:
        """The losses of these steps, read off the device at once."""
        return torch.stack(self.losses).tolist() if self.losses else []

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / max(1e-9, time.perf_counter() - self.start)
