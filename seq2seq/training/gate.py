"""The gate an improvement passes before it is served (python -m seq2seq.improve): the new model
against the one served on the held-out corrections, and against the original on the
original test set's sample (improvement.py's files), each decoded greedily, in batches
(decode.batch_size sentences: translate_texts), by our torch code, as `make eval` decodes.

    held_out.*  --the model served, the new one-->  chrF, BLEU (sacreBLEU)  } scores
    test.*      --the original, the new one-->       BLEU                     }
    -> verdict: served if the new chrF >= the served model's (no held-out share: not asked)
       and the new BLEU >= the original's - max_test_loss; else kept aside, the reason said
"""

import time
from dataclasses import replace
from pathlib import Path

import torch

from seq2seq.decoding.engine_choice import load_engine
from seq2seq.decoding.engines import translate_texts
from seq2seq.support.errors import say
from seq2seq.text.sentences import Texts
from seq2seq.training.metrics import sacrebleu_scores

Pair = tuple[str, str]


def scored(checkpoint: Path, pairs: list[Pair], device: str, what: str) -> dict:
    """chrF and BLEU of the checkpoint's greedy translations of the pairs' sources."""
    started = time.perf_counter()
    engine = load_engine(None, checkpoint, "torch", device=device)
    greedy = replace(engine.config.decode, beam_size=1)
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    with torch.inference_mode():
        hypotheses = translate_texts(engine, Texts(sources), greedy).translations
    found = sacrebleu_scores(hypotheses, references)
    say(f"gate: {what}: chrF {found['chrf']:.2f}  BLEU {found['bleu']:.2f}  "
        f"({len(pairs):,} sentences, {time.perf_counter() - started:.0f} s)")  # fmt: skip
    return {"chrf": found["chrf"], "bleu": found["bleu"], "sentences": len(pairs)}


def verdict(held: dict | None, test: dict, max_test_loss: float) -> tuple[bool, str]:
    """Whether the new model passes, and why (or why not), in words."""
    reasons, passed = [], True
    if held is None:
        reasons.append("no held-out corrections: the test set alone")
    elif held["chrf_new"] < held["chrf_old"]:
        passed = False
        reasons.append(
            f"held-out chrF {held['chrf_new']:.2f} < {held['chrf_old']:.2f} (the model served)"
        )
    else:
        reasons.append(f"held-out chrF {held['chrf_old']:.2f} -> {held['chrf_new']:.2f}")
    loss = test["bleu_original"] - test["bleu_new"]
    if loss > max_test_loss:
        passed = False
        reasons.append(
            f"test BLEU {test['bleu_original']:.2f} -> {test['bleu_new']:.2f}: a loss over "
            f"{max_test_loss:g} (--max-test-loss)"
        )
    else:
        reasons.append(f"test BLEU {test['bleu_original']:.2f} -> {test['bleu_new']:.2f}")
    return passed, "; ".join(reasons)
