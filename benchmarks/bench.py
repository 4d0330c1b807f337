"""`make bench`: how fast seq2seq trains and decodes, against baselines measured in the same run.

    python benchmarks/bench.py [--quick] [--config config.yaml] [--out benchmarks] [key=value ...]
    python benchmarks/bench.py --machine    # only this machine's speed, in a few seconds
    python benchmarks/bench.py --decoding runs/numbers/best.pt   # only the decoding figures

Figures (every speed is reported with its baseline and their ratio, since absolute times on a
shared machine are noisy):

* train_tokens_per_s of our model and of torch.nn.Transformer with identical sizes, the same
  embeddings, output layer, batches and optimizer, both trained the way seq2seq/train.py trains
  on this device (train.precision's autocast, train.compile; train_comparison_mode says which:
  fp32 eager with the default config on a CPU, bf16 autocast on most GPUs); ratio
  train_speed_vs_nn_transformer; on CUDA, the allocator's peak memory of each
  (train_cuda_peak_memory_mib, nn_transformer_train_cuda_peak_memory_mib);
* greedy decoding of the numbers test split, sentences per second, with the key/value cache
  against the recompute-every-step loop, at batch 1 and batch 64; ratio
  decode_speedup_cached_vs_recompute (batch 64); the same on long outputs (a random-weight
  model decoding up to 64 tokens), where the cache matters most;
* seconds_to_99_exact_match: wall time of the config's training run to reach 99% greedy exact
  match on the valid split (validating every 100 steps; the trajectory is the same as with
  the config's own eval_every);
* train_flops_fraction_of_matmul_peak: achieved training GFLOP/s of a d_model=256 model
  against a 2048x2048 fp32 matmul on the same machine, in the same run;
* our translate() of the raw test sentences against the same model through each exported form
  (benchmarks/exports.py: CTranslate2 float32 and int8, transformers' generate, Argos
  Translate), greedy, at batch 64 and 1: sentences per second, ratios, and the share of
  outputs identical to ours;
* the translation service under load (benchmarks/serve_load.py): 2,000 one-sentence requests
  from 32 concurrent clients on loopback, with the torch and the CTranslate2 engine, calm and
  while 1,000 idle connections and a client sending poison are attached: requests/s, p50 and
  p99 latency, failed and mismatched answers, p99 under attack / calm, CTranslate2 / torch,
  against the translate command on the same file (serve_*);
* peak memory: resident set size of a training process and of an evaluation process, and of
  a process that only imports torch, for scale (on CUDA, see the comparison's allocator peaks).

To relate the figures to another machine, results.json also records this machine's speed:
a 2048x2048 fp32 matmul in GFLOP/s and the wall time of `python -c "import torch"`; --machine
measures just these two, so that anyone can compare their machine with the one in results.md.

--quick (CI's smoke test) trains for a few seconds instead of to 99%, decodes 100 sentences and
times each figure briefly. Results go to <out>/results.json and <out>/results.md.
"""

import argparse
import dataclasses
import json
import random
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from common import (
    cuda_peak_mib,
    machine,
    machine_speed,
    matmul_peak_flops,
    reset_cuda_peak,
    run_and_measure,
    save_results,
    synchronize,
)
from exports import exports_decoding
from serve_load import load_check
from torch import nn

from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import Config, DecodeConfig, ModelConfig, config_from_dict, load_config
from seq2seq.decoding.greedy import greedy_decode_cached, greedy_decode_recompute, max_lengths
from seq2seq.model.transformer import Embedding, Transformer
from seq2seq.support.device import autocast, autocast_dtype, cpu_computes_bf16
from seq2seq.support.paths import METRICS, text_files
from seq2seq.text.batching import source_tensor, token_batches
from seq2seq.text.dataset import TokenPairs
from seq2seq.text.parallel import load_split
from seq2seq.text.special import PAD
from seq2seq.text.vocab import Vocab, load_vocabs
from seq2seq.training.loss import batch_loss


class TorchTransformer(nn.Module):
    """torch.nn.Transformer between the same embeddings and output layer as our model, so the
    two differ only in the encoder-decoder body."""

    def __init__(self, cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int):
        super().__init__()
        self.src_embed = Embedding(src_vocab_size, cfg.d_model, cfg.max_positions, cfg.dropout)
        self.tgt_embed = Embedding(tgt_vocab_size, cfg.d_model, cfg.max_positions, cfg.dropout)
        with warnings.catch_warnings():  # "nested tensors are not used with norm_first"
            warnings.simplefilter("ignore", UserWarning)
            self.body = nn.Transformer(
                cfg.d_model, cfg.n_heads, cfg.enc_layers, cfg.dec_layers, cfg.d_ff, cfg.dropout,
                batch_first=True, norm_first=True,
            )  # fmt: skip
        self.generator = nn.Linear(cfg.d_model, tgt_vocab_size, bias=False)
        self.generator.weight = self.tgt_embed.tokens.weight

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        causal = torch.ones(tgt.size(1), tgt.size(1), dtype=torch.bool, device=tgt.device)
        out = self.body(
            self.src_embed(src), self.tgt_embed(tgt),
            tgt_mask=~causal.tril(), tgt_is_causal=True,  # torch: True = blocked
            src_key_padding_mask=src == PAD, tgt_key_padding_mask=tgt == PAD,
            memory_key_padding_mask=src == PAD,
        )  # fmt: skip
        return self.generator(out)


def training_batches(config: Config, count: int, batch_tokens: int) -> tuple[list, Vocab, Vocab]:
    """The first `count` training batches of the config's corpus as tensors; the vocabularies."""
    src_vocab, tgt_vocab = load_vocabs(config)
    pairs = TokenPairs(config.data_dir, "train")
    rng = np.random.default_rng(0)
    batches = token_batches(pairs.src_lengths, pairs.tgt_lengths, batch_tokens, rng)[:count]
    return [pairs.batch(batch) for batch in batches], src_vocab, tgt_vocab


@dataclasses.dataclass(frozen=True)
class Treatment:
    """How seq2seq/train.py runs a training step on a device: autocast to `dtype` (None: fp32;
    fp16 with a gradient scaler), the model compiled or not."""

    dtype: torch.dtype | None = None
    compiled: bool = False

    @classmethod
    def of(cls, config: Config, device) -> "Treatment":
        precision, on = config.train.precision, torch.device(device)
        dtype = autocast_dtype(precision, on, "train.precision", cpu_computes_bf16())
        return cls(dtype, config.train.compile)

    def __str__(self) -> str:
        precision = {None: "fp32", torch.bfloat16: "bf16 autocast", torch.float16: "fp16 autocast"}
        return f"{precision[self.dtype]}, {'compiled' if self.compiled else 'eager'}"


def time_training(
    model: nn.Module, batches: list[tuple], device, treatment: Treatment = Treatment()
) -> tuple[float, float | None]:
    """Seconds for one pass of AdamW steps over `batches` (after one warm-up step, which
    also compiles a compiled model), and the CUDA allocator's peak meanwhile (MiB; None off
    CUDA)."""
    device = torch.device(device)
    reset_cuda_peak(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler(device.type, enabled=treatment.dtype == torch.float16)
    step_model = torch.compile(model, dynamic=True) if treatment.compiled else model
    model.train()

    def step(batch):
        with autocast(device, treatment.dtype):
            loss = batch_loss(step_model, tuple(t.to(device) for t in batch), label_smoothing=0.0)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    step(batches[0])
    synchronize(device)
    start = time.perf_counter()
    for batch in batches:
        step(batch)
    synchronize(device)
    return time.perf_counter() - start, cuda_peak_mib(device)


def real_tokens(batches) -> int:
    return sum(int((src != PAD).sum() + (tgt_out != PAD).sum()) for src, _, tgt_out in batches)


def compare_training(config: Config, n_batches: int, rounds: int, device) -> dict:
    """Our model against nn.Transformer: same sizes, same initial embeddings, same batches,
    both trained as seq2seq/train.py would on `device` (precision, compile)."""
    batches, src_vocab, tgt_vocab = training_batches(config, n_batches, config.train.batch_tokens)
    treatment = Treatment.of(config, device)
    torch.manual_seed(0)
    models = {
        "ours": Transformer(config.model, len(src_vocab), len(tgt_vocab), pad_id=PAD).to(device),
        "nn_transformer": TorchTransformer(config.model, len(src_vocab), len(tgt_vocab)).to(device),
    }
    seconds: dict = {name: [] for name in models}
    peaks: dict = {name: [] for name in models}
    for _ in range(rounds):  # alternate, so that both see the same machine load
        for name, model in models.items():
            taken, peak = time_training(model, batches, device, treatment)
            seconds[name].append(taken)
            peaks[name].append(peak)
    tokens = real_tokens(batches)
    ours_tps = tokens / min(seconds["ours"])
    theirs_tps = tokens / min(seconds["nn_transformer"])
    result = {
        "train_comparison_mode": str(treatment),
        "train_tokens_per_s": ours_tps,
        "nn_transformer_train_tokens_per_s": theirs_tps,
        "train_speed_vs_nn_transformer": ours_tps / theirs_tps,
        "train_parameters": models["ours"].num_parameters(),
        "nn_transformer_parameters": sum(p.numel() for p in models["nn_transformer"].parameters()),
    }
    if torch.device(device).type == "cuda":
        result["train_cuda_peak_memory_mib"] = max(peaks["ours"])
        result["nn_transformer_train_cuda_peak_memory_mib"] = max(peaks["nn_transformer"])
    return result


def training_flops(cfg: ModelConfig, batch: tuple, tgt_vocab_size: int) -> float:
    """Multiply-add FLOPs of one training step (forward x 3: backward costs about twice the
    forward), counted on the padded tensors the step really computes on."""
    src, tgt_in, _ = batch
    b, s, t, d, f = src.size(0), src.size(1), tgt_in.size(1), cfg.d_model, cfg.d_ff
    encoder = cfg.enc_layers * b * s * (2 * 4 * d * d + 2 * 2 * d * f + 2 * 2 * s * d)
    decoder = (
        cfg.dec_layers
        * b
        * (
            t * (2 * 4 * d * d + 2 * 2 * d * f + 2 * 2 * t * d)  # self-attention and feed-forward
            + t * 2 * 2 * d * d
            + s * 2 * 2 * d * d
            + t * 2 * 2 * s * d  # cross-attention
        )
    )
    output = b * t * 2 * d * tgt_vocab_size
    return 3.0 * (encoder + decoder + output)


def flops_fraction(config: Config, n_batches: int, device) -> dict:
    cfg = config_from_dict(
        {"model": {**config.to_dict()["model"], "d_model": 256, "n_heads": 4, "d_ff": 1024}}
    ).model
    batches, src_vocab, tgt_vocab = training_batches(
        config, n_batches, 4 * config.train.batch_tokens
    )
    torch.manual_seed(0)
    model = Transformer(cfg, len(src_vocab), len(tgt_vocab), pad_id=PAD).to(device)
    seconds, _ = time_training(model, batches, device)
    achieved = sum(training_flops(cfg, b, len(tgt_vocab)) for b in batches) / seconds
    peak = matmul_peak_flops(device, seconds=max(1.0, seconds / 3))
    return {
        "train_gflops_d256": achieved / 1e9,
        "matmul_2048_gflops": peak / 1e9,
        "train_flops_fraction_of_matmul_peak": achieved / peak,
    }


def decode_speed(
    model: Transformer,
    sources: list[list[int]],
    batch_size: int,
    decode_cfg: DecodeConfig,
    cached: bool,
    limits_override: int | None = None,
    rounds: int = 3,
) -> tuple[float, float]:
    """Sentences per second (the best of `rounds` passes: other work on a shared machine only
    ever slows a pass down) and mean output length, decoding `sources` in length-sorted
    batches."""
    device = next(model.parameters()).device
    greedy = greedy_decode_cached if cached else greedy_decode_recompute
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    tensors = [source_tensor([sources[i] for i in batch]).to(device) for batch in batches]
    best = 0.0
    for _ in range(rounds):
        lengths = 0
        synchronize(device)
        start = time.perf_counter()
        for src in tensors:
            limits = max_lengths(model, src, decode_cfg)
            if limits_override is not None:
                limits = torch.full_like(limits, limits_override)
            lengths += sum(len(out) for out in greedy(model, src, limits))
        synchronize(device)
        best = max(best, len(sources) / (time.perf_counter() - start))
    return best, lengths / len(sources)


def decoding(checkpoint_path: Path, config: Config, n_sentences: int, device) -> dict:
    checkpoint = load_checkpoint(checkpoint_path, device)
    model, decode_cfg = checkpoint.model, config.decode
    test = load_split(config, "test")[:n_sentences]
    sources = checkpoint.src_vocab.encode([s for s, _ in test])
    result: dict = {"decode_sentences": len(sources)}
    for batch_size in (1, 64):
        cached, _ = decode_speed(model, sources, batch_size, decode_cfg, cached=True)
        recompute, length = decode_speed(model, sources, batch_size, decode_cfg, cached=False)
        result[f"decode_sentences_per_s_cached_batch{batch_size}"] = cached
        result[f"decode_sentences_per_s_recompute_batch{batch_size}"] = recompute
        result[f"decode_speedup_batch{batch_size}"] = cached / recompute
        result["decode_mean_output_pieces"] = length
    result["decode_speedup_cached_vs_recompute"] = result["decode_speedup_batch64"]

    # Long outputs: a random-weight model of the same shape rarely emits EOS, so it decodes
    # up to the limit of 64 pieces.
    torch.manual_seed(0)
    random_model = Transformer(checkpoint.config.model, 1000, 1000, pad_id=PAD).to(device).eval()
    long_sources = [[random.Random(i).randrange(4, 1000) for _ in range(12)] for i in range(64)]
    cached, length = decode_speed(random_model, long_sources, 64, decode_cfg, True, 64)
    recompute, _ = decode_speed(random_model, long_sources, 64, decode_cfg, False, 64)
    result.update(
        long_decode_mean_output_pieces=length,
        long_decode_sentences_per_s_cached_batch64=cached,
        long_decode_sentences_per_s_recompute_batch64=recompute,
        long_decode_speedup_cached_vs_recompute=cached / recompute,
    )
    return result


def train_to_target(config_path: str, overrides: list[str], quick: bool) -> tuple[dict, Path]:
    """Train the config (as `make train` would) in a subprocess, validating every 100 steps."""
    experiment = "bench-quick" if quick else "bench"
    extra = [f"experiment={experiment}", "train.eval_every=100"]
    if quick:
        extra += ["train.max_steps=100", "train.eval_every=50"]
    command = [sys.executable, "-m", "seq2seq.train", "--restart", "--config", config_path]
    command += [*overrides, *extra]
    seconds, peak = run_and_measure(command)
    config = load_config(config_path, [*overrides, *extra])
    log = [json.loads(line) for line in (config.run_dir / METRICS).read_text().splitlines()]

    def seconds_to(target: float) -> float | None:
        reached = [entry["elapsed_s"] for entry in log if entry["valid_exact_match"] >= target]
        return reached[0] if reached else None

    result = {
        "seconds_to_99_exact_match": seconds_to(0.99),
        "seconds_to_99_5_exact_match": seconds_to(0.995),
        "train_run_seconds": seconds,
        "train_run_steps": log[-1]["step"],
        "train_run_best_valid_exact_match": max(entry["valid_exact_match"] for entry in log),
        "train_peak_memory_mib": peak,
    }
    return result, config


def memory_of_evaluation(config_path: str, overrides: list[str], experiment: str) -> dict:
    _, eval_peak = run_and_measure(
        [sys.executable, "-m", "seq2seq.evaluate", "--config", config_path, *overrides,
         f"experiment={experiment}"]
    )  # fmt: skip
    _, torch_peak = run_and_measure([sys.executable, "-c", "import seq2seq.model.transformer"])
    return {"decode_peak_memory_mib": eval_peak, "import_torch_peak_memory_mib": torch_peak}


def markdown(results: dict) -> str:
    info = results["machine"]
    lines = [
        "# Benchmark results",
        "",
        f"{info['device_name']} ({info['device']}, {info['cpu_count']} cores, "
        f"{info['torch_threads']} torch threads; 2048x2048 fp32 matmul "
        f"{info['matmul_2048_gflops']} GFLOP/s, `import torch` {info['import_torch_seconds']} s), "
        f"torch {info['torch']}, Python {info['python']}, "
        f"{info['date']}, mode: {results['mode']}. Produced by `make bench` "
        "(`python benchmarks/bench.py`); every ratio compares figures measured in the same run.",
        "",
        "| figure | value |",
        "| --- | --- |",
    ]
    for key, value in results["figures"].items():
        shown = f"{value:,.3f}" if isinstance(value, float) else str(value)
        lines.append(f"| `{key}` | {shown} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke test of a few seconds each")
    parser.add_argument(
        "--machine", action="store_true", help="only measure this machine's speed and print it"
    )
    parser.add_argument(
        "--decoding", metavar="CHECKPOINT", help="only measure the decoding figures of CHECKPOINT"
    )
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--out", default="benchmarks", help="folder for results.json and .md")
    parser.add_argument("overrides", nargs="*", metavar="key.sub=value")
    args = parser.parse_args()
    config = load_config(args.config, args.overrides)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.machine:
        print(json.dumps({**machine(), **machine_speed(device)}, indent=2))
        return
    if args.decoding:
        print(json.dumps(decoding(Path(args.decoding), config, 1000, device), indent=2))
        return
    quick = args.quick

    figures: dict = {}
    print("training to the target ...", flush=True)
    result, run_config = train_to_target(args.config, args.overrides, quick)
    figures.update(result)
    figures.update(memory_of_evaluation(args.config, args.overrides, run_config.experiment))
    print("decoding ...", flush=True)
    figures.update(decoding(run_config.checkpoint_path, config, 100 if quick else 1000, device))
    print("decoding with each exported form (benchmarks/exports.py) ...", flush=True)
    test = [s for s, _ in load_split(config, "test")[: 100 if quick else 1000]]
    figures.update(exports_decoding(run_config.checkpoint_path, test))
    print("the translation service under load (benchmarks/serve_load.py) ...", flush=True)
    source = text_files(config.data_dir, "test")[0]
    figures.update(load_check(run_config.checkpoint_path, source, quick, args.config))
    print(f"training speed against nn.Transformer ({Treatment.of(config, device)}) ...", flush=True)
    figures.update(compare_training(config, 5 if quick else 40, 1 if quick else 3, device))
    print("FLOPs against the matmul peak ...", flush=True)
    figures.update(flops_fraction(config, 3 if quick else 20, device))

    info = {**machine(), **machine_speed(device)}
    results = {"mode": "quick" if quick else "full", "machine": info, "figures": figures}
    save_results(Path(args.out) / "results", results, markdown(results))


if __name__ == "__main__":
    main()
