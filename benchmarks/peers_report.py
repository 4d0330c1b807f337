"""The report of `make bench-peers`: each figure of both toolkits and their ratio, the settings
and the differences that remain between the two setups, as <out>/peers.md."""

from peers_measure import BATCH_SIZES

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
