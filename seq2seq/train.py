"""`make train`: train the model of config.yaml and keep its best checkpoint.

    python -m seq2seq.train [--config config.yaml] [key.sub=value ...]

One step: a batch of about `train.batch_tokens` tokens, teacher-forced cross-entropy with
label smoothing (padding ignored), gradient clipping, an AdamW update. The learning rate
rises linearly for `warmup_steps`, then follows a cosine down to `min_lr` at `max_steps`.

Every `eval_every` steps the model is validated: loss on the valid split, and the exact
match and BLEU of its greedy translations. The best checkpoint by `train.best_metric` is
written atomically to runs/<experiment>/best.pt; each validation appends a line to
runs/<experiment>/metrics.jsonl.

Resuming: at each validation, and when stopped by Ctrl-C (SIGINT) or SIGTERM, the whole
training state goes to runs/<experiment>/last.pt: weights, optimizer, gradient scaler, step
and epoch, the batches of the current epoch and how many are done, the best result so far,
and every random state. Running the command again continues from it, exactly: on the CPU
the parameters end bit-for-bit as if training had never stopped. `--restart` starts over.
"""

import json
import math
import random
import signal
import threading
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from seq2seq import distributed
from seq2seq.batching import collate, encode_pairs, shard_steps, token_batches
from seq2seq.checkpoint import read_state, save_checkpoint
from seq2seq.config import Config, TrainConfig, VocabConfig, add_config_arguments, load_config
from seq2seq.corpus import load_split
from seq2seq.decode import evaluating, translate
from seq2seq.distributed import World
from seq2seq.errors import Interrupted, UserError, command_parser, run_cli
from seq2seq.files import remove_stale_temporaries, write_lines
from seq2seq.metrics import exact_match, sacrebleu_scores
from seq2seq.model import Transformer
from seq2seq.vocab import PAD, Vocab, load_vocabs

LAST = "last.pt"  # the checkpoint training resumes from, in runs/<experiment>/


def learning_rate(step: int, cfg: TrainConfig) -> float:
    """Linear warmup to cfg.lr, then cosine decay to cfg.min_lr at cfg.max_steps."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(1, cfg.max_steps - cfg.warmup_steps)
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * min(progress, 1.0)))


def resolve_precision(precision: str, device: torch.device) -> torch.dtype | None:
    """The autocast dtype for train.precision on this device (None: plain fp32)."""
    if precision == "auto":
        on_gpu = device.type == "cuda" and torch.cuda.is_bf16_supported()
        precision = "bf16" if on_gpu else "fp32"
    if precision == "fp16" and device.type != "cuda":
        raise UserError("train.precision: fp16 needs a CUDA device; use bf16 or fp32")
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def make_optimizer(model: Transformer, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW; weight decay on matrices only (not on biases and LayerNorm gains). The fused
    implementation (one kernel for all parameters) where the device has it."""
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    vectors = [p for p in model.parameters() if p.dim() < 2]
    groups = [
        {"params": matrices, "weight_decay": cfg.weight_decay},
        {"params": vectors, "weight_decay": 0.0},
    ]
    fused = next(model.parameters()).device.type in ("cpu", "cuda")
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.98), eps=1e-9, fused=fused)


def batch_loss(
    model: torch.nn.Module,
    batch: tuple[torch.Tensor, ...],
    label_smoothing: float,
    reduction: str = "mean",
) -> torch.Tensor:
    """Cross-entropy of one (src, tgt_in, tgt_out) batch: the mean per target token, or with
    reduction="sum" the sum over them (padding never counts)."""
    src, tgt_in, tgt_out = batch
    logits = model(src, tgt_in)  # (B, T, V)
    return F.cross_entropy(
        logits.flatten(0, 1),
        tgt_out.flatten(),
        ignore_index=PAD,
        label_smoothing=label_smoothing,
        reduction=reduction,
    )


@torch.no_grad()
def validate(
    model: Transformer, config: Config, vocabs: tuple[Vocab, Vocab], pairs: list, device
) -> dict:
    """Per-token cross-entropy (no label smoothing) and greedy exact match on `pairs`."""
    src_vocab, tgt_vocab = vocabs
    examples = encode_pairs(pairs, src_vocab, tgt_vocab)
    total, tokens = 0.0, 0
    with evaluating(model):
        for indices in token_batches(examples, config.train.batch_tokens, random.Random(0)):
            batch = tuple(t.to(device) for t in collate([examples[i] for i in indices]))
            total += batch_loss(model, batch, 0.0, reduction="sum").item()
            tokens += int((batch[2] != PAD).sum())
        hypotheses = translate(model, src_vocab, tgt_vocab, [s for s, _ in pairs], config.decode)
    references = tgt_vocab.decode([t for _, t in examples])  # normalised like the hypotheses
    return {
        "valid_loss": total / tokens,
        "valid_exact_match": exact_match(hypotheses, references),
        "valid_bleu": sacrebleu_scores(hypotheses, references)["bleu"],
    }


def rank(result: dict, best_metric: str) -> tuple[float, float]:
    """Which validation is better: the higher train.best_metric (exact match or BLEU), then
    the lower loss; or the lower loss alone."""
    if best_metric == "loss":
        return -result["valid_loss"], 0.0
    return result[f"valid_{best_metric}"], -result["valid_loss"]


@dataclass
class Progress:
    """Where training stands: what resuming needs besides the weights and the optimizer."""

    step: int = 0
    epoch: int = 0
    batches: list[list[int]] = field(default_factory=list)  # this epoch's micro-batches
    next_batch: int = 0  # how many of this epoch's steps are done
    best: dict | None = None  # the best validation result so far
    validations_without_gain: int = 0
    stopped_early: bool = False  # by train.patience
    elapsed_s: float = 0.0  # training time before this run


def random_states(rng: random.Random, device: torch.device) -> dict:
    """Every random state training draws from: batch order (rng) and dropout (torch)."""
    states = {"python": rng.getstate(), "torch": torch.get_rng_state()}
    if device.type == "cuda":
        states["cuda"] = torch.cuda.get_rng_state(device)
    return states


def set_random_states(states: dict, rng: random.Random, device: torch.device) -> None:
    version, internal, gauss = states["python"]
    rng.setstate((version, tuple(internal), gauss))
    torch.set_rng_state(states["torch"].cpu())
    if device.type == "cuda" and "cuda" in states:
        torch.cuda.set_rng_state(states["cuda"].cpu(), device)


# What a checkpoint must share with the config to be resumed: the shape of the model and the
# vocabularies. (Dropout, attention backend, learning rate, max_steps ... may change.)
RESUME_KEYS = {
    "model": ["d_model", "n_heads", "enc_layers", "dec_layers", "d_ff", "tie_embeddings"],
    "vocab": list(asdict(VocabConfig())),
}


def check_resumable(
    state: dict, config: Config, vocabs: tuple[Vocab, Vocab], train_pairs: int, path
) -> None:
    """A checkpoint resumes only the same model on the same vocabularies and training data."""
    for section, keys in RESUME_KEYS.items():
        saved, now = state["config"].get(section, {}), asdict(getattr(config, section))
        for key in keys:
            if saved.get(key) != now[key]:
                raise UserError(
                    f"{path} was trained with another config ({section}.{key}: "
                    f"{saved.get(key)!r}, now {now[key]!r}); pass --restart to train from scratch"
                )
    if (state["src_vocab"], state["tgt_vocab"]) != tuple(v.model_bytes for v in vocabs):
        raise UserError(
            f"{path} was trained on other vocabularies than those in {config.data_dir}/; "
            "pass --restart to train from scratch"
        )
    saved_pairs = state["training"]["train_pairs"]
    if saved_pairs != train_pairs:
        raise UserError(
            f"{path} was trained on {saved_pairs:,} training pairs, {config.data_dir}/ has "
            f"{train_pairs:,}; pass --restart to train from scratch"
        )


class StopOnSignal:
    """SIGINT (Ctrl-C) and SIGTERM ask training to stop after the current step, save and exit.
    A second Ctrl-C stops at once; no file is harmed, since every file is written atomically."""

    def __enter__(self):
        self.received: int | None = None
        self.previous = {}
        if threading.current_thread() is threading.main_thread():  # signals need the main one
            for number in (signal.SIGINT, signal.SIGTERM):
                self.previous[number] = signal.signal(number, self.handle)
        return self

    def handle(self, number, frame) -> None:
        if self.received is not None:
            raise KeyboardInterrupt
        self.received = number

    def __exit__(self, *exc) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)


def train(config: Config, restart: bool = False) -> dict:
    """Train, resuming from runs/<experiment>/last.pt unless `restart`; returns the best
    validation result. Under torchrun, every process runs this (seq2seq/distributed.py)."""
    cfg = config.train
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    world, device = distributed.start(cfg.device)
    try:
        return train_in(world, device, config, restart)
    finally:
        distributed.stop(world)


def train_in(world: World, device: torch.device, config: Config, restart: bool) -> dict:
    cfg = config.train
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)  # the batch order: the same in every process

    vocabs = load_vocabs(config)
    train_examples = encode_pairs(load_split(config, "train"), *vocabs)
    valid_pairs = load_split(config, "valid")

    model = Transformer(config.model, *map(len, vocabs)).to(device)
    if world.distributed:
        torch.manual_seed(cfg.seed + world.rank)  # same weights, but each its own dropout
    optimizer = make_optimizer(model, cfg)
    autocast_dtype = resolve_precision(cfg.precision, device)
    # fp16 needs its loss scaled up so that small gradients do not underflow; bf16 does not
    scaler = torch.amp.GradScaler(device.type, enabled=autocast_dtype == torch.float16)
    # DistributedDataParallel averages the gradients of all processes during backward()
    parallel = DistributedDataParallel(model) if world.distributed else model
    step_model = torch.compile(parallel, dynamic=True) if cfg.compile else parallel
    use_autocast = autocast_dtype is not None
    per_step = world.size * cfg.accumulate  # micro-batches per optimizer step, in all
    micro_tokens = max(1, cfg.batch_tokens // per_step)

    last_path, log_path = config.run_dir / LAST, config.run_dir / "metrics.jsonl"
    if world.main:
        config.run_dir.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(config.run_dir)  # from a process killed while writing
        if restart:
            last_path.unlink(missing_ok=True)
    progress = Progress()
    if distributed.from_main(last_path.exists(), world):
        try:
            state = read_state(last_path, device)
        except UserError as error:
            raise UserError(f"{error}; pass --restart to train from scratch") from None
        check_resumable(state, config, vocabs, len(train_examples), last_path)
        model.load_state_dict(state["model"])
        training = state["training"]
        optimizer.load_state_dict(training["optimizer"])
        scaler.load_state_dict(training["scaler"])
        states = training["random"]  # one per process of the run that saved them
        set_random_states(states[world.rank % len(states)], rng, device)
        progress = Progress(**training["progress"])
        if progress.stopped_early or progress.step >= cfg.max_steps:
            if world.main:
                print(
                    f"{last_path}: training already finished at step {progress.step:,}; raise "
                    "train.max_steps to train on, or pass --restart to start over"
                )
            return progress.best
        if world.main:  # drop what was logged after the state was saved: it comes again
            logged = log_path.read_text(encoding="utf-8").splitlines() if log_path.exists() else []
            kept = [line for line in logged if json.loads(line)["step"] <= progress.step]
            write_lines(log_path, kept)
            print(f"resuming {last_path} at step {progress.step:,} (--restart to start over)")
    elif world.main:
        write_lines(log_path, [])
    if world.main:
        processes = f" x {world.size} processes" if world.distributed else ""
        print(
            f"training {model.num_parameters():,} parameters on {device}{processes} "
            f"({autocast_dtype or torch.float32}), {len(train_examples):,} training pairs, "
            f"up to {cfg.max_steps:,} steps"
        )

    def save_last() -> None:
        random_of_all = distributed.gather(random_states(rng, device), world)
        if not world.main:
            return
        training = {
            "optimizer": optimizer.state_dict(),
            "scaler": scaler.state_dict(),
            "random": random_of_all,
            "progress": asdict(progress),
            "train_pairs": len(train_examples),
        }
        info = {"step": progress.step, "epoch": progress.epoch}
        save_checkpoint(last_path, config, model, *vocabs, info, training)

    saved = f"{last_path} (step {progress.step:,}) is kept" if progress.step else "nothing saved"
    interval_loss, interval_steps, interval_tokens = 0.0, 0, 0
    start = interval_start = time.perf_counter()
    bar = tqdm(
        total=cfg.max_steps,
        initial=progress.step,
        desc="train",
        unit="step",
        mininterval=0.5,
        disable=not world.main,
    )
    model.train()
    steps = shard_steps(progress.batches, per_step, world.rank, world.size)  # this process's
    with StopOnSignal() as stop:
        while not progress.stopped_early and progress.step < cfg.max_steps:
            if progress.next_batch == len(steps):  # a new epoch
                progress.epoch += 1
                progress.batches = token_batches(train_examples, micro_tokens, rng)
                progress.next_batch = 0
                steps = shard_steps(progress.batches, per_step, world.rank, world.size)
            mine = [collate([train_examples[i] for i in b]) for b in steps[progress.next_batch]]
            lr = learning_rate(progress.step, cfg)
            for group in optimizer.param_groups:
                group["lr"] = lr

            # The loss of the step is the sum over all its target tokens, in every process,
            # divided by their number: the same step whatever the split into micro-batches.
            local_tokens = [int((tgt_out != PAD).sum()) for _, _, tgt_out in mine]
            all_tokens = sum(int((src != PAD).sum()) for src, _, _ in mine) + sum(local_tokens)
            targets, stop_asked = distributed.sum_over_processes(
                [sum(local_tokens), float(stop.received is not None)], world, device
            )
            if not mine:  # the epoch's last step had nothing left for this process
                empty = collate([train_examples[i] for i in progress.batches[0]])
                mine, weight = [empty], 0.0  # a pass that adds nothing, for DDP's sake
            else:
                weight = 1.0
            optimizer.zero_grad(set_to_none=True)
            loss_sum = 0.0
            for i, micro_batch in enumerate(mine):
                batch = tuple(t.to(device) for t in micro_batch)
                # DDP exchanges gradients at the step's last backward() only
                last = i == len(mine) - 1
                sync = parallel.no_sync() if world.distributed and not last else nullcontext()
                with sync, torch.autocast(device.type, autocast_dtype, enabled=use_autocast):
                    loss = batch_loss(step_model, batch, cfg.label_smoothing, reduction="sum")
                # DDP averages over the processes: scaling by their number makes it a sum
                scaler.scale(loss * (weight * world.size / targets)).backward()
                loss_sum += loss.item() * weight
            scaler.unscale_(optimizer)  # clip the true gradients
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm)
            scaler.step(optimizer)
            scaler.update()

            total_loss, total_tokens = distributed.sum_over_processes(
                [loss_sum, all_tokens], world, device
            )
            loss_value = total_loss / targets
            if not math.isfinite(loss_value):  # nothing of this step is saved
                bar.close()
                raise UserError(
                    f"training diverged: the loss is {loss_value} at step {progress.step + 1}; "
                    f"{saved}. Lower train.lr or raise train.warmup_steps, then --restart"
                )
            progress.step += 1
            progress.next_batch += 1
            interval_loss += loss_value
            interval_steps += 1
            interval_tokens += total_tokens
            tokens_per_s = interval_tokens / (time.perf_counter() - interval_start)
            bar.update(1)
            bar.set_postfix(
                loss=f"{loss_value:.3f}",
                lr=f"{lr:.2e}",
                tok_s=f"{tokens_per_s:,.0f}",
                refresh=False,  # redraw at most every `mininterval` seconds
            )

            if progress.step % cfg.eval_every == 0 or progress.step == cfg.max_steps:
                if world.main:  # validates, decides and writes; the others wait for it
                    result = {
                        "step": progress.step,
                        "epoch": progress.epoch,
                        "train_loss": interval_loss / interval_steps,
                        "lr": lr,
                        "tokens_per_s": tokens_per_s,
                        **validate(model, config, vocabs, valid_pairs, device),
                    }
                    result["elapsed_s"] = progress.elapsed_s + time.perf_counter() - start
                    best = progress.best
                    improved = best is None or rank(result, cfg.best_metric) > rank(
                        best, cfg.best_metric
                    )
                    if improved:
                        progress.best, progress.validations_without_gain = result, 0
                        save_checkpoint(config.checkpoint_path, config, model, *vocabs, result)
                    else:
                        progress.validations_without_gain += 1
                    bar.write(
                        f"step {progress.step:>6}  valid loss {result['valid_loss']:.4f}  "
                        f"exact match {result['valid_exact_match']:.4f}  "
                        f"BLEU {result['valid_bleu']:.2f}" + ("  (best, saved)" if improved else "")
                    )
                    if cfg.patience and progress.validations_without_gain >= cfg.patience:
                        bar.write(f"no gain in {cfg.patience} validations: stopping early")
                        progress.stopped_early = True
                    with log_path.open("a", encoding="utf-8") as log:
                        log.write(json.dumps(result) + "\n")
                # every process takes rank 0's decisions, so that they stop together
                progress.best, progress.validations_without_gain, progress.stopped_early = (
                    distributed.from_main(
                        (progress.best, progress.validations_without_gain, progress.stopped_early),
                        world,
                    )
                )
                progress.elapsed_s += time.perf_counter() - start
                start = time.perf_counter()
                save_last()
                saved = f"{last_path} (step {progress.step:,}) is kept"
                interval_loss, interval_steps, interval_tokens = 0.0, 0, 0
                interval_start = time.perf_counter()
            finished = progress.stopped_early or progress.step >= cfg.max_steps
            if stop_asked and not finished:  # asked in any process: all stop here
                progress.elapsed_s += time.perf_counter() - start
                save_last()
                bar.close()
                number = stop.received or signal.SIGTERM  # (another process got the signal)
                raise Interrupted(
                    f"stopped at step {progress.step:,} ({signal.Signals(number).name}); "
                    f"saved {last_path}: run the same command again to resume",
                    number,
                )
    bar.close()
    best = progress.best
    if world.main:
        print(
            f"best: step {best['step']}, valid exact match {best['valid_exact_match']:.4f}, "
            f"valid BLEU {best['valid_bleu']:.2f}, valid loss {best['valid_loss']:.4f}; "
            f"saved to {config.checkpoint_path} ({progress.elapsed_s:.0f} s of training)"
        )
    return best


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("seq2seq.train", __doc__.splitlines()[0])
    add_config_arguments(parser)
    parser.add_argument(
        "--restart", action="store_true", help=f"start over, ignoring runs/<experiment>/{LAST}"
    )
    args = parser.parse_args(argv)
    train(load_config(args.config, args.overrides), restart=args.restart)


if __name__ == "__main__":
    run_cli(main)
