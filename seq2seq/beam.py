"""Beam search: keep the K most probable partial translations at each step, not just one.

For each sentence, K beams (partial outputs) are extended by every vocabulary token; of the
K x V candidates, the K best by total log-probability live on. A candidate ending in EOS, or
reaching the sentence's length limit, becomes a finished hypothesis instead, scored by its
log-probability divided by the length penalty of Wu et al. (2016),

    lp(n) = ((5 + n) / 6) ** length_penalty        n = output pieces, EOS included,

so that longer outputs are not unfairly penalised (length_penalty 0: plain log-probability).
As in most toolkits, only candidates among the K best of a step can end: so beam size 1 is
greedy decoding. A sentence is done when it has K
finished hypotheses that no live beam can beat any more, or at its length limit.

Batching: the B sentences of a batch and their K beams run as B*K rows through the decoder,
with the key/value cache of seq2seq/cache.py. After each step the cache rows are reordered
to follow the beams that survived (a beam can have several children, or none).
"""

import torch

from seq2seq.cache import DecoderCache
from seq2seq.model import Transformer
from seq2seq.special import BOS, EOS, forbid_non_outputs

Hypothesis = tuple[float, list[int]]  # (length-normalised log-probability, output ids)


def length_penalty(pieces: int, alpha: float) -> float:
    return ((5 + pieces) / 6) ** alpha


def finished_beats_beams(finished: list[Hypothesis], best_possible: float, k: int) -> bool:
    """True when K hypotheses have finished and none of the live beams can still beat the worst
    of them. Log-probabilities only fall as a beam grows, and the length penalty is at most
    lp(limit), so a live beam's final score is at most its score now / lp(limit)."""
    return len(finished) >= k and finished[0][0] >= best_possible


@torch.inference_mode()
def beam_search(
    model: Transformer,
    src: torch.Tensor,
    limits: torch.Tensor,
    beam_size: int,
    alpha: float,
) -> list[list[Hypothesis]]:
    """src: (B, S), limits: (B,) -> for each sentence, up to beam_size hypotheses, best first."""
    batch, k = src.size(0), beam_size
    memory, src_mask = model.encode(src)  # (B, S, D), (B, 1, 1, S)
    memory, src_mask = memory.repeat_interleave(k, 0), src_mask.repeat_interleave(k, 0)
    cache = DecoderCache.empty(len(model.decoder))
    token = torch.full((batch * k, 1), BOS, dtype=torch.long, device=src.device)  # (B*K, 1)
    # Total log-probability of each beam; at first only beam 0 of each sentence is real.
    dtype = torch.promote_types(memory.dtype, torch.float32)  # scores in fp32 at least
    scores = torch.full((batch, k), float("-inf"), dtype=dtype, device=src.device)
    scores[:, 0] = 0.0
    beams: list[list[list[int]]] = [[[] for _ in range(k)] for _ in range(batch)]
    finished: list[list[Hypothesis]] = [[] for _ in range(batch)]
    done = [False] * batch
    limit = limits.tolist()

    for step in range(max(limit)):
        logits = model.decode(token, memory, src_mask, cache)[:, -1].to(dtype)  # (B*K, V)
        log_probs = torch.log_softmax(forbid_non_outputs(logits), dim=-1)
        vocab = log_probs.size(-1)
        candidates = (scores.view(-1, 1) + log_probs).view(batch, k * vocab)  # (B, K*V)
        # 2K candidates: enough to find K that do not end the hypothesis
        top_scores, top_ids = candidates.topk(2 * k, dim=1)

        rows, tokens, new_scores = [], [], []
        new_beams: list[list[list[int]]] = []
        for b in range(batch):
            survivors: list[tuple[int, int, float]] = []  # (beam, token, score)
            if not done[b]:
                last_step = step + 1 >= limit[b]
                ranked = zip(top_scores[b].tolist(), top_ids[b].tolist(), strict=True)
                for rank, (score, index) in enumerate(ranked):
                    beam, tok = divmod(index, vocab)
                    if score == float("-inf") or len(survivors) == k:
                        break
                    if tok == EOS or last_step:
                        if rank < k:  # among the K best candidates: a hypothesis ends here
                            output = beams[b][beam] + ([] if tok == EOS else [tok])
                            normalised = score / length_penalty(step + 1, alpha)
                            finished[b] = sorted(finished[b] + [(normalised, output)])[-k:]
                    else:
                        survivors.append((beam, tok, score))
                done[b] = (
                    last_step
                    or not survivors
                    or finished_beats_beams(
                        finished[b], survivors[0][2] / length_penalty(limit[b], alpha), k
                    )
                )
            if done[b]:  # keep the rows, but with nothing that can win
                survivors = [(0, EOS, float("-inf"))] * k
            survivors += [(0, EOS, float("-inf"))] * (k - len(survivors))
            new_beams.append([beams[b][beam] + [tok] for beam, tok, _ in survivors])
            rows += [b * k + beam for beam, _, _ in survivors]
            tokens += [tok for _, tok, _ in survivors]
            new_scores += [score for _, _, score in survivors]
        if all(done):
            break
        beams = new_beams
        rows_tensor = torch.tensor(rows, device=src.device)
        cache.select(rows_tensor)  # each surviving beam takes over its parent's cache row
        token = torch.tensor(tokens, device=src.device)[:, None]
        scores = torch.tensor(new_scores, dtype=dtype, device=src.device).view(batch, k)

    return [sorted(hyps, key=lambda h: h[0], reverse=True) for hyps in finished]
