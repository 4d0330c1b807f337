"""From sentence pairs to padded tensors, in batches of similar lengths.

Each pair becomes three id sequences (BOS/EOS/PAD from seq2seq/vocab.py):

    source          "three is three"  ->  [three, is, three, EOS]
    decoder input   "3 la 3"          ->  [BOS, 3, la, 3]      what the decoder sees
    decoder output                    ->  [3, la, 3, EOS]      what it must predict, one step ahead

Training batches are built by token count, not sentence count: a batch holds as many pairs
as fit in its budget of padded tokens (source + target). Sorting by length first keeps the
padding small; the batches are then shuffled, so each epoch sees them in a new order.

An optimizer step uses `train.batch_tokens` tokens in all. With gradient accumulation
(`train.accumulate`) and several processes (torchrun), they are split into
processes x accumulate micro-batches of batch_tokens / (processes x accumulate) tokens each.
"""

import random

import torch

from seq2seq.vocab import BOS, EOS, PAD, Vocab

Example = tuple[list[int], list[int]]  # (source ids, target ids), no special tokens yet


def encode_pairs(pairs: list[tuple[str, str]], src_vocab: Vocab, tgt_vocab: Vocab) -> list[Example]:
    sources = src_vocab.encode([s for s, _ in pairs])
    targets = tgt_vocab.encode([t for _, t in pairs])
    return list(zip(sources, targets, strict=True))


def pad(sequences: list[list[int]]) -> torch.Tensor:
    """List of B id lists -> (B, longest) tensor, PAD on the right."""
    longest = max(len(seq) for seq in sequences)
    return torch.tensor([seq + [PAD] * (longest - len(seq)) for seq in sequences])


def source_tensor(sources: list[list[int]]) -> torch.Tensor:
    """Source ids -> (B, S) with EOS closing every sentence."""
    return pad([ids + [EOS] for ids in sources])


def collate(examples: list[Example]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """-> source (B, S), decoder input (B, T), decoder output (B, T)."""
    src = source_tensor([s for s, _ in examples])
    tgt_in = pad([[BOS] + t for _, t in examples])
    tgt_out = pad([t + [EOS] for _, t in examples])
    return src, tgt_in, tgt_out


def token_batches(
    examples: list[Example], batch_tokens: int, rng: random.Random
) -> list[list[int]]:
    """One epoch: lists of example indices, similar lengths together, in random order.

    Ties in length are broken randomly, so batches differ from epoch to epoch. A single pair
    longer than `batch_tokens` still gets a batch of its own.
    """
    order = sorted(
        range(len(examples)),
        key=lambda i: (len(examples[i][0]), len(examples[i][1]), rng.random()),
    )
    batches, current = [], []
    longest_src = longest_tgt = 0
    for index in order:
        src, tgt = examples[index]
        new_src, new_tgt = max(longest_src, len(src) + 1), max(longest_tgt, len(tgt) + 1)
        if current and (len(current) + 1) * (new_src + new_tgt) > batch_tokens:
            batches.append(current)
            current, new_src, new_tgt = [], len(src) + 1, len(tgt) + 1
        current.append(index)
        longest_src, longest_tgt = new_src, new_tgt
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches


def shard_steps(batches: list[list[int]], per_step: int, rank: int, world: int) -> list[list]:
    """An epoch's micro-batches -> for each optimizer step, the micro-batches of process `rank`.

    Each step takes the next `per_step` (= processes x train.accumulate) micro-batches of the
    epoch; process r gets those at positions r, r + world, r + 2 world ... of them. So the
    processes' shares are disjoint and together cover every example once. The epoch's last
    step may be short, and give a process no micro-batch at all.
    """
    return [
        batches[start : start + per_step][rank::world] for start in range(0, len(batches), per_step)
    ]
