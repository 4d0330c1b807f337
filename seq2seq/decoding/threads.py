"""How a service's cores decode a model CTranslate2 runs: how many batches at once (decoders,
each on a replica of the model: CTranslate2's inter_threads, and a decoder thread of the
service's batcher each) and how many threads each batch uses (intra_threads).

    serve.threads N > 0: N decoders of one thread each
    serve.threads 0 (the default): measured, for each model on each machine
      the cores this process may use (os.sched_getaffinity: a taskset's, a container's) shared
      by serve.workers
      -> each split of them, decoders x threads = cores
      -> the model's first MEASURED validation sentences (compute_types.validation), greedy,
         BATCH a batch (a service's), as many batches at once as decoders: sentences a second
         (wall clock)
      -> the fastest split (on a tie, fewer decoders: less memory), kept in the export
         (runs/<experiment>/best.ct2/threads.json: the figures, the choice, the machine, the
         cores, the compute type and the checkpoint's checksum): measured once
      a model with no validation split (a package, an export given with --model), or one
      core: one decoder of one thread

The split in force, and why, is in the engine's facts (serve's first lines, /info).
"""

import os
import time
from dataclasses import replace
from pathlib import Path

from seq2seq.config import Config, ServeConfig
from seq2seq.decoding.compute_types import BATCH, keep_record, kept_record, machine
from seq2seq.decoding.compute_types import validation as validation_pairs
from seq2seq.decoding.ctranslate2_engine import CTranslate2Engine, Split
from seq2seq.decoding.exported import made_from
from seq2seq.support.errors import say
from seq2seq.support.paths import EXPORT_THREADS


def cores(workers: int = 1) -> int:
    """The cores this process may use, shared by `workers` processes (at least one)."""
    return max(1, len(os.sched_getaffinity(0)) // workers)


def splits(count: int) -> list[tuple[int, int]]:
    """Every (decoders, threads) whose product is `count`, fewer decoders first."""
    return [(count // threads, threads) for threads in range(count, 0, -1) if count % threads == 0]


def service_split(settings: ServeConfig, measure=None) -> Split:
    """The split of a service's engine (`settings`: its serve section): serve.threads N, or
    `measure(count)`'s on the process's share of the cores (None: nothing to measure on)."""
    if settings.threads:
        return Split(settings.threads, 1, "serve.threads")
    count = cores(settings.workers)
    if count == 1:
        return Split(1, 1, "auto: one core")
    return (measure and measure(count)) or Split(1, 1, "auto: no validation split to measure on")


def checkpoint_split(folder: Path, config: Config, compute_type: str, count: int) -> Split | None:
    """The fastest split of `count` cores for the export in `folder` (in `compute_type`, on a
    CPU), measured on its validation sentences and kept in the export; None: it has none."""
    pairs = validation_pairs(config)
    if not pairs:
        return None
    path = folder / EXPORT_THREADS
    here = {"checkpoint_sha256": made_from(folder), "machine": machine("cpu", 0),
            "cores": count, "compute_type": compute_type}  # fmt: skip
    figures = kept_record(path, here)
    if figures is None:
        say(f"measuring how {count} cores decode it best (once): {path}")
        figures = measured(folder, config, compute_type, [s for s, _ in pairs], count)
        keep_record(path, {**here, "sentences": len(pairs), "figures": figures,
                           "chosen": fastest(figures)})  # fmt: skip
    decoders, threads = map(int, fastest(figures).split("x"))
    return Split(decoders, threads, f"auto: the fastest on {len(pairs)} validation sentences")


def fastest(figures: dict[str, float]) -> str:
    """The split ("DxT") of `figures` (sentences a second) decoding the most; on a tie, the one
    of fewer decoders (fewer replicas: less memory)."""
    return max(figures, key=lambda split: (figures[split], -int(split.split("x")[0])))


def measured(folder: Path, config: Config, compute_type: str, sources: list[str], count: int):
    """Each split of `count` cores: the sentences a second of the export in `folder` decoding
    `sources` greedily, BATCH a batch, `decoders` batches at once."""
    figures = {}
    for decoders, threads in splits(count):
        split = Split(decoders, threads)
        engine = CTranslate2Engine.load(folder, "cpu", compute_type, split=split)
        greedy = replace(config.decode, beam_size=1, batch_size=BATCH)
        engine.translate(sources[: BATCH * decoders], greedy)  # warm-up
        start = time.perf_counter()
        engine.translate(sources, greedy)  # CTranslate2 hands its batches to the decoders
        speed = len(sources) / (time.perf_counter() - start)
        figures[f"{decoders}x{threads}"] = round(speed, 1)
    return figures
