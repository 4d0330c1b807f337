"""The report of `make bench-peers`: each figure of both toolkits and their ratio, the settings
and the differences that remain between the two setups, as <out>/peers.md; and the picture of
each toolkit's validation score against minutes of training, as docs/benchmarks/<stem>.png.

    python -m benchmarks.peers.report benchmarks/results/peers_multi30k_de_en.json  # the picture
"""

import json
import sys
from pathlib import Path

from benchmarks.common import markdown_table, with_speed
from benchmarks.peers.measure import BATCH_SIZES, TARGETS

PICTURES = Path("docs/benchmarks")

NAMES = {"joeynmt": "JoeyNMT", "opennmt": "OpenNMT-py"}
METRICS = {"exact_match": "exact match", "bleu": "BLEU"}


def rows(metric: str) -> list[tuple[str, str, str]]:
    """(figure, label, which is better) of the report for a `metric` ("exact_match", "bleu");
    every figure is reported for each toolkit, with ours / each peer."""
    name = METRICS[metric]
    targets = [
        (f"seconds_to_{key}", f"training: wall s from start to {key.replace('_', '.')}% valid "
         f"{name}", "lower")
        for key in TARGETS[metric]
    ]  # fmt: skip
    table = [
        *targets,
        ("seconds_to_best", f"training: wall s from start to its best valid {name}", "lower"),
        (f"best_valid_{metric}", f"training: best valid {name} in the budget", "higher"),
        ("best_step", "training: step of that validation", ""),
        ("validated_steps", "training: steps at the last validation", ""),
        ("validated_steps_per_s", "training: steps per wall s (start-up, validations)", "higher"),
        ("train_run_seconds", "training: wall s of the run (stopped at the budget)", ""),
        ("train_peak_memory_mib", "training: peak RSS, MiB", "lower"),
        ("decoded_step", f"decoding: step of the checkpoint (best valid {name})", ""),
        ("parameters", "parameters", ""),
        ("src_vocab_size", "source vocabulary", ""),
        ("tgt_vocab_size", "target vocabulary", ""),
    ]  # fmt: skip
    decoding = [
        ("command_sentences_per_s", "whole command, sentences/s", "higher"),
        ("decode_sentences_per_s", "decoding alone, sentences/s", "higher"),
        (f"command_{metric}", f"test {name} (command)", "higher"),
        (f"decode_{metric}", f"test {name} (in-process)", "higher"),
        ("command_peak_memory_mib", "whole command, peak RSS, MiB", "lower"),
    ]
    return table + [
        (f"{key}_batch{size}", f"batch {size}: {label}", better)
        for size in BATCH_SIZES
        for key, label, better in decoding
    ]


DIFFERENCES = {
    "joeynmt": [
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
        "decoding: ours reuses keys and values between steps (decode.cache); JoeyNMT's greedy "
        "search reruns the decoder over the whole prefix at each step",
        "validation, as configured for each: ours computes the valid loss and decodes the 500 "
        "sentences 500 at a time; JoeyNMT the same, in file order instead of length order",
        "JoeyNMT keeps a checkpoint at every validation (to decode the best by exact match), which "
        "costs it some disk time in training",
        "dropout: JoeyNMT has one rate for embeddings, sublayer outputs and the feed-forward "
        "layer's ReLU (model.dropout), none on attention weights",
    ],
    "opennmt": [
        "learning rate: OpenNMT-py's noam schedule with our warmup, scaled to reach our peak "
        "at its end (learning_rate = peak x sqrt(d_model x warmup)); after it the rate falls as "
        "1/sqrt(step), faster than our cosine, with no floor",
        "Adam: the same betas (0.9, 0.98), eps 1e-8 (ours 1e-9), no weight decay (ours: on "
        "matrices)",
        "initialisation: xavier_uniform for every matrix (param_init_glorot), embeddings too",
        "batches: its token count is the longer side of a pair times the pairs of a batch, so "
        "its batch_size is half our train.batch_tokens (which counts both sides); it reads "
        "32,768 pairs at a time (bucket_size), sorts them by length and cuts them into batches",
        "validation: it computes the valid loss and accuracy in training (every eval_every "
        "steps, with a checkpoint); the valid BLEU or exact match of each checkpoint is decoded "
        "and scored here after training, greedily, 64 sentences at a time, and timed by when "
        "the checkpoint's file appeared",
        "greedy length limit: one for all (max_length, as for JoeyNMT); "
        "decoding reuses keys and values between steps, as ours",
        "dropout: OpenNMT-py has one rate for embeddings, sublayer outputs and the feed-forward "
        "layer's ReLU (model.dropout), and model.attention_dropout on attention weights",
        "precision: ours as train.precision says (auto: bf16 autocast on a CPU that computes "
        "bf16 natively, fp32 weights and optimizer state; fp32 on other CPUs); OpenNMT-py fp32, "
        "its one choice on a CPU (model_dtype fp16 autocasts with torch.cuda.amp: GPUs only); "
        "both with torch's default threads, one per core",
    ],
}


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
    return f"{value:.3f}" if abs(value) < 10 else f"{value:,.{1 if abs(value) < 1000 else 0}f}"


def markdown(results: dict) -> str:
    info, s, peers = results["machine"], results["settings"], list(results["peers"])
    metric, names = s["metric"], [NAMES[peer] for peer in peers]
    about = (
        f"{with_speed(info)}, torch {info['torch']} for all, Python "
        f"{info['python']}, {info['date']}, mode: {results['mode']}. Produced by `make "
        "bench-peers` (`python -m benchmarks.peers.compare`): each toolkit trained for "
        f"{s['budget_s']:.0f} s of wall time, one after the other, on corpus "
        f"`{s['corpus']['name']}`, validating every {s['eval_every']} steps on the "
        f"{s['valid_sentences']} valid sentences, then decoding the first "
        f"{s['test_sentences']} test sentences greedily. Times to a target: lower is better, "
        "so a ratio below 1 means ours is faster."
    )
    header = ["figure", "ours", *names, *(f"ours / {name}" for name in names), "better"]
    ours, figures = results["ours"], []
    for key, label, better in rows(metric):
        values = [shown(ours.get(key)), *(shown(results["peers"][p].get(key)) for p in peers)]
        shares = [results["ratios"][p].get(key) for p in peers]
        shares = [f"{r:.3f}" if r is not None else "" for r in shares]
        figures.append([label, *values, *shares, better])
    notes = "\n".join([*settings_lines(s), *difference_lines(s)])
    table = markdown_table(header, figures, notes)
    return "\n\n".join([f"# seq2seq against {' and '.join(names)}", about, table]) + "\n"


def settings_lines(s: dict) -> list[str]:
    m, t = s["model"], s["train"]
    lines = [
        "## Settings",
        "",
        f"* The same data and vocabulary: every toolkit reads our sentencepiece pieces "
        f"(benchmarks/peers/pieces.py) as its words; d_model {m['d_model']}, "
        f"{m['n_heads']} heads, {m['enc_layers']} + {m['dec_layers']} layers, d_ff {m['d_ff']}, "
        "pre-norm, "
        f"dropout {m['dropout']}, target embedding tied to the output layer: "
        f"{m['tie_embeddings']}, one embedding for both languages: {m['share_embeddings']}.",
        f"* Optimizer: Adam(W), peak learning rate {t['lr']}, warmup {t['warmup_steps']} steps, "
        f"label smoothing {t['label_smoothing']}, gradient norm clipped at {t['clip_norm']}, "
        "loss averaged per target token.",
        f"* The peers' greedy length limit (`max_output_length`, `max_length`): "
        f"{s['max_output_length']}; their YAML is in the JSON (`settings.<peer>_config`).",
    ]  # fmt: skip
    if b := s.get("batches"):
        lines.append(
            f"* Batches: ours `train.batch_tokens` {b['ours_batch_tokens']} (padded source + "
            f"target tokens, length-sorted); JoeyNMT `batch_type: token`, `batch_size` "
            f"{b['joeynmt_batch_size_tokens']} (its count: sentences x the longest of source + "
            "EOS and target + BOS, random order), chosen for as many steps per epoch as ours: "
            f"{b['ours_pairs_per_step']:.1f} and {b['joeynmt_pairs_per_step']:.1f} pairs, "
            f"{b['ours_real_tokens_per_step']:.0f} and {b['joeynmt_real_tokens_per_step']:.0f} "
            f"real tokens, {b['ours_padded_tokens_per_step']:.0f} and "
            f"{b['joeynmt_padded_tokens_per_step']:.0f} padded tokens per step (ours, JoeyNMT)."
        )
    return lines


def difference_lines(s: dict) -> list[str]:
    lines = []
    for peer, differences in s["differences"].items():
        lines += ["", f"## Differences from {NAMES[peer]}", ""]
        lines += [f"* {difference}" for difference in differences]
    return lines


def draw_curves(results: dict, path: Path) -> None:
    """Valid BLEU (or exact match) against minutes of training, ours and each peer's: the
    picture to look at before choosing a toolkit."""
    import matplotlib

    matplotlib.use("Agg")  # no screen needed
    import matplotlib.pyplot as plt

    metric = results["settings"]["metric"]
    curves = {"seq2seq": results["ours"]["curve"]}
    curves |= {NAMES[peer]: figures["curve"] for peer, figures in results["peers"].items()}
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for name, curve in curves.items():
        minutes = [point["wall_s"] / 60 for point in curve]
        axes.plot(minutes, [point[f"valid_{metric}"] for point in curve], marker="o", label=name)
    info = results["machine"]
    axes.set_title(f"{info['device_name']}, {info['cpu_count']} cores, torch {info['torch']}")
    axes.set_xlabel("minutes of training (wall clock, validations included)")
    axes.set_ylabel(f"valid {METRICS[metric]}")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


if __name__ == "__main__":
    source = Path(sys.argv[1])
    draw_curves(json.loads(source.read_text("utf-8")), PICTURES / source.with_suffix(".png").name)
