"""From sentence pairs to padded tensors, in batches of similar lengths.

Each pair becomes three id sequences (BOS/EOS/PAD from seq2seq/tokens/special.py), padded into
tensors by `pair_tensors`, the one place batches are built (decoding's sources alone:
`source_tensor`):

    source          "three is three"  ->  [three, is, three, EOS]
    decoder input   "3 la 3"          ->  [BOS, 3, la, 3]      what the decoder sees
    decoder output                    ->  [3, la, 3, EOS]      what it must predict, one step ahead

Training batches are built by token count, not sentence count: a batch holds as many pairs
as fit in its budget of padded tokens (source + target). Sorting by length first keeps the
padding small; the batches are then shuffled, so each epoch sees them in a new order. The
sampler works on the arrays of sentence lengths alone (seq2seq/tokens/dataset.py holds the ids).

An optimizer step uses `train.batch_tokens` tokens in all. With gradient accumulation
(`train.accumulate`) and several processes (torchrun), they are split into
processes x accumulate micro-batches of batch_tokens / (processes x accumulate) tokens each.
"""

import functools
import queue
import threading

import numpy as np
import torch

from seq2seq.support.errors import UserError
from seq2seq.tokens.special import BOS, EOS, PAD


def padded(sequences, first: int | None = None, last: int | None = None) -> np.ndarray:
    """B id sequences -> (B, longest + extras) int64 array: each sequence, `first` before it
    and `last` after it where given, PAD on the right."""
    start = int(first is not None)
    longest = max(len(ids) for ids in sequences) + start + int(last is not None)
    array = np.full((len(sequences), longest), PAD, np.int64)
    for row, ids in enumerate(sequences):
        array[row, start : start + len(ids)] = ids
        if last is not None:
            array[row, start + len(ids)] = last
    if first is not None:
        array[:, 0] = first
    return array


def source_tensor(sources, eos: bool = True) -> torch.Tensor:
    """Source ids -> (B, S) with EOS closing every sentence (unless eos is False: a model
    trained without, model.source_eos)."""
    return torch.from_numpy(padded(sources, last=EOS if eos else None))


def pair_tensors(sources, targets, source_eos: bool = True) -> tuple[torch.Tensor, ...]:
    """Sentence pairs' ids -> the training batch: source (B, S) = ids + EOS (unless
    model.source_eos is false), decoder input (B, T) = BOS + ids, decoder output (B, T) = ids +
    EOS, PAD on the right. Each a contiguous tensor of its own (a pinned copy of a strided
    view would not reach a GPU asynchronously)."""
    tgt_in, tgt_out = padded(targets, first=BOS), padded(targets, last=EOS)
    return source_tensor(sources, source_eos), torch.from_numpy(tgt_in), torch.from_numpy(tgt_out)


def token_batches(
    src_lengths: np.ndarray, tgt_lengths: np.ndarray, batch_tokens: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """One epoch: arrays of pair indices, similar lengths together, in random order.

    src_lengths, tgt_lengths: (N,) pieces per sentence (without EOS / BOS). The pairs are
    sorted by source length, then target length, ties broken at random (so batches differ
    from epoch to epoch); each batch then takes as many of the next pairs as fit in
    batch_tokens padded tokens, counting EOS and BOS. A pair longer than batch_tokens still
    gets a batch of its own. Vectorised: the work in Python is per batch, not per pair.
    """
    order = np.lexsort((rng.random(len(src_lengths)), tgt_lengths, src_lengths))  # (N,)
    src = src_lengths[order].astype(np.int64) + 1  # + EOS, non-decreasing
    tgt = tgt_lengths[order].astype(np.int64) + 1  # + BOS (or EOS)
    window = batch_tokens // 2 + 1  # no batch holds more pairs: each costs >= 2 tokens
    batches, start = [], 0
    while start < len(order):
        end = min(start + window, len(order))
        # padded size of the batch order[start : start + k + 1], for every k in the window:
        # (k + 1) pairs x (longest source + longest target) so far
        longest_tgt = np.maximum.accumulate(tgt[start:end])
        cost = np.arange(1, end - start + 1) * (src[start:end] + longest_tgt)  # non-decreasing
        count = max(1, int(np.searchsorted(cost, batch_tokens, side="right")))
        batches.append(order[start : start + count])
        start += count
    return [batches[i] for i in rng.permutation(len(batches))]


def shard_steps(batches: list, per_step: int, rank: int, world: int) -> list[list]:
    """An epoch's micro-batches -> for each optimizer step, the micro-batches of process `rank`.

    Each step takes the next `per_step` (= processes x train.accumulate) micro-batches of the
    epoch; process r gets those at positions r, r + world, r + 2 world ... of them. So the
    processes' shares are disjoint and together cover every example once. The epoch's last
    step may be short: its largest micro-batches are halved until it has `per_step` of them,
    as every step does, so that every process has data and N processes split the step as
    one process with N times the accumulation does. (A last step of fewer pairs than
    processes is left out: its pairs wait for the next epoch.)
    """
    steps = [batches[start : start + per_step] for start in range(0, len(batches), per_step)]
    last = steps[-1]
    while len(last) < per_step and max(map(len, last)) > 1:
        largest = last.pop(max(range(len(last)), key=lambda i: len(last[i])))
        last += [largest[: len(largest) // 2], largest[len(largest) // 2 :]]
    if len(last) < world:
        steps.pop()
    return [step[rank::world] for step in steps]


class EpochSampler:
    """This process's micro-batches for each optimizer step, epoch after epoch.

    Epoch e's batches are token_batches(...) drawn with a generator seeded by (seed, e), so
    they follow from the seed alone: the sampler's whole state is (epoch, steps done in it),
    whatever the size of the corpus, and a resumed run rebuilds the same epoch.
    """

    def __init__(
        self, src_lengths, tgt_lengths, micro_tokens: int, per_step: int, world, seed: int
    ):
        self.lengths = (src_lengths, tgt_lengths)
        self.micro_tokens, self.per_step, self.world, self.seed = (
            micro_tokens,
            per_step,
            world,
            seed,
        )
        self.epoch, self.done = 0, 0  # epoch 0: none started yet
        self.steps: list[list[np.ndarray]] = []

    def _steps(self, epoch: int) -> list[list[np.ndarray]]:
        rng = np.random.default_rng([self.seed, epoch])
        batches = token_batches(*self.lengths, self.micro_tokens, rng)
        return shard_steps(batches, self.per_step, self.world.rank, self.world.size)

    @functools.cached_property
    def first_epoch_steps(self) -> int:
        """How many steps the first epoch has (the others differ by a step or two)."""
        return len(self.steps) if self.epoch == 1 else len(self._steps(1))

    def _build(self) -> None:
        self.steps = self._steps(self.epoch)
        if not self.steps:
            processes = self.world.size
            raise UserError(f"the training data has fewer pairs than the {processes} processes")

    def __iter__(self):
        return self

    def __next__(self) -> list[np.ndarray]:
        """-> this process's micro-batches of the next step (at least one)."""
        if self.epoch == 0 or self.done == len(self.steps):
            self.epoch, self.done = self.epoch + 1, 0
            self._build()
        self.done += 1
        return self.steps[self.done - 1]

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "done": self.done}

    def load_state_dict(self, state: dict) -> None:
        self.epoch, self.done = state["epoch"], state["done"]
        if self.epoch:
            self._build()


class Prefetcher:
    """Collates the next steps' micro-batches in a background thread, so that the training
    step never waits on Python: -> (tensors, sampler state after this step). `data` is the
    split's TokenPairs (seq2seq/tokens/dataset.py)."""

    def __init__(self, sampler: EpochSampler, data, device: torch.device, depth=2):
        self.sampler, self.data, self.pin = sampler, data, device.type == "cuda"
        self.queue: queue.Queue = queue.Queue(maxsize=depth)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._fill, daemon=True)
        self.thread.start()

    def _fill(self) -> None:
        try:
            for indices in self.sampler:
                tensors = [self.data.batch(i) for i in indices]
                if self.pin:  # page-locked memory: the copy to the GPU can overlap compute
                    tensors = [tuple(t.pin_memory() for t in batch) for batch in tensors]
                item = (tensors, self.sampler.state_dict())
                while not self.stopped.is_set():
                    try:
                        self.queue.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if self.stopped.is_set():
                    return
        except BaseException as error:  # handed to the training loop, which raises it
            self.queue.put((error, None))

    def __next__(self):
        item = self.queue.get()
        if isinstance(item[0], BaseException):
            raise item[0]
        return item

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()
