"""What an exported model says about itself: the data it learnt from, its sizes and its test
scores, as Markdown (the README of an Argos package, the model card of a Hugging Face folder).

The test scores are those `make eval` wrote beside the checkpoint (runs/<experiment>/eval.json,
seq2seq/evaluate.py), with sacreBLEU's signatures; a checkpoint never evaluated says so.
"""

import json
from pathlib import Path

from seq2seq.checkpoint import Checkpoint
from seq2seq.config import Config
from seq2seq.paths import EVAL


def corpus_description(config: Config) -> str:
    corpus = config.corpus
    if corpus.type == "numbers":
        return (
            f"the generated numbers corpus (English number words to digits, preset "
            f"{corpus.preset}, {corpus.train_size:,} training pairs, seed {corpus.seed})"
        )
    if corpus.type == "multi30k":
        return f"Multi30k task 1, {corpus.src_lang} to {corpus.tgt_lang}"
    return f"parallel text ({corpus.name}: {corpus.train})"


def test_scores(checkpoint_path: Path | None, step: int | None) -> str:
    """The eval.json beside the checkpoint as a table, if it scored this checkpoint (the same
    training step), or how to make one."""
    scores_path = checkpoint_path and Path(checkpoint_path).with_name(EVAL)
    greedy = (
        json.loads(scores_path.read_text("utf-8")) if scores_path and scores_path.exists() else {}
    )
    if greedy.get("checkpoint_step") != step or "n_sentences" not in greedy:
        return "Not evaluated: `make eval` (python -m seq2seq.evaluate) scores the test split."
    columns = {"greedy": greedy}
    if "beam" in greedy:
        columns[f"beam {greedy['beam'].get('beam_size', '')}".strip()] = greedy["beam"]
    rows = [("exact match", "exact_match", 1), ("BLEU", "bleu", 2), ("chrF", "chrf", 2)]
    table = ["| | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for label, key, digits in rows:
        table.append(
            f"| {label} | " + " | ".join(f"{c[key]:.{digits}f}" for c in columns.values()) + " |"
        )
    return "\n".join([
        f"On the {greedy['n_sentences']:,} sentences of the test split (`make eval`):",
        "",
        *table,
        "",
        f"sacreBLEU signatures: BLEU `{greedy['bleu_signature']}`, "
        f"chrF `{greedy['chrf_signature']}`.",
    ])  # fmt: skip


def facts(checkpoint: Checkpoint, checkpoint_path: Path | None = None) -> str:
    """Data, sizes and test scores of a checkpoint, as Markdown sections."""
    config, cfg = checkpoint.config, checkpoint.config.model
    vocabularies = (
        f"one sentencepiece vocabulary of {len(checkpoint.src_vocab):,} pieces for both sides"
        if checkpoint.src_vocab.model_bytes == checkpoint.tgt_vocab.model_bytes
        else f"sentencepiece vocabularies of {len(checkpoint.src_vocab):,} (source) and "
        f"{len(checkpoint.tgt_vocab):,} (target) pieces"
    )
    step = checkpoint.info.get("step")
    return "\n".join([
        "## Data",
        "",
        f"Trained with seq2seq on {corpus_description(config)}"
        + (f", for {step:,} steps." if step else "."),
        "",
        "## Model",
        "",
        f"An encoder-decoder Transformer of {checkpoint.model.num_parameters():,} parameters: "
        f"{cfg.enc_layers} encoder and {cfg.dec_layers} decoder layers (pre-norm), d_model "
        f"{cfg.d_model}, {cfg.n_heads} heads, feed-forward {cfg.d_ff}; {vocabularies}.",
        "",
        "## Test scores",
        "",
        test_scores(checkpoint_path, step),
    ])  # fmt: skip
