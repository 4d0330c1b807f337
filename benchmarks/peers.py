"""`make bench-peers`: seq2seq against JoeyNMT 2.3.0, on the same machine, data and model size.

    python benchmarks/peers.py [--budget 360] [--out benchmarks] [--config config.yaml]
    python benchmarks/peers.py --quick      # 30 s of training each, 100 test sentences
    make bench-peers [PEERS_ARGS=--quick]   # installs JoeyNMT first if needed, then the above

Both toolkits run one after the other on this machine, on the same numbers corpus files
(data/numbers/{train,valid,test}.{src,tgt}, from `make data`), with whitespace-word
vocabularies (ours: sentencepiece `model_type: word`; JoeyNMT: `level: word`), the same model
(d_model 128, 4 heads, 2 + 2 layers, d_ff 512, pre-norm, dropout 0, target embedding tied to
the output layer, embeddings scaled by sqrt(d_model) and initialised N(0, d_model^-0.5)), the
same optimizer settings where JoeyNMT has them, and the same number of sentence pairs per
optimizer step. Figures, each side's and their ratios ours / JoeyNMT:

* training for the same wall-clock budget (--budget, default 360 s), validating every 100
  steps on the same 500 valid sentences (greedy, 500 at a time): the wall seconds from the
  start of the training process to the validation that first reaches 99% and 99.5% exact
  match (the detokenized greedy output equals valid.tgt; for JoeyNMT computed here from the
  <step>.hyps file each validation writes, and timed by when that file appears; for ours from
  runs/<experiment>/metrics.jsonl, timed by when its line appears), and peak RSS;
* greedy decoding of the first 1,000 test sentences with each model's best checkpoint (by
  valid exact match) at batch 64 and batch 1: sentences/s of the whole command (ours:
  `python -m seq2seq.translate --checkpoint ... < test.src`, on a copy of best.pt whose
  decode.batch_size is 64 or 1, since translate takes no overrides; JoeyNMT: `python -m
  joeynmt translate CONFIG < test.src`), its peak RSS and exact match against test.tgt; and
  sentences/s of the decoding alone, timed in-process around text-in, text-out translation
  of the loaded model (ours: seq2seq.decode.translate; JoeyNMT: a small driver run with its
  own Python that loads the model as its translate mode does and times joeynmt.prediction.
  predict, which batches, searches and detokenizes), after a warm-up on 16 sentences.

JoeyNMT's settings (written by this script to runs/<experiment>/joeynmt/train.yaml; the JSON
and Markdown list them): `batch_type: token` counts, for each sentence, the longer of source
+ EOS and target + BOS, times the sentences of the batch, and its batches are drawn in random
order without length bucketing; its batch_size is chosen so that an epoch has as many steps
as ours (the same sentence pairs and real tokens per step on average), by simulating both
samplers on the training lengths. Its schedulers have no cosine decay: it gets
`warmupinversesquareroot` with our peak, warmup and minimum, and its first update runs at the
peak rate (its scheduler only sets the rate after a step). AdamW with our betas and weight
decay, but on every parameter (ours: matrices only) and eps 1e-8 (ours 1e-9); label
smoothing, gradient clipping and per-token loss normalisation as ours; xavier_uniform for its
other matrices (ours: torch's default init). It keeps a checkpoint at every validation
(keep_best_ckpts: -1) so that the best by exact match can be decoded; the others are deleted
after training. Its greedy search has one length limit for all inputs: max_output_length is
max_len_a x (longest source + 1) + max_len_b over the valid and test sources (ours: per
sentence), because its default (1.5 x source length) cuts some correct outputs.

Workarounds for JoeyNMT 2.3.0 (its installed files are not changed): `translate -o FILE`
crashes (`args.n_best`), so its translations are read from stdout; the
`warmupexponentialdecay` scheduler crashes (no optimizer passed), so it is not used;
training is stopped at the budget with SIGINT (it saves and exits) and run with --skip-test.
If JoeyNMT does not validate within the budget (a --quick run on a busy machine), the
checkpoint it saves when stopped is decoded, for the timings only. A barely trained model
decodes up to the length limit, so a --quick run on a busy machine can take many minutes.
settings.load_average_1min_before in the JSON records the machine's load before each phase:
other work on the machine skews every figure.

JoeyNMT lives in its own virtual environment, benchmarks/.venv-joeynmt, installed by `make
bench-peers` with our torch pin: `pip install -c constraints.txt joeynmt==2.3.0
importlib-metadata` (JoeyNMT needs importlib-metadata without declaring it). Results go to
<out>/peers.json and <out>/peers.md (default: benchmarks/ for the full run, runs/peers-quick/
for --quick). Not run by CI.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
import yaml
from bench import machine, machine_speed, save_results

from seq2seq.batching import token_batches
from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.config import Config, load_config
from seq2seq.dataset import TokenPairs
from seq2seq.decode import translate
from seq2seq.errors import UserError, run_cli
from seq2seq.metrics import exact_match
from seq2seq.paths import METRICS, id_files, text_files

ROOT = Path(__file__).resolve().parent.parent
JOEY_PYTHON = ROOT / "benchmarks/.venv-joeynmt/bin/python"
TARGETS = {"99": 0.99, "99_5": 0.995}
BATCH_SIZES = (64, 1)
WARMUP_SENTENCES = 16
POLL_SECONDS = 0.2
GRACE_SECONDS = 60  # after the stop signal, before SIGKILL

# Run by JoeyNMT's Python: load the model as `joeynmt translate` does, time predict() alone.
JOEY_DRIVER = """
import json, sys, time
from joeynmt.config import load_config, parse_global_args
from joeynmt.prediction import predict, prepare

config_path, source_path, warmup = sys.argv[1], sys.argv[2], int(sys.argv[3])
batch_sizes = [int(size) for size in sys.argv[4].split(",")]
args = parse_global_args(load_config(config_path), rank=0, mode="translate")
model, _, _, data = prepare(args, rank=0, mode="translate")
with open(source_path, encoding="utf-8") as file:
    lines = [line.rstrip("\\n") for line in file]

def run(sentences, batch_size):
    data.reset_cache()
    for line in sentences:
        data.set_item(line)
    test_args = args.test._replace(batch_size=batch_size, batch_type="sentence")
    return predict(model=model, data=data, compute_loss=False, device=args.device, rank=0,
                   n_gpu=args.n_gpu, normalization="none", num_workers=args.num_workers,
                   args=test_args, autocast=args.autocast)[2]

result = {"parameters": sum(p.numel() for p in model.parameters()),
          "src_vocab_size": len(model.src_vocab), "tgt_vocab_size": len(model.trg_vocab)}
for batch_size in batch_sizes:
    run(lines[:warmup], batch_size)
    start = time.perf_counter()
    hypotheses = run(lines, batch_size)
    result[str(batch_size)] = {"seconds": time.perf_counter() - start, "hypotheses": hypotheses}
json.dump(result, sys.stdout)
"""


# ---------------------------------------------------------------- batches of the same size


def joey_batch_sizes(src_lengths: np.ndarray, tgt_lengths: np.ndarray, budget: int, order):
    """Sentences per batch of JoeyNMT 2.3.0's TokenBatchSampler (joeynmt/datasets.py) over
    `order`: a batch closes once (its sentence count) x (the longest of source + EOS and
    target + BOS of its sentences) reaches `budget`."""
    sizes, count, longest = [], 0, 0
    for cost in np.maximum(src_lengths[order] + 1, tgt_lengths[order] + 1).tolist():
        count, longest = count + 1, max(longest, cost)
        if longest * count >= budget:
            sizes.append(count)
            count, longest = 0, 0
    return sizes + [count] if count else sizes


def joey_budget_for_steps(src_lengths, tgt_lengths, steps: int, order) -> int:
    """The smallest JoeyNMT token batch_size whose epoch (in `order`) has at most `steps`
    batches: as many sentence pairs per step as `steps` batches per epoch."""
    low, high = 1, int(np.maximum(src_lengths, tgt_lengths).max() + 1) * len(src_lengths)
    while low < high:
        middle = (low + high) // 2
        if len(joey_batch_sizes(src_lengths, tgt_lengths, middle, order)) <= steps:
            high = middle
        else:
            low = middle + 1
    return low


def padded_tokens(src_lengths, tgt_lengths, batches) -> float:
    """Mean padded source + target tokens per batch (+ EOS, + BOS), our way of counting."""
    totals = [
        len(b) * (int(src_lengths[b].max()) + 1 + int(tgt_lengths[b].max()) + 1) for b in batches
    ]
    return float(np.mean(totals))


def batch_settings(config: Config) -> dict:
    """Our epoch's batches, and the JoeyNMT token batch_size with as many steps per epoch."""
    pairs = TokenPairs(config.data_dir, "train")
    src, tgt = pairs.src_lengths.astype(np.int64), pairs.tgt_lengths.astype(np.int64)
    ours = token_batches(src, tgt, config.train.batch_tokens, np.random.default_rng(0))
    order = np.random.default_rng(0).permutation(len(src))
    budget = joey_budget_for_steps(src, tgt, len(ours), order)
    sizes = joey_batch_sizes(src, tgt, budget, order)
    theirs = np.split(order, np.cumsum(sizes)[:-1])
    real = float((src + tgt + 2).sum())
    return {
        "ours_batch_tokens": config.train.batch_tokens,
        "joeynmt_batch_size_tokens": budget,
        "ours_steps_per_epoch": len(ours),
        "joeynmt_steps_per_epoch": len(theirs),
        "ours_pairs_per_step": len(src) / len(ours),
        "joeynmt_pairs_per_step": len(src) / len(theirs),
        "ours_real_tokens_per_step": real / len(ours),
        "joeynmt_real_tokens_per_step": real / len(theirs),
        "ours_padded_tokens_per_step": padded_tokens(src, tgt, ours),
        "joeynmt_padded_tokens_per_step": padded_tokens(src, tgt, theirs),
    }


# ---------------------------------------------------------------- JoeyNMT's configuration


def output_limit(config: Config) -> int:
    """One length limit for JoeyNMT's greedy search: ours for the longest valid/test source."""
    longest = max(
        len(line.split())
        for split in ("valid", "test")
        for line in text_files(config.data_dir, split)[0].read_text("utf-8").splitlines()
    )
    return int(config.decode.max_len_a * (longest + 1) + config.decode.max_len_b)


def joey_stack(config: Config, layers: int) -> dict:
    m = config.model
    return {
        "type": "transformer",
        "num_layers": layers,
        "num_heads": m.n_heads,
        "embeddings": {"embedding_dim": m.d_model, "scale": True, "dropout": m.dropout},
        "hidden_size": m.d_model,
        "ff_size": m.d_ff,
        "dropout": m.dropout,
        "layer_norm": "pre",
        "activation": "relu",
    }


def joey_config(
    config: Config, model_dir: Path, batch_size: int, max_output_length: int, eval_every: int
) -> dict:
    """JoeyNMT 2.3.0's YAML (as a dict) for the same corpus, model and training as `config`."""
    data, t, v = config.data_dir.resolve(), config.train, config.vocab
    side = {"level": "word", "max_length": config.model.max_positions, "voc_min_freq": 1}
    return {
        "name": "peers",
        "joeynmt_version": "2.3.0",
        "model_dir": str(model_dir.resolve()),
        "use_cuda": config.train.device != "cpu",
        "random_seed": t.seed,
        "data": {
            "train": str(data / "train"),
            "dev": str(data / "valid"),
            "test": str(data / "test"),
            "dataset_type": "plain",
            "src": {"lang": "src", "lowercase": v.lowercase, "voc_limit": v.src_size, **side},
            "trg": {"lang": "tgt", "lowercase": False, "voc_limit": v.tgt_size, **side},
        },
        "testing": {
            "batch_size": config.decode.batch_size,
            "batch_type": "sentence",
            "beam_size": 1,
            "max_output_length": max_output_length,
            "eval_metrics": ["sequence_accuracy"],
        },
        "training": {
            "optimizer": "adamw",
            "adam_betas": [0.9, 0.98],
            "learning_rate": t.lr,
            "learning_rate_min": t.min_lr,
            "learning_rate_warmup": t.warmup_steps,
            "scheduling": "warmupinversesquareroot",
            "weight_decay": t.weight_decay,
            "label_smoothing": t.label_smoothing,
            "clip_grad_norm": t.clip_norm,
            "loss": "crossentropy",
            "normalization": "tokens",
            "batch_size": batch_size,
            "batch_type": "token",
            "batch_multiplier": t.accumulate,
            "updates": t.max_steps,
            "epochs": 1000000,
            "validation_freq": eval_every,
            "logging_freq": eval_every,
            "early_stopping_metric": "loss",
            "keep_best_ckpts": -1,
            "shuffle": True,
            "overwrite": True,
            "num_workers": 0,
        },
        "model": {
            "initializer": "xavier_uniform",
            "bias_initializer": "zeros",
            "embed_initializer": "normal",
            "embed_init_weight": config.model.d_model**-0.5,
            "tied_embeddings": False,
            "tied_softmax": config.model.tie_embeddings,
            "encoder": joey_stack(config, config.model.enc_layers),
            "decoder": joey_stack(config, config.model.dec_layers),
        },
    }


def write_yaml(path: Path, content: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")
    return path


# ---------------------------------------------------------------- running and watching


def run_watched(
    command: list[str],
    log: Path,
    out: Path | None = None,
    stdin: Path | None = None,
    budget: float | None = None,
    stop: int = signal.SIGTERM,
    on_poll=None,
) -> tuple[float, float, int]:
    """Run `command` in the repository root: stdin from the file `stdin`, stdout to `out` (or
    with stderr to `log`). While it runs, call on_poll(seconds since the start); at `budget`
    seconds send it `stop`. -> (wall seconds, peak RSS in MiB, exit code)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TQDM_DISABLE="1")
    with ExitStack() as files:
        err = files.enter_context(open(log, "w"))
        stdout = files.enter_context(open(out, "w")) if out else err
        inp = files.enter_context(open(stdin or os.devnull, "rb"))
        start = time.perf_counter()
        process = subprocess.Popen(
            command, stdin=inp, stdout=stdout, stderr=err, env=env, cwd=ROOT
        )  # fmt: skip
        if budget is None and on_poll is None:
            _, status, usage = os.wait4(process.pid, 0)
            elapsed = time.perf_counter() - start
        else:
            status, usage, elapsed = watch(process, start, budget, stop, on_poll)
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped by os.wait4
    return elapsed, usage.ru_maxrss / 1024, process.returncode


def watch(process, start: float, budget, stop: int, on_poll) -> tuple:
    """Poll a running process until it exits; -> its os.wait4 status, rusage, wall seconds."""
    stopped_at = None
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        elapsed = time.perf_counter() - start
        if on_poll:
            on_poll(elapsed)
        if pid:
            return status, usage, elapsed
        if budget is not None and stopped_at is None and elapsed >= budget:
            process.send_signal(stop)
            stopped_at = elapsed
        elif stopped_at is not None and elapsed - stopped_at > GRACE_SECONDS:
            process.kill()
        time.sleep(POLL_SECONDS)


def check_exit(code: int, allowed: tuple, what: str, log: Path) -> None:
    if code not in allowed:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise UserError(f"{what} failed (exit code {code}); the end of {log}:\n{tail}")


def new_lines(path: Path, seen: int) -> list[str]:
    """The complete lines of a growing file after its first `seen` lines."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return []
    return text[: text.rfind("\n") + 1].splitlines()[seen:]


def seconds_to(curve: list[dict], target: float, clock: str = "wall_s") -> float | None:
    """Seconds (by `clock`) of the first validation whose exact match reaches `target`."""
    return next((v[clock] for v in curve if v["valid_exact_match"] >= target), None)


def curve_figures(curve: list[dict], wall: float, peak: float) -> dict:
    """Figures of a training run from its validations (each with wall_s, step, exact match)."""
    best = max(curve, key=lambda v: v["valid_exact_match"], default=None)
    last = curve[-1] if curve else None
    return {
        **{f"seconds_to_{name}": seconds_to(curve, t) for name, t in TARGETS.items()},
        "best_valid_exact_match": best and best["valid_exact_match"],
        "best_step": best and best["step"],
        "validated_steps": last and last["step"],
        "validated_steps_per_s": last and last["step"] / last["wall_s"],
        "train_run_seconds": wall,
        "train_peak_memory_mib": peak,
    }


# ---------------------------------------------------------------- training


def train_ours(args, config: Config, run: Path) -> dict:
    """`python -m seq2seq.train` for the budget (SIGTERM: it saves and exits), validations
    timed by when their line appears in metrics.jsonl."""
    log, metrics, curve = run / "logs/ours-train.log", config.run_dir / METRICS, []
    command = [sys.executable, "-m", "seq2seq.train", "--restart", "--config", args.config]
    command += [*args.overrides, f"experiment={config.experiment}"]
    command += [f"train.eval_every={args.eval_every}"]

    def poll(elapsed: float) -> None:
        for line in new_lines(metrics, len(curve)):
            entry = json.loads(line)
            keys = ("step", "valid_exact_match", "valid_loss", "lr", "elapsed_s")
            curve.append({"wall_s": elapsed, **{key: entry[key] for key in keys}})

    metrics.unlink(missing_ok=True)  # and best.pt: nothing of an earlier run
    config.checkpoint_path.unlink(missing_ok=True)
    wall, peak, code = run_watched(command, log, budget=args.budget, on_poll=poll)
    check_exit(code, (0, 128 + signal.SIGTERM), "our training", log)
    if not curve:
        raise UserError(f"our training did not validate within {args.budget:.0f} s (see {log})")
    own = {
        f"own_clock_seconds_to_{n}": seconds_to(curve, t, "elapsed_s") for n, t in TARGETS.items()
    }
    figures = curve_figures(curve, wall, peak)
    return {**figures, **own, "decoded_step": figures["best_step"], "curve": curve}


def train_joey(args, model_dir: Path, config_path: Path, valid_refs: list[str]) -> dict:
    """`python -m joeynmt train` for the budget (SIGINT: it saves and exits), validations
    timed by when their <step>.hyps file appears."""
    log = config_path.parent / "logs/joeynmt-train.log"
    command = [args.joeynmt_python, "-m", "joeynmt", "train", str(config_path), "--skip-test"]
    appeared: dict[int, float] = {}  # step -> wall seconds

    def poll(elapsed: float) -> None:
        for path in model_dir.glob("*.hyps") if model_dir.is_dir() else ():
            appeared.setdefault(int(path.stem), elapsed)

    shutil.rmtree(model_dir, ignore_errors=True)  # no <step>.hyps of an earlier run
    wall, peak, code = run_watched(
        command, log, budget=args.budget, stop=signal.SIGINT, on_poll=poll
    )
    check_exit(code, (0, 128 + signal.SIGINT), "JoeyNMT training", log)
    curve = [
        joey_validation(model_dir, step, appeared[step], valid_refs) for step in sorted(appeared)
    ]
    curve = [v for v in curve if v is not None]
    figures = curve_figures(curve, wall, peak)
    step = figures["best_step"] if curve else last_joey_step(model_dir, log)
    keep_only_checkpoint(model_dir, step)
    return {**figures, "decoded_step": step, "curve": curve}


def last_joey_step(model_dir: Path, log: Path) -> int:
    """The step of the checkpoint JoeyNMT saved when stopped (for a run too short to validate;
    its outputs are then decoded only to time them)."""
    latest = model_dir / "latest.ckpt"
    if not latest.is_symlink():
        raise UserError(f"JoeyNMT saved no checkpoint (see {log})")
    print(f"warning: JoeyNMT did not validate in time; decoding its {latest.resolve().name}")
    return int(latest.resolve().stem)


def joey_validation(model_dir: Path, step: int, wall: float, refs: list[str]) -> dict | None:
    """One validation of JoeyNMT: our exact match of its <step>.hyps (None if cut short),
    with its own sequence_accuracy, loss and learning rate from validations.txt."""
    hyps = (model_dir / f"{step}.hyps").read_text("utf-8").splitlines()
    if len(hyps) != len(refs):
        return None
    result = {"wall_s": wall, "step": step, "valid_exact_match": exact_match(hyps, refs)}
    for line in (model_dir / "validations.txt").read_text("utf-8").splitlines():
        fields = dict(field.split(": ", 1) for field in line.split("\t") if ": " in field)
        if int(fields["Steps"]) == step:
            result["joeynmt_sequence_accuracy"] = float(fields["sequence_accuracy"]) / 100
            result["valid_loss"], result["lr"] = float(fields["loss"]), float(fields["LR"])
    return result


def keep_only_checkpoint(model_dir: Path, step: int) -> None:
    """Delete every <N>.ckpt but <step>.ckpt (about 11 MB each)."""
    for path in model_dir.glob("*.ckpt"):
        if path.stem.isdigit() and int(path.stem) != step:
            path.unlink()


# ---------------------------------------------------------------- decoding


def command_figures(command: list[str], source: Path, refs: list[str], stem: Path) -> dict:
    """A translation command reading `source` on stdin: wall time, peak RSS, exact match."""
    log, out = stem.with_suffix(".log"), stem.with_suffix(".out")
    wall, peak, code = run_watched(command, log, out=out, stdin=source)
    check_exit(code, (0,), f"translation ({' '.join(command[1:4])} ...)", log)
    hyps = out.read_text("utf-8").splitlines()
    if len(hyps) != len(refs):
        raise UserError(f"{out}: {len(hyps)} lines for {len(refs)} inputs (see {log})")
    return {
        "command_sentences_per_s": len(refs) / wall,
        "command_seconds": wall,
        "command_peak_memory_mib": peak,
        "command_exact_match": exact_match(hyps, refs),
    }


def inprocess_figures(seconds: float, hyps: list[str], refs: list[str]) -> dict:
    return {
        "decode_sentences_per_s": len(refs) / seconds,
        "decode_seconds": seconds,
        "decode_exact_match": exact_match(hyps, refs),
    }


def checkpoint_with_batch_size(best: Path, batch_size: int) -> Path:
    """A copy of best.pt that decodes greedily `batch_size` sentences at a time (translate
    reads both from the checkpoint's config; it takes no overrides)."""
    checkpoint = load_checkpoint(best)
    checkpoint.config.decode.batch_size, checkpoint.config.decode.beam_size = batch_size, 1
    path = best.with_name(f"best.batch{batch_size}.pt")
    parts = (checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab, checkpoint.info)
    save_checkpoint(path, checkpoint.config, *parts)
    return path


def decode_ours(best: Path, source: Path, refs: list[str], logs: Path) -> dict:
    figures: dict = {}
    for size in BATCH_SIZES:
        command = [sys.executable, "-m", "seq2seq.translate", "--checkpoint"]
        command.append(str(checkpoint_with_batch_size(best, size)))
        figures[size] = command_figures(command, source, refs, logs / f"ours-batch{size}")
    checkpoint = load_checkpoint(best)
    model, vocabs = checkpoint.model, (checkpoint.src_vocab, checkpoint.tgt_vocab)
    sentences = source.read_text("utf-8").splitlines()
    for size in BATCH_SIZES:
        cfg = replace(checkpoint.config.decode, batch_size=size, beam_size=1)
        translate(model, *vocabs, sentences[:WARMUP_SENTENCES], cfg)
        start = time.perf_counter()
        hyps = translate(model, *vocabs, sentences, cfg)
        figures[size].update(inprocess_figures(time.perf_counter() - start, hyps, refs))
    return {
        **flatten_batches(figures),
        "parameters": checkpoint.model.num_parameters(),
        "src_vocab_size": len(checkpoint.src_vocab),
        "tgt_vocab_size": len(checkpoint.tgt_vocab),
    }


def decode_joey(args, joey_dir: Path, source: Path, refs: list[str]) -> dict:
    figures: dict = {}
    logs = joey_dir / "logs"
    for size in BATCH_SIZES:
        command = [args.joeynmt_python, "-m", "joeynmt", "translate"]
        command.append(str(joey_dir / f"translate-batch{size}.yaml"))
        figures[size] = command_figures(command, source, refs, logs / f"joeynmt-batch{size}")
    driver = joey_dir / "decode_driver.py"
    driver.write_text(JOEY_DRIVER, encoding="utf-8")
    sizes = ",".join(str(size) for size in BATCH_SIZES)
    command = [args.joeynmt_python, str(driver), str(joey_dir / "translate-batch64.yaml")]
    command += [str(source), str(WARMUP_SENTENCES), sizes]
    log, out = logs / "joeynmt-driver.log", logs / "joeynmt-driver.json"
    _, _, code = run_watched(command, log, out=out)
    check_exit(code, (0,), "the JoeyNMT decoding driver", log)
    timed = json.loads(out.read_text("utf-8"))
    for size in BATCH_SIZES:
        run = timed[str(size)]
        figures[size].update(inprocess_figures(run["seconds"], run["hypotheses"], refs))
    sizes_info = {key: timed[key] for key in ("parameters", "src_vocab_size", "tgt_vocab_size")}
    return {**flatten_batches(figures), **sizes_info}


def flatten_batches(figures: dict) -> dict:
    return {f"{key}_batch{size}": value for size, f in figures.items() for key, value in f.items()}


# ---------------------------------------------------------------- the report

# (figure, label, which is better); every figure is reported for both, with ours / JoeyNMT
ROWS = [
    ("seconds_to_99", "training: wall s from start to 99% valid exact match", "lower"),
    ("seconds_to_99_5", "training: wall s from start to 99.5% valid exact match", "lower"),
    ("best_valid_exact_match", "training: best valid exact match in the budget", "higher"),
    ("best_step", "training: step of that validation", ""),
    ("validated_steps", "training: steps at the last validation", ""),
    ("validated_steps_per_s", "training: steps per wall s (with start-up, validations)", "higher"),
    ("train_run_seconds", "training: wall s of the run (stopped at the budget)", ""),
    ("train_peak_memory_mib", "training: peak RSS, MiB", "lower"),
    ("decoded_step", "decoding: step of the checkpoint (best valid exact match)", ""),
    ("parameters", "parameters", ""),
    ("src_vocab_size", "source vocabulary", ""),
    ("tgt_vocab_size", "target vocabulary", ""),
]
DECODE_ROWS = [
    ("command_sentences_per_s", "whole command, sentences/s", "higher"),
    ("decode_sentences_per_s", "decoding alone, sentences/s", "higher"),
    ("command_exact_match", "test exact match (command)", "higher"),
    ("decode_exact_match", "test exact match (in-process)", "higher"),
    ("command_peak_memory_mib", "whole command, peak RSS, MiB", "lower"),
]
ROWS += [
    (f"{key}_batch{size}", f"batch {size}: {label}", better)
    for size in BATCH_SIZES
    for key, label, better in DECODE_ROWS
]

DIFFERENCES = [
    "learning rate: ours rises linearly over warmup_steps, then follows a cosine to min_lr at "
    "max_steps; JoeyNMT has no cosine schedule, so it gets warmupinversesquareroot (the same "
    "peak, warmup and floor; after the warmup the rate falls as 1/sqrt(step), faster than the "
    "cosine), and its first update runs at the peak rate (its scheduler sets the rate only "
    "after a step)",
    "AdamW: the same betas (0.9, 0.98) and weight decay, but JoeyNMT decays every parameter "
    "(ours: matrices only) and uses eps 1e-8 (ours 1e-9)",
    "initialisation: the same scaled N(0, d_model^-0.5) embeddings; other matrices "
    "xavier_uniform in JoeyNMT, torch's defaults in ours",
    "batches: ours sorts the pairs by length before cutting them into token budgets (little "
    "padding); JoeyNMT draws them in random order (no bucketing), so with the same pairs per "
    "step it computes on more padding",
    "greedy length limit: ours max_len_a x source length + max_len_b per sentence; JoeyNMT one "
    "limit for all (the same formula for the longest valid/test source); both stop when every "
    "sentence of the batch has ended",
    "decoding: ours reuses keys and values between steps (decode.cache); JoeyNMT's greedy search "
    "reruns the decoder over the whole prefix at each step",
    "validation, as configured for each: ours computes the valid loss and decodes the 500 "
    "sentences 500 at a time; JoeyNMT the same, in file order instead of length order",
    "JoeyNMT keeps a checkpoint at every validation (to decode the best by exact match), which "
    "costs it some disk time in training",
]


def ratios(ours: dict, theirs: dict) -> dict:
    result = {}
    for key, value in ours.items():
        other = theirs.get(key)
        if isinstance(value, int | float) and isinstance(other, int | float) and other:
            result[key] = value / other
    return result


def shown(value) -> str:
    if value is None:
        return "not reached"
    if isinstance(value, int):
        return f"{value:,}"
    return (
        f"{value:.3f}"
        if abs(value) < 10
        else f"{value:,.1f}"
        if abs(value) < 1000
        else f"{value:,.0f}"
    )


def markdown(results: dict) -> str:
    info, s, b = results["machine"], results["settings"], results["settings"]["batches"]
    lines = [
        "# seq2seq against JoeyNMT 2.3.0",
        "",
        f"{info['device_name']} ({info['device']}, {info['cpu_count']} cores, "
        f"{info['torch_threads']} torch threads; 2048x2048 fp32 matmul "
        f"{info['matmul_2048_gflops']} GFLOP/s), torch {info['torch']} for both, Python "
        f"{info['python']}, {info['date']}, mode: {results['mode']}. Produced by `make "
        "bench-peers` (`python benchmarks/peers.py`): each toolkit trained for "
        f"{s['budget_s']:.0f} s of wall time, one after the other, validating every "
        f"{s['eval_every']} steps on the {s['valid_sentences']} valid sentences, then decoding "
        f"the first {s['test_sentences']} test sentences greedily. Times to a target: lower is "
        "better, so a ratio below 1 means ours is faster.",
        "",
        "| figure | ours | JoeyNMT | ours / JoeyNMT | better |",
        "| --- | --- | --- | --- | --- |",
    ]
    ours, theirs, ratio = results["ours"], results["joeynmt"], results["ratios"]
    for key, label, better in ROWS:
        r = f"{ratio[key]:.3f}" if key in ratio else ""
        lines.append(
            f"| {label} | {shown(ours.get(key))} | {shown(theirs.get(key))} | {r} | {better} |"
        )
    lines += [
        "",
        "## Settings",
        "",
        f"* The same data and model: whitespace words, d_model {s['model']['d_model']}, "
        f"{s['model']['n_heads']} heads, {s['model']['enc_layers']} + "
        f"{s['model']['dec_layers']} layers, d_ff {s['model']['d_ff']}, pre-norm, dropout "
        f"{s['model']['dropout']}, tied target embedding and output layer.",
        f"* Batches: ours `train.batch_tokens` {b['ours_batch_tokens']} (padded source + "
        f"target tokens, length-sorted); JoeyNMT `batch_type: token`, `batch_size` "
        f"{b['joeynmt_batch_size_tokens']} (its count: sentences x the longest of source + EOS "
        "and target + BOS, random order), chosen for as many steps per epoch as ours: "
        f"{b['ours_pairs_per_step']:.1f} and {b['joeynmt_pairs_per_step']:.1f} pairs, "
        f"{b['ours_real_tokens_per_step']:.0f} and {b['joeynmt_real_tokens_per_step']:.0f} real "
        f"tokens, {b['ours_padded_tokens_per_step']:.0f} and "
        f"{b['joeynmt_padded_tokens_per_step']:.0f} padded tokens per step (ours, JoeyNMT).",
        f"* Optimizer: AdamW, peak learning rate {s['train']['lr']}, warmup "
        f"{s['train']['warmup_steps']} steps, floor {s['train']['min_lr']}, weight decay "
        f"{s['train']['weight_decay']}, label smoothing {s['train']['label_smoothing']}, "
        f"gradient norm clipped at {s['train']['clip_norm']}, loss averaged per target token.",
        f"* JoeyNMT greedy `max_output_length` {s['joeynmt_max_output_length']}; its YAML is "
        "in the JSON (`settings.joeynmt_config`).",
        "",
        "## Differences",
        "",
        *[f"* {difference}" for difference in DIFFERENCES],
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- main


def check_inputs(config: Config, joeynmt_python: str) -> None:
    for split in ("train", "valid", "test"):
        for path in (*text_files(config.data_dir, split), *id_files(config.data_dir, split, "src")):
            if not path.exists():
                raise UserError(f"{path} is missing: run `make data` first")
    if not Path(joeynmt_python).exists():
        raise UserError(
            f"no JoeyNMT Python at {joeynmt_python}: `make bench-peers` installs JoeyNMT 2.3.0 "
            "into benchmarks/.venv-joeynmt"
        )


def test_subset(config: Config, run: Path, count: int) -> tuple[Path, list[str]]:
    """The first `count` test sentences, written to <run>/test.src; their references."""
    src, tgt = text_files(config.data_dir, "test")
    sources = src.read_text("utf-8").splitlines()[:count]
    source = run / "test.src"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text("".join(line + "\n" for line in sources), encoding="utf-8")
    return source, tgt.read_text("utf-8").splitlines()[: len(sources)]


def write_translate_configs(joey: dict, joey_dir: Path, step: int) -> None:
    """translate-batch<N>.yaml: JoeyNMT's config decoding N sentences at a time with the
    checkpoint of `step`."""
    checkpoint = Path(joey["model_dir"]) / f"{step}.ckpt"
    for size in BATCH_SIZES:
        testing = {**joey["testing"], "batch_size": size, "load_model": str(checkpoint)}
        write_yaml(joey_dir / f"translate-batch{size}.yaml", {**joey, "testing": testing})


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 s each, 100 test sentences")
    parser.add_argument(
        "--budget", type=float, help="training seconds each (default 360; quick 30)"
    )
    parser.add_argument("--sentences", type=int, help="test sentences (default 1000; quick 100)")
    parser.add_argument(
        "--eval-every", type=int, help="steps between validations (default 100; quick 50)"
    )
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--joeynmt-python", default=str(JOEY_PYTHON), help="JoeyNMT's venv python")
    parser.add_argument(
        "--out", help="folder for peers.json and .md (default benchmarks; quick runs/peers-quick)"
    )
    parser.add_argument("overrides", nargs="*", metavar="key.sub=value")
    args = parser.parse_args(argv)
    quick = args.quick
    args.budget = args.budget or (30.0 if quick else 360.0)
    args.sentences = args.sentences or (100 if quick else 1000)
    args.eval_every = args.eval_every or (50 if quick else 100)
    args.out = args.out or ("runs/peers-quick" if quick else "benchmarks")
    args.experiment = "peers-quick" if quick else "peers"  # runs/<experiment>/
    args.joeynmt_python = str(Path(args.joeynmt_python).absolute())  # not resolve(): a venv
    return args


def prepare(args, config: Config) -> dict:
    """The settings of both sides; writes JoeyNMT's train.yaml and the test sentences."""
    batches = batch_settings(config)
    limit = output_limit(config)
    joey_dir = config.run_dir / "joeynmt"
    joey = joey_config(
        config, joey_dir / "model", batches["joeynmt_batch_size_tokens"], limit, args.eval_every
    )
    write_yaml(joey_dir / "train.yaml", joey)
    raw = config.to_dict()
    return {
        "budget_s": args.budget,
        "eval_every": args.eval_every,
        "test_sentences": args.sentences,
        "batches": batches,
        "joeynmt_max_output_length": limit,
        **{section: raw[section] for section in ("model", "train", "decode")},
        "joeynmt_config": joey,
        "differences": DIFFERENCES,
    }


def run_both(args, config: Config, settings: dict) -> tuple[dict, dict]:
    """Train ours, then JoeyNMT; decode with ours, then JoeyNMT. -> (ours, JoeyNMT) figures."""
    run, load = config.run_dir, {}
    joey_dir = run / "joeynmt"
    valid_refs = text_files(config.data_dir, "valid")[1].read_text("utf-8").splitlines()
    source, refs = test_subset(config, run, args.sentences)
    settings.update(valid_sentences=len(valid_refs), test_sentences=len(refs))
    print(f"training ours for {args.budget:.0f} s ...", flush=True)
    load["train_ours"] = os.getloadavg()[0]
    ours = train_ours(args, config, run)
    print(f"training JoeyNMT for {args.budget:.0f} s ...", flush=True)
    load["train_joeynmt"] = os.getloadavg()[0]
    theirs = train_joey(args, joey_dir / "model", joey_dir / "train.yaml", valid_refs)
    write_translate_configs(settings["joeynmt_config"], joey_dir, theirs["decoded_step"])
    print("decoding ...", flush=True)
    load["decode_ours"] = os.getloadavg()[0]
    ours.update(decode_ours(config.checkpoint_path, source, refs, run / "logs"))
    load["decode_joeynmt"] = os.getloadavg()[0]
    theirs.update(decode_joey(args, joey_dir, source, refs))
    settings["load_average_1min_before"] = load  # other work on the machine skews the figures
    return ours, theirs


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    config = load_config(args.config, [*args.overrides, f"experiment={args.experiment}"])
    check_inputs(config, args.joeynmt_python)
    settings = prepare(args, config)
    ours, theirs = run_both(args, config, settings)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    results = {
        "mode": "quick" if args.quick else "full",
        "machine": {**machine(), **machine_speed(device)},
        "settings": settings,
        "ours": ours,
        "joeynmt": theirs,
        "ratios": ratios(ours, theirs),
    }
    save_results(Path(args.out) / "peers", results, markdown(results))


if __name__ == "__main__":
    run_cli(main)
