"""Validation during training: how well the model does on the valid split, and which
validation is the best so far.

    valid ids (TokenPairs)  -> batches -> loss per target token (no label smoothing)
    valid text (pairs)      -> decoding/batches.py (greedy, or beams) -> exact match, BLEU

The figures are those `make eval` gives on the test split (training/metrics.py).
"""

from dataclasses import replace

import numpy as np
import torch

from seq2seq.config import Config
from seq2seq.decoding.batches import evaluating, translate_sentences
from seq2seq.model.transformer import Transformer
from seq2seq.text.batching import token_batches
from seq2seq.text.dataset import TokenPairs
from seq2seq.text.special import PAD
from seq2seq.text.vocab import Vocab
from seq2seq.training.loss import batch_loss
from seq2seq.training.metrics import exact_match, sacrebleu_scores

ValidSplit = tuple[TokenPairs, list[tuple[str, str]]]  # its ids (the loss), its text (scores)


@torch.no_grad()
def validate(
    model: Transformer, config: Config, vocabs: tuple[Vocab, Vocab], valid: ValidSplit, device
) -> dict:
    """Per-token cross-entropy (no label smoothing) on the valid split, and the exact match
    and BLEU of its translations against the reference text, as `make eval` scores them."""
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
    hypotheses = translate_sentences(model, *vocabs, [s for s, _ in pairs], decoding)
    references = [t for _, t in pairs]
    return {
        "valid_loss": total.item() / tokens,
        "valid_exact_match": exact_match(hypotheses, references),
        "valid_bleu": sacrebleu_scores(hypotheses, references)["bleu"],
    }


def quality(result: dict, best_metric: str) -> tuple[float, float]:
    """Which validation is better: the higher train.best_metric (exact match or BLEU), then
    the lower loss; or the lower loss alone."""
    if best_metric == "loss":
        return -result["valid_loss"], 0.0
    return result[f"valid_{best_metric}"], -result["valid_loss"]
