"""`make bench-train`: training tokens per second of a config's model on this machine, under
each setting (the CPU levers of docs/training-speed.md unless --setting is given), in
alternating rounds (so a busy moment of the machine falls on all of them alike) ->
benchmarks/results/train_speed.{json,md}; --bleu-steps N: what each setting does to the model,
each trained N steps from scratch (the same seed) to its valid BLEU ->
benchmarks/results/train_bleu.{json,md};
--profile: where one setting's step spends its time (torch.profiler's table on stdout).

    python -m benchmarks.speed.train_speed --config configs/multi30k_de_en.yaml
    python -m benchmarks.speed.train_speed --setting fp32 train.precision=fp32 \
        --setting bf16 train.precision=bf16
    python -m benchmarks.speed.train_speed --profile --setting bf16 train.precision=bf16
    python -m benchmarks.speed.train_speed --bleu-steps 1000 --setting fp32 train.precision=fp32 ...

A setting is a name and config overrides. Each round runs every setting for --steps steps
after --warmup untimed ones (which also compile a compiled model: their time is reported),
in a process of its own,
on the same batches (the config's seed), the whole step as training runs it
(seq2seq/train.py's train_step: forward, backward, clip, AdamW); tokens are source and target
tokens without padding, as the training log counts them.
"""

import concurrent.futures
import multiprocessing
import os
import resource
import shlex
import statistics
from pathlib import Path
from unittest import mock

from benchmarks import common
from seq2seq import data
from seq2seq.config import load_config
from seq2seq.support.device import with_allocator
from seq2seq.support.errors import run_cli
from seq2seq.support.files import read_log
from seq2seq.support.paths import METRICS
from seq2seq.tokens.batching import Prefetcher
from seq2seq.train import start_process, train, train_step
from seq2seq.training.run import set_up

OUT = common.RESULTS / "train_speed"
BLEU_OUT = common.RESULTS / "train_bleu"
# The joint vocabulary at 6,000 pieces instead of 10,000: data of its own (built first, below).
SMALL_VOCABULARY = ["corpus.name=multi30k_de_en_v6k", "vocab.src_size=6000"]
LEVERS = [  # the first is the base the others are compared with
    ["fp32", "train.precision=fp32"],
    ["fp32, glibc's allocator", "train.precision=fp32", "train.allocator=system"],
    ["bf16", "train.precision=bf16"],
    ["bf16, glibc's allocator", "train.precision=bf16", "train.allocator=system"],
    ["bf16, mimalloc", "train.precision=bf16", "train.allocator=mimalloc"],
    ["bf16, oneDNN keeps 1,024 kernels", "train.precision=bf16", "train.onednn_kernels=1024"],
    ["bf16, 1 thread", "train.precision=bf16", "train.threads=1"],
    ["bf16, batch 2,000", "train.precision=bf16", "train.batch_tokens=2000"],
    ["bf16, batch 8,000", "train.precision=bf16", "train.batch_tokens=8000"],
    ["bf16, no activation dropout", "train.precision=bf16", "model.activation_dropout=0"],
    ["bf16, vocabulary 6,000", "train.precision=bf16", *SMALL_VOCABULARY],
    ["bf16, compiled", "train.precision=bf16", "train.compile=true"],
]
# the same arithmetic: --bleu-steps skips them
SPEED_ONLY = {
    "fp32, glibc's allocator", "bf16, glibc's allocator", "bf16, mimalloc",
    "bf16, oneDNN keeps 1,024 kernels",
    "bf16, 1 thread", "bf16, compiled",
}  # fmt: skip


class Steps:
    """A fresh run of the config with these overrides, stepping as training does."""

    def __init__(self, config_path: str, overrides: list[str]):
        config = load_config(config_path, overrides)
        world, device = start_process(config)
        self.run = set_up(config, world, device)
        self.batches = Prefetcher(self.run.sampler, self.run.data, device)
        self.run.model.train()

    def take(self, count: int) -> int:
        """`count` steps; their tokens."""
        tokens = 0
        for _ in range(count):
            loss, step_tokens = train_step(self.run, next(self.batches)[0], self.run.train_cfg.lr)
            tokens += step_tokens
        float(loss)  # wait for the device
        return tokens

    def close(self) -> None:
        self.batches.close()


def timed_steps(config_path: str, overrides: list[str], warmup: int, steps: int) -> dict:
    """Tokens/s of `steps` training steps after `warmup` untimed ones, from a fresh run."""
    run = Steps(config_path, overrides)
    try:
        warmup_s, _ = common.timed(run.take, warmup)
        seconds, tokens = common.timed(run.take, steps)
    finally:
        run.close()
    peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    return {"tokens_per_s": tokens / seconds, "warmup_s": warmup_s, "peak_rss_mib": peak_rss_mib}


def in_own_process(function, config_path: str, overrides: list[str], *args):
    """function(config_path, overrides, *args) in a new process: what a setting changes of the
    process (torch's threads, compiled code) ends with it, and it starts with the setting's
    train.allocator preloaded, as `python -m seq2seq.train` does."""
    spawn = multiprocessing.get_context("spawn")
    allocator = load_config(config_path, overrides).train.allocator
    preloaded = with_allocator(allocator, dict(os.environ)) or {}  # spawn copies os.environ
    pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn)
    with mock.patch.dict(os.environ, preloaded), pool:
        return pool.submit(function, config_path, overrides, *args).result()


def profile(config_path: str, overrides: list[str], warmup: int, steps: int) -> None:
    """torch.profiler's table of `steps` steps after `warmup`, by operator, self CPU time."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    run = Steps(config_path, overrides)
    try:
        run.take(warmup)
        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            run.take(steps)
    finally:
        run.close()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))


def trained(config_path: str, overrides: list[str], steps: int, experiment: str) -> dict:
    """Train the config with `overrides` for `steps` steps from scratch (runs/<experiment>/) ->
    the validation at its end and the training minutes."""
    run = [f"experiment={experiment}", f"train.max_steps={steps}", f"train.eval_every={steps}",
           "train.average_last=0", "train.max_minutes=0"]  # fmt: skip
    config = load_config(config_path, [*overrides, *run])
    train(config, restart=True)
    last = read_log(config.run_dir / METRICS)[-1]
    return {
        "valid_bleu": last["valid_bleu"],
        "valid_loss": last["valid_loss"],
        "minutes": last["elapsed_s"] / 60,
    }


def named(setting: dict) -> list[str]:
    """A table row's first two cells: the setting's name and its overrides."""
    return [setting["name"], " ".join(f"`{o}`" for o in setting["overrides"]) or "(the config's)"]


def bleu_table(results: dict) -> str:
    info, steps = results["machine"], results["steps"]
    header = ["setting", "overrides", f"valid BLEU at step {steps:,}", "valid loss",
              "training minutes"]  # fmt: skip
    rows = [
        [*named(s), f"{s['valid_bleu']:.2f}", f"{s['valid_loss']:.3f}", f"{s['minutes']:.1f}"]
        for s in results["settings"]
    ]
    return common.markdown_table(header, rows) + (
        f"\n\n`{results['config']}` trained {steps:,} steps from scratch under each setting (the "
        f"same seed, the schedule laid over those steps, no averaging); {common.on_machine(info)}\n"
    )


def table(results: dict) -> str:
    settings, info = results["settings"], results["machine"]
    base = settings[0]["name"]
    base_speed = statistics.median(settings[0]["tokens_per_s"])
    header = ["setting", "overrides", f"tokens/s (median of {results['rounds']})", "rounds",
              f"x {base}", "peak RSS", "warm-up s"]  # fmt: skip
    rows = []
    for s in settings:
        median, cells = common.median_and_rounds(s["tokens_per_s"], ",.0f")
        rss, warmup = max(s["peak_rss_mib"]) / 1024, max(s["warmup_s"])
        rows.append(
            [*named(s), cells, f"{median / base_speed:.2f}", f"{rss:.2f} GiB", f"{warmup:.0f}"]
        )
    return common.markdown_table(header, rows) + (
        f"\n\n`{results['config']}`, {results['warmup']} untimed then {results['steps']} timed "
        f"steps a round (peak RSS: the largest of the rounds' processes); "
        f"{info['device_name']}, {info['cpu_count']} cores, "
        f"{info['torch_threads']} torch threads, torch {info['torch']}, {info['date'][:10]}.\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = common.arguments(__doc__, out=None, config="configs/multi30k_de_en.yaml")
    parser.add_argument(
        "--setting", nargs="+", action="append", metavar=("NAME", "OVERRIDE"),
        help="a name and its config overrides (repeat for each setting; the first is the base)",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--profile", action="store_true", help="profile the first setting")
    parser.add_argument("--bleu-steps", type=int, help="train each setting so long: its BLEU")
    parser.add_argument("--data-args", default="", help="overrides for building each setting's "
                        "data, in one string (e.g. corpus.base_url=file:///mirror)")  # fmt: skip
    args = parser.parse_args(argv)
    settings = [
        {"name": s[0], "overrides": s[1:], "tokens_per_s": [], "warmup_s": [], "peak_rss_mib": []}
        for s in args.setting or LEVERS
        if args.setting or not (args.bleu_steps and s[0] in SPEED_ONLY)
    ]
    build_data(args.config, settings, shlex.split(args.data_args))
    if args.profile:
        return profile(args.config, settings[0]["overrides"], args.warmup, args.steps)
    if args.bleu_steps:
        return bleu(args.config, settings, args.bleu_steps, args.out or BLEU_OUT)
    out = args.out or OUT
    for _ in range(args.rounds):
        for s in settings:
            speed = in_own_process(
                timed_steps, args.config, s["overrides"], args.warmup, args.steps
            )
            for key, value in speed.items():  # tokens_per_s, warmup_s, peak_rss_mib
                s[key].append(value)
            print(f"{s['name']}: {speed['tokens_per_s']:,.0f} tokens/s", flush=True)
    results = {
        "config": args.config, "machine": common.machine(), "rounds": args.rounds,
        "warmup": args.warmup, "steps": args.steps, "settings": settings,
    }  # fmt: skip
    common.save_results(out, results, table(results))


def build_data(config_path: str, settings: list[dict], data_args: list[str]) -> None:
    """`make data` for each setting's corpus and vocabulary (its corpus.* and vocab.* overrides);
    a no-op for data that is already built."""
    built = set()
    for s in settings:
        data_overrides = tuple(o for o in s["overrides"] if o.startswith(("corpus.", "vocab.")))
        if data_overrides not in built:
            data.main(["--config", config_path, *data_args, *data_overrides])
            built.add(data_overrides)


def bleu(config_path: str, settings: list[dict], steps: int, out: Path) -> None:
    for number, s in enumerate(settings):
        figures = in_own_process(
            trained, config_path, s["overrides"], steps, f"bench-train-bleu-{number}"
        )
        s.update(figures)
        print(f"{s['name']}: valid BLEU {figures['valid_bleu']:.2f}", flush=True)
    results = {"config": config_path, "machine": common.machine(), "steps": steps}
    results["settings"] = [
        {k: s[k] for k in ("name", "overrides", "valid_bleu", "valid_loss", "minutes")}
        for s in settings
    ]
    common.save_results(out, results, bleu_table(results))


if __name__ == "__main__":
    run_cli(main)
