"""A memory budget for training (train.max_memory_mib): measured at the start, kept by
splitting each step into more micro-batches, or refused at once with what it would take.

    the model and the data loaded -> one forward and backward of this run's two costliest
    micro-batches (most target tokens: the logits; longest pairs: attention), measured as the
    process's peak resident size (a GPU's: its peak reserved by torch)
      + the optimizer's state not made yet (AdamW: two numbers a weight)
      + a margin for what the steps add later (the allocator's free lists, oneDNN's kernels)
    -> fits: train with it | else: twice the micro-batches, each half the tokens, and measure
       again | not even one pair a micro-batch fits: a UserError now, not a swap storm or an
       out-of-memory kill an hour in

More micro-batches make the same optimizer step (the same tokens, the gradient summed over
them: train.py's micro_steps), a little slower. The weights are untouched: the trial's
gradients are dropped, and its random numbers (dropout) are put back.
"""

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from seq2seq.config import Config
from seq2seq.support.device import autocast
from seq2seq.support.errors import UserError
from seq2seq.tokens.batching import token_batches
from seq2seq.tokens.dataset import TokenPairs
from seq2seq.training.loss import batch_loss

MIB = 1 << 20
# what the steps after the first add to the measured trial, as a share of it. Measured on the
# hour recipe (Intel Xeon, tcmalloc): at 25% the estimate was 1,171 MiB in bf16 against a peak
# of 1,414 in 200 steps, and 1,290 MiB in fp32 against 1,146 over the hour; at 50%, both above
MARGIN = 0.5
STATUS = Path("/proc/self/status")


def within_memory(
    config: Config, model: torch.nn.Module, data: TokenPairs, dtype, device: torch.device, world
) -> tuple[Config, int]:
    """`config` with train.accumulate raised until a step's peak fits train.max_memory_mib,
    and the MiB it should take (the budget: `config` unchanged and 0)."""
    budget = config.train.max_memory_mib
    if not budget:
        return config, 0
    if device.type not in ("cpu", "cuda") or (device.type == "cpu" and not STATUS.exists()):
        raise UserError(
            f"train.max_memory_mib: memory is measured on Linux CPUs and on CUDA, not {device}"
        )
    state = 2 * sum(p.numel() * p.element_size() for p in model.parameters())  # AdamW's
    accumulate = config.train.accumulate
    while True:
        micro_tokens = max(1, config.train.batch_tokens // (world.size * accumulate))
        peak = trial_peak(config, model, data, micro_tokens, dtype, device)
        need = int((peak + state) * (1 + MARGIN)) // MIB
        if need <= budget:
            return replace(config, train=replace(config.train, accumulate=accumulate)), need
        if micro_tokens <= longest_pair(data):
            raise UserError(
                f"train.max_memory_mib={budget}: this model needs about {need} MiB on {device}, "
                f"even one sentence pair a micro-batch (train.accumulate={accumulate}); raise "
                "the budget or make the model smaller"
            )
        accumulate *= 2


def trial_peak(
    config: Config, model, data: TokenPairs, micro_tokens: int, dtype, device: torch.device
) -> int:
    """The peak memory in bytes of a forward and backward of the costliest micro-batches of
    `micro_tokens` tokens, with the model's gradients dropped after."""
    batches = token_batches(
        data.src_lengths, data.tgt_lengths, micro_tokens, np.random.default_rng(0)
    )
    most_targets = max(batches, key=lambda b: int(data.tgt_lengths[b].sum()))
    longest = max(batches, key=lambda b: int(data.src_lengths[b].max() + data.tgt_lengths[b].max()))
    reset_peak(device)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        for indices in (most_targets, longest):
            batch = tuple(t.to(device) for t in data.batch(indices))
            with autocast(device, dtype):
                loss = batch_loss(model, batch, config.train.label_smoothing, "sum")
            loss.backward()
    peak = peak_bytes(device)
    model.zero_grad(set_to_none=True)
    return peak


def longest_pair(data: TokenPairs) -> int:
    """The padded tokens of the longest pair: a micro-batch holds at least one."""
    return int((data.src_lengths + data.tgt_lengths).max()) + 2


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    else:  # Linux: "5" resets the process's VmHWM to its current resident size
        Path("/proc/self/clear_refs").write_text("5")


def peak_bytes(device: torch.device) -> int:
    """The process's peak resident size (CPU), or torch's peak reserved on the GPU, since
    reset_peak."""
    if device.type == "cuda":
        return torch.cuda.max_memory_reserved(device)
    return int(re.search(r"VmHWM:\s+(\d+) kB", STATUS.read_text()).group(1)) * 1024


def peak_memory(device: torch.device) -> dict:
    """The peak so far, for metrics.jsonl: {"peak_memory_mib": ...}, or {} where it is not
    measured (MPS, a CPU without Linux's /proc)."""
    if device.type == "cuda" or (device.type == "cpu" and STATUS.exists()):
        return {"peak_memory_mib": peak_bytes(device) // MIB}
    return {}
