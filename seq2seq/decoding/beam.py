"""Beam search: keep the K most probable partial translations at each step, not just one.

The search is CTranslate2's (so Argos Translate's and LibreTranslate's too), step for step, so
that both engines give the same outputs. For each sentence, K beams (partial outputs) are
extended by every vocabulary token, and of the K x V candidates the 2K best are taken. Those of
the K best that end (in EOS, or at the sentence's length limit) are registered as finished
hypotheses; the K best that do not end live on. A finished hypothesis is scored by

    normalised(log_prob, n, alpha) = log_prob / n ** alpha      n = its pieces, EOS included

(decode.length_penalty is alpha; 0: the plain log-probability). Only candidates among the K
best of a step can end: so beam size 1 is greedy decoding. A sentence is done at its length
limit, or once it has registered K hypotheses (at alpha 0: once a step's best candidate has
ended and it has registered as many hypotheses as asked for); its best are those asked for.
With `decode.no_repeat_ngram` n > 0, the tokens that would repeat one of a beam's n-grams get a
logit of -inf before the softmax, as CTranslate2 does it (repeats.py).

Batching: the B sentences of a batch and their K beams run as B*K rows through the decoder,
with the key/value cache of seq2seq/model/kv_cache.py. After each step the cache rows are reordered
to follow the beams that survived (a beam can have several children, or none).

Every step is a fixed set of tensor operations on all B sentences at once, so that on a GPU
the host never waits for the device except once per step, to ask whether every sentence is
done. Per sentence, the tensors are:

    scores      (B, K)     total log-probability of each live beam (-inf: no beam)
    history     (B, K, L)  the output pieces of each live beam, PAD after its length
    finished    (B, K)     normalised scores of the K best finished hypotheses (-inf: none yet),
    outputs     (B, K, L)  and their pieces
    registered  (B,)       how many hypotheses have finished, all told
"""

import torch

from seq2seq.decoding.repeats import repeated_ngrams
from seq2seq.model.kv_cache import DecoderCache
from seq2seq.model.transformer import Transformer
from seq2seq.tokens.special import BOS, EOS, PAD, first_step, non_output_logits

Hypothesis = tuple[float, list[int]]  # (length-normalised log-probability, output ids)
NONE = float("-inf")  # the score of no beam, or of no hypothesis


def normalised(log_prob, pieces, alpha: float):
    """A finished hypothesis's score: its log-probability divided by pieces ** alpha, pieces
    counting its EOS (CTranslate2's length penalty). Of numbers, or of tensors."""
    return log_prob / pieces**alpha


def per_piece(score: float, pieces: int, alpha: float) -> float:
    """A hypothesis's mean log-probability a piece (a translation's confidence reads it:
    confidence.py), from its score normalised at `alpha` and its `pieces` (EOS not among
    them, counted here): CTranslate2's scores are normalised the same way."""
    return score * (pieces + 1) ** (alpha - 1)


def beams_for(beam_size: int, nbest: int | None) -> int:
    """The beams a search needs for the `nbest` best hypotheses (None: the best only) when
    asked for `beam_size`: a search of K beams finds K hypotheses at most."""
    return max(beam_size, nbest or 1)


def take(tensor: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """tensor (B, N, ...), index (B, M) -> (B, M, ...): the rows `index` of each sentence."""
    index = index.view(*index.shape, *[1] * (tensor.dim() - 2)).expand(-1, -1, *tensor.shape[2:])
    return tensor.gather(1, index)


@torch.inference_mode()
def beam_search(
    model: Transformer,
    src: torch.Tensor,
    limits: torch.Tensor,
    beam_size: int,
    alpha: float,
    no_repeat: int = 0,
    wanted: int = 1,
) -> list[list[Hypothesis]]:
    """src: (B, S), limits: (B,) -> for each sentence, its `wanted` (<= beam_size) best
    hypotheses, best first; with no_repeat > 0, none repeats an n-gram of that many pieces
    (repeats.py). One function, over 50 lines, on purpose: the search reads top to bottom as
    the algorithm, each tensor's shape beside it."""
    batch, k, device = src.size(0), beam_size, src.device
    memory, src_mask = model.encode(src)  # (B, S, D), (B, 1, 1, S)
    memory, src_mask = memory.repeat_interleave(k, 0), src_mask.repeat_interleave(k, 0)
    cache = DecoderCache.empty(len(model.decoder))
    longest, vocab = int(limits.max()), model.generator.out_features
    dtype = torch.promote_types(memory.dtype, torch.float32)  # scores in fp32 at least
    rank = torch.arange(2 * k, device=device)  # (2K,) of each step's 2K best candidates
    first_row = torch.arange(batch, device=device)[:, None] * k  # (B, 1) of each sentence

    # At first only beam 0 of each sentence is real.
    scores = torch.full((batch, k), NONE, dtype=dtype, device=device)
    scores[:, 0] = 0.0
    forbidden = non_output_logits(scores, vocab)  # (V,)
    first = first_step(forbidden)  # EOS too: no output is empty
    history = torch.full((batch, k, longest), PAD, dtype=torch.long, device=device)
    finished = torch.full((batch, k), NONE, dtype=dtype, device=device)
    outputs = history.clone()
    registered = torch.zeros(batch, dtype=torch.long, device=device)
    best_ended = torch.zeros(batch, dtype=torch.bool, device=device)  # a step's best candidate
    done = torch.zeros(batch, dtype=torch.bool, device=device)
    token = torch.full((batch * k, 1), BOS, dtype=torch.long, device=device)  # (B*K, 1)

    for step in range(longest):
        logits = model.decode(token, memory, src_mask, cache)[:, -1].to(dtype)  # (B*K, V)
        if no_repeat:  # before the softmax, as CTranslate2 does it
            outputs_so_far = history[:, :, :step].reshape(batch * k, step)  # (B*K, step)
            logits = logits.masked_fill(repeated_ngrams(outputs_so_far, no_repeat, vocab), NONE)
        # EOS too at the first step, before the softmax, as CTranslate2's min_decoding_length
        log_probs = torch.log_softmax(logits + (forbidden if step else first), dim=-1)
        candidates = (scores.view(-1, 1) + log_probs).view(batch, k * vocab)  # (B, K*V)
        # 2K candidates: at most K end (one EOS a beam), so at least K live on
        top_scores, top_ids = candidates.topk(2 * k, dim=1)  # (B, 2K), best first
        parent, tok = top_ids // vocab, top_ids % vocab  # (B, 2K) each
        last_step = step + 1 >= limits  # (B,)
        ends = (tok == EOS) | last_step[:, None]
        real = top_scores > NONE

        # Candidates among the K best that end are registered: the K best finished so far
        # are kept. The output leaves out EOS; its length counts it.
        ending = (ends & real & ~done[:, None])[:, :k]  # (B, K)
        registered += ending.sum(dim=1)
        best_ended |= ending[:, 0]
        ended = take(history, parent[:, :k])  # (B, K, L)
        ended[:, :, step] = tok[:, :k].masked_fill(tok[:, :k] == EOS, PAD)
        new = normalised(top_scores[:, :k], step + 1, alpha).masked_fill(~ending, NONE)
        finished, best = torch.cat([finished, new], 1).topk(k, dim=1)  # (B, K)
        outputs = take(torch.cat([outputs, ended], 1), best)

        # The K best candidates that do not end live on (NONE: fewer than K did).
        going_on = ~ends & real
        order = torch.where(going_on, rank, rank + 2 * k).argsort(dim=1)[:, :k]  # (B, K)
        scores = top_scores.gather(1, order).masked_fill(~going_on.gather(1, order), NONE)
        parent, tok = parent.gather(1, order), tok.gather(1, order)

        # A sentence is done at its limit, without live beams, or when it has registered K
        # hypotheses (alpha 0: when its best candidate has ended and it has those wanted).
        enough = (best_ended & (registered >= wanted)) if alpha == 0 else registered >= k
        done |= last_step | (scores[:, 0] == NONE) | enough
        if bool(done.all()):  # the one wait for the device in a step
            break
        scores = scores.masked_fill(done[:, None], NONE)  # nothing there can win
        history = take(history, parent)
        history[:, :, step] = tok
        cache.select((first_row + parent).view(-1))  # each beam takes over its parent's row
        token = tok.view(-1, 1)

    return [
        [(score, strip_padding(ids)) for score, ids in zip(*sentence, strict=True) if score > NONE]
        for sentence in zip(
            finished[:, :wanted].tolist(), outputs[:, :wanted].tolist(), strict=True
        )
    ]  # (NONE: fewer hypotheses finished)


def strip_padding(ids: list[int]) -> list[int]:
    return ids[: ids.index(PAD)] if PAD in ids else ids
