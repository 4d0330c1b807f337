"""`make bench`: how fast seq2seq trains and decodes, against baselines measured in the same run.

    python -m benchmarks.speed.bench [--quick] [--config config.yaml] [--out DIR] [key=value ...]
    python -m benchmarks.speed.bench --machine    # only this machine's speed, in a few seconds
    python -m benchmarks.speed.bench --decoding runs/numbers/best.pt   # only the decoding figures

    train_to_target        the config trained to 99% valid exact match: seconds, peak RSS
    memory_of_evaluation   peak RSS of an evaluation, and of importing torch
    decoding               greedy, the key/value cache against recomputing, batch 1 and 64
    exports_decoding       the exported forms against ours (speed/exports.py)
    load_check             the service under load (service/load.py)
    compare_training, flops_fraction   ours against nn.Transformer; FLOP/s against a matmul's

Every speed comes with its baseline and their ratio, since absolute times on a shared machine
are noisy; benchmarks/README.md says what each figure measures. bench.json also records this
machine's speed (a 2048x2048 fp32 matmul's GFLOP/s, `import torch`'s seconds), which --machine
measures alone. --quick (CI's smoke test) trains for a few seconds instead of to 99%, decodes
100 sentences and times each figure briefly. -> <out>/bench.json and <out>/bench.md.
"""

import json
import random
import sys
from pathlib import Path

import torch

from benchmarks import common
from benchmarks.service.load import load_check
from benchmarks.speed.exports import exports_decoding
from benchmarks.speed.training import Treatment, compare_training, flops_fraction
from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import Config, DecodeConfig, load_config
from seq2seq.decoding.batches import in_length_order
from seq2seq.decoding.greedy import greedy_decode_cached, greedy_decode_recompute, max_lengths
from seq2seq.model.transformer import Transformer
from seq2seq.support.files import read_log
from seq2seq.support.paths import METRICS, text_files
from seq2seq.text.parallel import load_split
from seq2seq.tokens.special import PAD


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
    ever slows a pass down) and mean output length, decoding `sources` greedily in batches of
    similar length, as translation does (seq2seq.decoding.batches.in_length_order)."""
    greedy = greedy_decode_cached if cached else greedy_decode_recompute

    def search(src: torch.Tensor) -> list[list[int]]:
        limits = max_lengths(model, src, decode_cfg)
        if limits_override is not None:
            limits = torch.full_like(limits, limits_override)
        return greedy(model, src, limits).ids

    def translate(some: list[list[int]], _) -> list[list[int]]:  # called as an engine's
        return in_length_order(model, some, batch_size, search, [])

    passes = [common.timed_translation(translate, sources, None) for _ in range(rounds)]
    fastest, outputs = min(seconds for seconds, _ in passes), passes[-1][1]
    return len(sources) / fastest, sum(map(len, outputs)) / len(sources)


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


def train_to_target(config_path: str, overrides: list[str], quick: bool) -> tuple[dict, Config]:
    """Train the config (as `make train` would) in a subprocess, validating every 100 steps."""
    experiment = "bench-quick" if quick else "bench"
    extra = [f"experiment={experiment}", "train.eval_every=100"]
    if quick:
        extra += ["train.max_steps=100", "train.eval_every=50"]
    command = [sys.executable, "-m", "seq2seq.train", "--restart", "--config", config_path]
    command += [*overrides, *extra]
    ran = common.run(command)
    config = load_config(config_path, [*overrides, *extra])
    log = read_log(config.run_dir / METRICS)

    def seconds_to(target: float) -> float | None:
        return next((v["elapsed_s"] for v in log if v["valid_exact_match"] >= target), None)

    result = {
        "seconds_to_99_exact_match": seconds_to(0.99),
        "seconds_to_99_5_exact_match": seconds_to(0.995),
        "train_run_seconds": ran.seconds,
        "train_run_steps": log[-1]["step"],
        "train_run_best_valid_exact_match": max(entry["valid_exact_match"] for entry in log),
        "train_peak_memory_mib": ran.peak_mib,
    }
    return result, config


def memory_of_evaluation(config_path: str, overrides: list[str], experiment: str) -> dict:
    evaluate = [sys.executable, "-m", "seq2seq.evaluate", "--config", config_path, *overrides]
    eval_peak = common.run([*evaluate, f"experiment={experiment}"]).peak_mib
    torch_peak = common.run([sys.executable, "-c", "import seq2seq.model.transformer"]).peak_mib
    return {"decode_peak_memory_mib": eval_peak, "import_torch_peak_memory_mib": torch_peak}


def markdown(results: dict) -> str:
    info = results["machine"]
    about = (
        f"{common.with_speed(info)}, torch {info['torch']}, Python {info['python']}, "
        f"{info['date']}, mode: {results['mode']}. Produced by `make bench` "
        "(`python -m benchmarks.speed.bench`); every ratio compares figures measured in the same "
        "run."
    )
    figures = [
        [f"`{key}`", f"{value:,.3f}" if isinstance(value, float) else value]
        for key, value in results["figures"].items()
    ]
    return common.page(
        "Benchmark results", about, common.markdown_table(["figure", "value"], figures)
    )


def main() -> None:
    parser = common.arguments(
        __doc__, out=common.RESULTS, config="config.yaml", quick="seconds each: a smoke test"
    )
    parser.add_argument(
        "--machine", action="store_true", help="only measure this machine's speed and print it"
    )
    parser.add_argument(
        "--decoding", metavar="CHECKPOINT", help="only measure the decoding figures of CHECKPOINT"
    )
    parser.add_argument("overrides", nargs="*", metavar="key.sub=value")
    args = parser.parse_args()
    config = load_config(args.config, args.overrides)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.machine:
        print(json.dumps({**common.machine(), **common.machine_speed(device)}, indent=2))
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
    print("decoding with each exported form (benchmarks/speed/exports.py) ...", flush=True)
    test = [s for s, _ in load_split(config, "test")[: 100 if quick else 1000]]
    figures.update(exports_decoding(run_config.checkpoint_path, test))
    print("the translation service under load (benchmarks/service/load.py) ...", flush=True)
    source = text_files(config.data_dir, "test")[0]
    figures.update(load_check(run_config.checkpoint_path, source, quick, args.config))
    print(f"training speed against nn.Transformer ({Treatment.of(config, device)}) ...", flush=True)
    figures.update(compare_training(config, 5 if quick else 40, 1 if quick else 3, device))
    print("FLOPs against the matmul peak ...", flush=True)
    figures.update(flops_fraction(config, 3 if quick else 20, device))

    info = {**common.machine(), **common.machine_speed(device)}
    results = {"mode": "quick" if quick else "full", "machine": info, "figures": figures}
    common.save_results(args.out / "bench", results, markdown(results))


if __name__ == "__main__":
    main()
