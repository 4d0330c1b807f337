"""`make train`: train the model of config.yaml and keep its best checkpoint.

    python -m seq2seq.train [--config config.yaml] [key.sub=value ...]

One step: a batch of about `train.batch_tokens` tokens, teacher-forced cross-entropy with
label smoothing (padding ignored), gradient clipping, an AdamW update. The learning rate
rises linearly for `warmup_steps`, then follows a cosine down to `min_lr` at `max_steps`.

Every `eval_every` steps the model is validated: loss on the valid split, and the exact
match of its greedy translations. The best checkpoint by exact match (ties: lower loss) is
written atomically to runs/<experiment>/best.pt; each validation appends a line to
runs/<experiment>/metrics.jsonl.
"""

import argparse
import json
import math
import random
import time

import torch
import torch.nn.functional as F
from tqdm import tqdm

from seq2seq.batching import collate, encode_pairs, token_batches
from seq2seq.checkpoint import save_checkpoint
from seq2seq.config import Config, TrainConfig, add_config_arguments, load_config
from seq2seq.corpus import load_split
from seq2seq.decode import translate
from seq2seq.device import pick_device
from seq2seq.errors import UserError, run_cli
from seq2seq.metrics import exact_match, sacrebleu_scores
from seq2seq.model import Transformer
from seq2seq.vocab import PAD, Vocab, load_vocabs


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
    model: torch.nn.Module, batch: tuple[torch.Tensor, ...], label_smoothing: float
) -> torch.Tensor:
    """Mean cross-entropy per target token of one (src, tgt_in, tgt_out) batch."""
    src, tgt_in, tgt_out = batch
    logits = model(src, tgt_in)  # (B, T, V)
    return F.cross_entropy(
        logits.flatten(0, 1),
        tgt_out.flatten(),
        ignore_index=PAD,
        label_smoothing=label_smoothing,
    )


@torch.no_grad()
def validate(
    model: Transformer, config: Config, vocabs: tuple[Vocab, Vocab], pairs: list, device
) -> dict:
    """Per-token cross-entropy (no label smoothing) and greedy exact match on `pairs`."""
    src_vocab, tgt_vocab = vocabs
    examples = encode_pairs(pairs, src_vocab, tgt_vocab)
    model.eval()
    total, tokens = 0.0, 0
    for indices in token_batches(examples, config.train.batch_tokens, random.Random(0)):
        batch = tuple(t.to(device) for t in collate([examples[i] for i in indices]))
        n = int((batch[2] != PAD).sum())
        total += batch_loss(model, batch, 0.0).item() * n
        tokens += n
    hypotheses = translate(model, src_vocab, tgt_vocab, [s for s, _ in pairs], config.decode)
    references = tgt_vocab.decode([t for _, t in examples])  # normalised like the hypotheses
    model.train()
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


def train(config: Config) -> dict:
    """Train from scratch; returns the best validation result."""
    cfg = config.train
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    device = pick_device(cfg.device)

    src_vocab, tgt_vocab = load_vocabs(config)
    train_examples = encode_pairs(load_split(config, "train"), src_vocab, tgt_vocab)
    valid_pairs = load_split(config, "valid")

    model = Transformer(config.model, len(src_vocab), len(tgt_vocab)).to(device)
    optimizer = make_optimizer(model, cfg)
    autocast_dtype = resolve_precision(cfg.precision, device)
    # fp16 needs its loss scaled up so that small gradients do not underflow; bf16 does not
    scaler = torch.amp.GradScaler(device.type, enabled=autocast_dtype == torch.float16)
    step_model = torch.compile(model, dynamic=True) if cfg.compile else model
    print(
        f"training {model.num_parameters():,} parameters on {device} "
        f"({autocast_dtype or torch.float32}), {len(train_examples):,} training pairs, "
        f"up to {cfg.max_steps:,} steps"
    )

    config.run_dir.mkdir(parents=True, exist_ok=True)
    log_path = config.run_dir / "metrics.jsonl"
    log_path.write_text("")
    best: dict | None = None
    validations_without_gain = 0
    step, epoch, stop = 0, 0, False
    interval_loss, interval_steps, interval_tokens = 0.0, 0, 0
    start = interval_start = time.perf_counter()
    progress = tqdm(total=cfg.max_steps, desc="train", unit="step", mininterval=0.5)
    model.train()
    while not stop:
        epoch += 1
        for indices in token_batches(train_examples, cfg.batch_tokens, rng):
            batch = tuple(t.to(device) for t in collate([train_examples[i] for i in indices]))
            lr = learning_rate(step, cfg)
            for group in optimizer.param_groups:
                group["lr"] = lr
            with torch.autocast(device.type, autocast_dtype, enabled=autocast_dtype is not None):
                loss = batch_loss(step_model, batch, cfg.label_smoothing)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)  # clip the true gradients
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm)
            scaler.step(optimizer)
            scaler.update()
            step += 1

            loss_value = loss.item()
            interval_loss += loss_value
            interval_steps += 1
            interval_tokens += int((batch[0] != PAD).sum() + (batch[2] != PAD).sum())
            tokens_per_s = interval_tokens / (time.perf_counter() - interval_start)
            progress.update(1)
            progress.set_postfix(
                loss=f"{loss_value:.3f}",
                lr=f"{lr:.2e}",
                tok_s=f"{tokens_per_s:,.0f}",
                refresh=False,  # redraw at most every `mininterval` seconds
            )

            if step % cfg.eval_every == 0 or step == cfg.max_steps:
                result = {
                    "step": step,
                    "epoch": epoch,
                    "train_loss": interval_loss / interval_steps,
                    "lr": lr,
                    "tokens_per_s": tokens_per_s,
                    **validate(model, config, (src_vocab, tgt_vocab), valid_pairs, device),
                    "elapsed_s": time.perf_counter() - start,
                }

                improved = best is None or rank(result, cfg.best_metric) > rank(
                    best, cfg.best_metric
                )
                if improved:
                    best = result
                    validations_without_gain = 0
                    save_checkpoint(
                        config.checkpoint_path, config, model, src_vocab, tgt_vocab, result
                    )
                else:
                    validations_without_gain += 1
                with log_path.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(result) + "\n")
                progress.write(
                    f"step {step:>6}  valid loss {result['valid_loss']:.4f}  "
                    f"exact match {result['valid_exact_match']:.4f}  "
                    f"BLEU {result['valid_bleu']:.2f}" + ("  (best, saved)" if improved else "")
                )
                interval_loss, interval_steps, interval_tokens = 0.0, 0, 0
                interval_start = time.perf_counter()
                if cfg.patience and validations_without_gain >= cfg.patience:
                    progress.write(f"no gain in {cfg.patience} validations: stopping early")
                    stop = True
            if stop or step >= cfg.max_steps:
                stop = True
                break
    progress.close()
    print(
        f"best: step {best['step']}, valid exact match {best['valid_exact_match']:.4f}, "
        f"valid loss {best['valid_loss']:.4f}; saved to {config.checkpoint_path} "
        f"({time.perf_counter() - start:.0f} s)"
    )
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_config_arguments(parser)
    args = parser.parse_args(argv)
    train(load_config(args.config, args.overrides))


if __name__ == "__main__":
    run_cli(main)
