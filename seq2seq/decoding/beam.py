"""Beam search: keep the K most probable partial translations at each step, not just one.

For each sentence, K beams (partial outputs) are extended by every vocabulary token; of the
K x V candidates, the K best by total log-probability live on. A candidate ending in EOS, or
reaching the sentence's length limit, becomes a finished hypothesis instead, scored by its
log-probability divided by the length penalty of Wu et al. (2016),

    lp(n) = ((5 + n) / 6) ** length_penalty        n = output pieces, EOS included,

so that longer outputs are not unfairly penalised (length_penalty 0: plain log-probability).
As in most toolkits, only candidates among the K best of a step can end: so beam size 1 is
greedy decoding. A sentence is done when it has K finished hypotheses that no live beam can
beat any more, or at its length limit. With `decode.no_repeat_ngram` n > 0, the tokens that
would repeat one of a beam's n-grams get a logit of -inf before the softmax, as CTranslate2
does it (repeats.py).

Batching: the B sentences of a batch and their K beams run as B*K rows through the decoder,
with the key/value cache of seq2seq/model/cache.py. After each step the cache rows are reordered
to follow the beams that survived (a beam can have several children, or none).

Every step is a fixed set of tensor operations on all B sentences at once, so that on a GPU
the host never waits for the device except once per step, to ask whether every sentence is
done. Per sentence, the tensors are:

    scores    (B, K)     total log-probability of each live beam (-inf: no beam)
    history   (B, K, L)  the output pieces of each live beam, PAD after its length
    finished  (B, K)     scores of the K best finished hypotheses (-inf: none yet),
    outputs   (B, K, L)  and their pieces
"""

import torch

from seq2seq.decoding.repeats import repeated_ngrams
from seq2seq.model.cache import DecoderCache
from seq2seq.model.transformer import Transformer
from seq2seq.text.special import BOS, EOS, PAD, non_output_logits

Hypothesis = tuple[float, list[int]]  # (length-normalised log-probability, output ids)
NONE = float("-inf")  # the score of no beam, or of no hypothesis


def length_penalty(pieces, alpha: float):
    """Of a number of pieces, or of a tensor of them."""
    return ((5 + pieces) / 6) ** alpha


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
) -> list[list[Hypothesis]]:
    """src: (B, S), limits: (B,) -> for each sentence, up to beam_size hypotheses, best first;
    with no_repeat > 0, none repeats an n-gram of that many pieces (repeats.py).
    One function, over 50 lines, on purpose: the search reads top to bottom as the algorithm,
    each tensor's shape beside it."""
    batch, k, device = src.size(0), beam_size, src.device
    memory, src_mask = model.encode(src)  # (B, S, D), (B, 1, 1, S)
    memory, src_mask = memory.repeat_interleave(k, 0), src_mask.repeat_interleave(k, 0)
    cache = DecoderCache.empty(len(model.decoder))
    longest, vocab = int(limits.max()), model.generator.out_features
    dtype = torch.promote_types(memory.dtype, torch.float32)  # scores in fp32 at least
    rank = torch.arange(2 * k, device=device)  # (2K,) of each step's 2K best candidates
    first_row = torch.arange(batch, device=device)[:, None] * k  # (B, 1) of each sentence
    limit_penalty = length_penalty(limits, alpha)  # (B,) the largest a sentence can get

    # At first only beam 0 of each sentence is real.
    scores = torch.full((batch, k), NONE, dtype=dtype, device=device)
    scores[:, 0] = 0.0
    forbidden = non_output_logits(scores, vocab)  # (V,)
    history = torch.full((batch, k, longest), PAD, dtype=torch.long, device=device)
    finished = torch.full((batch, k), NONE, dtype=dtype, device=device)
    outputs = history.clone()
    done = torch.zeros(batch, dtype=torch.bool, device=device)
    token = torch.full((batch * k, 1), BOS, dtype=torch.long, device=device)  # (B*K, 1)

    for step in range(longest):
        logits = model.decode(token, memory, src_mask, cache)[:, -1].to(dtype)  # (B*K, V)
        if no_repeat:  # before the softmax, as CTranslate2 does it
            outputs_so_far = history[:, :, :step].reshape(batch * k, step)  # (B*K, step)
            logits = logits.masked_fill(repeated_ngrams(outputs_so_far, no_repeat, vocab), NONE)
        log_probs = torch.log_softmax(logits + forbidden, dim=-1)
        candidates = (scores.view(-1, 1) + log_probs).view(batch, k * vocab)  # (B, K*V)
        # 2K candidates: enough to find K that do not end the hypothesis
        top_scores, top_ids = candidates.topk(2 * k, dim=1)  # (B, 2K), best first
        parent, tok = top_ids // vocab, top_ids % vocab  # (B, 2K) each
        last_step = step + 1 >= limits  # (B,)
        ends = (tok == EOS) | last_step[:, None]
        real = top_scores > NONE

        # Candidates among the K best that end become finished hypotheses: the K best of the
        # old and the new ones are kept. The output leaves out EOS.
        ending = (ends & real & ~done[:, None])[:, :k]  # (B, K)
        ended = take(history, parent[:, :k])  # (B, K, L)
        ended[:, :, step] = tok[:, :k].masked_fill(tok[:, :k] == EOS, PAD)
        normalised = (top_scores[:, :k] / length_penalty(step + 1, alpha)).masked_fill(
            ~ending, NONE
        )
        finished, best = torch.cat([finished, normalised], 1).topk(k, dim=1)  # (B, K)
        outputs = take(torch.cat([outputs, ended], 1), best)

        # The K best candidates that do not end live on (NONE: fewer than K did).
        going_on = ~ends & real
        order = torch.where(going_on, rank, rank + 2 * k).argsort(dim=1)[:, :k]  # (B, K)
        scores = top_scores.gather(1, order).masked_fill(~going_on.gather(1, order), NONE)
        parent, tok = parent.gather(1, order), tok.gather(1, order)

        # A sentence is done at its limit, without live beams, or when its K finished
        # hypotheses cannot be beaten any more: log-probabilities only fall as a beam grows,
        # and the length penalty is at most lp(limit).
        best_possible = scores[:, 0] / limit_penalty
        beaten = (finished[:, -1] > NONE) & (finished[:, -1] >= best_possible)
        done |= last_step | (scores[:, 0] == NONE) | beaten
        if bool(done.all()):  # the one wait for the device in a step
            break
        scores = scores.masked_fill(done[:, None], NONE)  # nothing there can win
        history = take(history, parent)
        history[:, :, step] = tok
        cache.select((first_row + parent).view(-1))  # each beam takes over its parent's row
        token = tok.view(-1, 1)

    return [
        [(score, strip_padding(ids)) for score, ids in zip(*sentence, strict=True) if score > NONE]
        for sentence in zip(finished.tolist(), outputs.tolist(), strict=True)
    ]  # (NONE: fewer than K hypotheses finished)


def strip_padding(ids: list[int]) -> list[int]:
    return ids[: ids.index(PAD)] if PAD in ids else ids
