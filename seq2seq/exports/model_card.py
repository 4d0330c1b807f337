"""What an exported model says about itself: the data it learnt from, its sizes and its test
scores, as Markdown (the README of an Argos package, the model card of a Hugging Face folder).

The test scores are those `make eval` wrote beside the checkpoint (runs/<experiment>/eval.json,
seq2seq/evaluate.py), with sacreBLEU's signatures; a checkpoint never evaluated says so.
"""

import json
from pathlib import Path

from seq2seq.checkpoint import Checkpoint
from seq2seq.corpora.corpus_types import corpus_type
from seq2seq.support.paths import EVAL


def scores_section(checkpoint_path: Path | None, step: int | None) -> str:
    """The scores of the eval.json beside the checkpoint, if it scored this checkpoint (the
    same training step), with sacreBLEU's signatures; else how to get them."""
    path = checkpoint_path and Path(checkpoint_path).with_name(EVAL)
    scores = json.loads(path.read_text("utf-8")) if path and path.exists() else {}
    if not scores or scores.get("checkpoint_step") != step:
        return "Not evaluated: `make eval` (python -m seq2seq.evaluate) scores the test split."
    runs = {"greedy": scores} | (
        {f"beam {scores['beam']['beam_size']}": scores["beam"]} if "beam" in scores else {}
    )
    lines = [
        f"On the {scores['n_sentences']:,} sentences of the test split (`make eval`, our decoder):",
        "",
        "| | " + " | ".join(runs) + " |",
        "|---|" + "---|" * len(runs),
    ]
    for label, key, scale in (
        ("exact match %", "exact_match", 100),
        ("BLEU", "bleu", 1),
        ("chrF", "chrf", 1),
    ):
        values = " | ".join(f"{run[key] * scale:.2f}" for run in runs.values())
        lines.append(f"| {label} | {values} |")
    signatures = f"BLEU `{scores['bleu_signature']}`, chrF `{scores['chrf_signature']}`"
    lines += ["", f"sacreBLEU signatures: {signatures}."]
    return "\n".join(lines)


def facts(checkpoint: Checkpoint, checkpoint_path: Path | None = None) -> str:
    """Data, sizes and test scores of a checkpoint, as Markdown sections."""
    config, cfg = checkpoint.config, checkpoint.config.model
    vocabularies = (
        f"one sentencepiece vocabulary of {len(checkpoint.src_vocab):,} pieces for both sides"
        if checkpoint.one_vocabulary
        else f"sentencepiece vocabularies of {len(checkpoint.src_vocab):,} (source) and "
        f"{len(checkpoint.tgt_vocab):,} (target) pieces"
    )
    step, origin = checkpoint.info.get("step"), checkpoint.info.get("origin")
    trained = f"on {corpus_type(config.corpus).description(config.corpus)}" + (
        f", for {step:,} steps." if step else "."
    )
    if origin:  # an imported model (step 0), or one fine-tuned from it
        version = f" (version {origin['package_version']})" if "package_version" in origin else ""
        imported = f"Imported by seq2seq from {origin['name']}{version}"
        trained = f"{imported}, then fine-tuned {trained}" if step else f"{imported}."
    else:
        trained = f"Trained with seq2seq {trained}"
    return "\n".join([
        "## Data",
        "",
        trained,
        "",
        "## Model",
        "",
        f"An encoder-decoder Transformer of {checkpoint.model.num_parameters():,} parameters: "
        f"{cfg.enc_layers} encoder and {cfg.dec_layers} decoder layers ({cfg.norm}-norm), d_model "
        f"{cfg.d_model}, {cfg.n_heads} heads, feed-forward {cfg.d_ff}; {vocabularies}.",
        "",
        "## Test scores",
        "",
        scores_section(checkpoint_path, step),
    ])  # fmt: skip
