"""Validation during training: how well the model does on the valid split, and which
validation is the best so far.

    valid ids (TokenPairs)  -> batches -> loss per target token (no label smoothing)
    valid text (pairs)      -> greedy, or beams -> exact match, BLEU, and the confidence's
                               calibration (decoding/confidence.py: its signals against
                               each translation's sentence chrF), kept in the checkpoint
    train.keep_valid pairs  -> the same decoding -> BLEU (keep_bleu: what must not be lost)
                               decoded by our own code (decoding/batches.py), or on a CPU
                               by CTranslate2 from the model exported as it is now
                               (train.valid_engine): the same outputs, sooner

The figures are those `make eval` gives on the test split (training/metrics.py).
"""

import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from seq2seq.checkpoint import Checkpoint
from seq2seq.config import Config, DecodeConfig
from seq2seq.decoding.batches import evaluating
from seq2seq.decoding.confidence import fit, sentence_chrfs
from seq2seq.decoding.ctranslate2_engine import CTranslate2Engine, Split
from seq2seq.decoding.engine_choice import ctranslate2_runs_on
from seq2seq.decoding.engines import TorchEngine, Translations
from seq2seq.exports.ctranslate2 import export_ctranslate2, import_ctranslate2
from seq2seq.model.transformer import Transformer
from seq2seq.text.parallel import Pairs
from seq2seq.tokens.batching import token_batches
from seq2seq.tokens.dataset import TokenPairs
from seq2seq.tokens.special import PAD
from seq2seq.tokens.vocab import Vocab
from seq2seq.training.loss import batch_loss
from seq2seq.training.metrics import exact_match, sacrebleu_scores

ValidSplit = tuple[TokenPairs, list[tuple[str, str]]]  # its ids (the loss), its text (scores)


@torch.no_grad()
def validate(
    model: Transformer,
    config: Config,
    vocabs: tuple[Vocab, Vocab],
    valid: ValidSplit,
    device,
    keep: Pairs | None = None,
) -> dict:
    """Per-token cross-entropy (no label smoothing) on the valid split, and the exact match
    and BLEU of its translations against the reference text, as `make eval` scores them, and
    the calibration of their confidence ("confidence"); and the BLEU of `keep`'s
    translations (train.keep_valid), if given."""
    ids, pairs = valid
    total, tokens = torch.zeros((), device=device), 0
    decoding = replace(config.decode, beam_size=config.train.valid_beam_size)
    with evaluating(model, decoding.precision):
        rng = np.random.default_rng(0)
        for indices in token_batches(
            ids.src_lengths, ids.tgt_lengths, config.train.batch_tokens, rng
        ):
            src, tgt_in, tgt_out = ids.batch(indices)
            tokens += int((tgt_out != PAD).sum())  # counted on the host, before the copy
            batch = tuple(t.to(device) for t in (src, tgt_in, tgt_out))
            total += batch_loss(model, batch, 0.0, reduction="sum").float()
    keep = keep or []
    sources = [s for s, _ in pairs + keep]  # decoded together: one export
    outputs, _, signals = valid_translations(model, config, vocabs, sources, decoding, device)
    hypotheses, references = outputs[: len(pairs)], [t for _, t in pairs]
    chrfs = sentence_chrfs(hypotheses, references)
    calibration = fit(signals[: len(pairs)], chrfs, decoding.beam_size)
    scores = {
        "valid_loss": total.item() / tokens,
        "valid_exact_match": exact_match(hypotheses, references),
        "valid_bleu": sacrebleu_scores(hypotheses, references)["bleu"],
        "confidence": calibration.to_dict(),
    }
    if keep:
        kept = sacrebleu_scores(outputs[len(pairs) :], [t for _, t in keep])
        scores["keep_bleu"] = kept["bleu"]
    return scores


def valid_translations(
    model: Transformer,
    config: Config,
    vocabs: tuple[Vocab, Vocab],
    sentences: list[str],
    decoding: DecodeConfig,
    device: torch.device,
) -> Translations:
    """The model's translations of `sentences`, by train.valid_engine: CTranslate2 decodes
    the model exported as it is now into a temporary folder (a fraction of a second for the
    models trained on a CPU), or our own code does."""
    checkpoint = Checkpoint(config, model, *vocabs, info={})
    if not uses_ctranslate2(config.train.valid_engine, device):
        return TorchEngine(checkpoint).translate(sentences, decoding)
    with tempfile.TemporaryDirectory(prefix="valid-", dir=config.run_dir) as folder:
        export = Path(folder) / "model"
        export_ctranslate2(checkpoint, export, with_vmap=False)  # validation decodes without
        # torch's threads are idle: as many batches at once, each on one thread
        split = Split(torch.get_num_threads(), 1, "validation")
        engine = CTranslate2Engine.load(export, str(device), split=split)
        return engine.translate(sentences, decoding)


def uses_ctranslate2(choice: str, device: torch.device) -> bool:
    """Whether train.valid_engine (`choice`) decodes with CTranslate2 on `device`: auto is
    CTranslate2 on a CPU where it is installed (on a GPU, our own decoding is fast)."""
    if choice == "auto":
        return device.type == "cpu" and ctranslate2_runs_on(str(device))
    if choice == "ctranslate2":
        import_ctranslate2()  # its one-line error if it is missing
    return choice == "ctranslate2"


def quality(result: dict, best_metric: str) -> tuple[float, float]:
    """Which validation is better: the higher train.best_metric (exact match or BLEU), then
    the lower loss; or the lower loss alone."""
    if best_metric == "loss":
        return -result["valid_loss"], 0.0
    return result[f"valid_{best_metric}"], -result["valid_loss"]


def keep_lost(result: dict, start: float | None, drop: float) -> str | None:
    """Why validation `result` lost too much of what must be kept: its BLEU on
    train.keep_valid more than `drop` (train.keep_bleu_drop) below the start's (`start`);
    None if it did not, or measured none."""
    if "keep_bleu" not in result or start is None or result["keep_bleu"] >= start - drop:
        return None
    return (
        f"keep BLEU {start - result['keep_bleu']:.2f} below the start's ({start:.2f}; "
        f"train.keep_bleu_drop: {drop:g}): not best.pt, a validation without gain"
    )
