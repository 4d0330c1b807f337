"""JoeyNMT 2.3.0's settings, chosen from ours (benchmarks/README.md): the token batch_size that
gives an epoch as many steps as ours (by simulating its batch sampler), one greedy length
limit, and the YAML of the same corpus, model and training as our config."""

from pathlib import Path

import numpy as np
import yaml

from benchmarks.peers.measure import BATCH_SIZES
from seq2seq.config import Config
from seq2seq.support.paths import text_files
from seq2seq.tokens.batching import token_batches
from seq2seq.tokens.dataset import TokenPairs

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


def output_limit(config: Config, pieces: Path) -> int:
    """One length limit for a peer's greedy search: ours for the longest valid/test source
    (in pieces, pieces.py)."""
    longest = max(
        len(line.split())
        for split in ("valid", "test")
        for line in text_files(pieces, split)[0].read_text("utf-8").splitlines()
    )
    return int(config.decode.max_len_a * (longest + 1) + config.decode.max_len_b)


def joey_stack(config: Config, layers: int) -> dict:
    """JoeyNMT's encoder or decoder, of our model's sizes."""
    m = config.model
    return {
        "type": "transformer", "num_layers": layers, "num_heads": m.n_heads,
        "embeddings": {"embedding_dim": m.d_model, "scale": True, "dropout": m.dropout},
        "hidden_size": m.d_model, "ff_size": m.d_ff, "dropout": m.dropout, "layer_norm": "pre",
        "activation": "relu",
    }  # fmt: skip


def joey_config(
    config: Config, pieces: Path, model_dir: Path, batch_size: int, max_output_length: int,
    eval_every: int,
) -> dict:  # fmt: skip
    """JoeyNMT 2.3.0's YAML (as a dict) for the same corpus (our pieces, in `pieces`, as its
    words), model and training as `config`."""
    data, t = pieces.resolve(), config.train
    side = {"level": "word", "max_length": config.model.max_positions, "lowercase": False}
    return {
        "name": "peers", "joeynmt_version": "2.3.0", "model_dir": str(model_dir.resolve()),
        "use_cuda": config.train.device != "cpu", "random_seed": t.seed,
        "data": {
            "train": str(data / "train"), "dev": str(data / "valid"), "test": str(data / "test"),
            "dataset_type": "plain",
            "src": {"lang": "src", "voc_file": str(data / "vocab.src"), **side},
            "trg": {"lang": "tgt", "voc_file": str(data / "vocab.tgt"), **side},
        },
        "testing": {
            "batch_size": config.decode.batch_size, "batch_type": "sentence", "beam_size": 1,
            "max_output_length": max_output_length, "eval_metrics": ["sequence_accuracy"],
        },
        "training": {
            "optimizer": "adamw", "adam_betas": [0.9, 0.98], "learning_rate": t.lr,
            "learning_rate_min": t.min_lr, "learning_rate_warmup": t.warmup_steps,
            "scheduling": "warmupinversesquareroot", "weight_decay": t.weight_decay,
            "label_smoothing": t.label_smoothing, "clip_grad_norm": t.clip_norm,
            "loss": "crossentropy", "normalization": "tokens", "batch_size": batch_size,
            "batch_type": "token", "batch_multiplier": t.accumulate, "updates": t.max_steps,
            "epochs": 1000000, "validation_freq": eval_every, "logging_freq": eval_every,
            "early_stopping_metric": "loss", "keep_best_ckpts": -1, "shuffle": True,
            "overwrite": True, "num_workers": 0,
        },
        "model": {
            "initializer": "xavier_uniform", "bias_initializer": "zeros",
            "embed_initializer": "normal", "embed_init_weight": config.model.d_model**-0.5,
            "tied_embeddings": config.model.share_embeddings,
            "tied_softmax": config.model.tie_embeddings,
            "encoder": joey_stack(config, config.model.enc_layers),
            "decoder": joey_stack(config, config.model.dec_layers),
        },
    }  # fmt: skip


def write_yaml(path: Path, content: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")
    return path


def write_translate_configs(joey: dict, joey_dir: Path, step: int) -> None:
    """translate-batch<N>.yaml: JoeyNMT's config decoding N sentences at a time with the
    checkpoint of `step`."""
    checkpoint = Path(joey["model_dir"]) / f"{step}.ckpt"
    for size in BATCH_SIZES:
        testing = {**joey["testing"], "batch_size": size, "load_model": str(checkpoint)}
        write_yaml(joey_dir / f"translate-batch{size}.yaml", {**joey, "testing": testing})
