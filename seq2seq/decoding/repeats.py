"""No runaway outputs: the tokens that would repeat an n-gram the output already holds.

An undertrained model, or a good one on an input unlike its training data, can fall into a
loop: "a salad salad salad salad ..." until the length limit. `decode.no_repeat_ngram` n stops
it with the rule CTranslate2 and transformers call no_repeat_ngram_size: no n pieces in a row
may occur twice in one output. At each step, where the output ends with the pieces
a b c (n = 4) and already holds "a b c d" earlier, d is forbidden:

    output so far   x a b c d y a b c          the last n - 1 pieces: a b c
    earlier         a b c followed by d        -> d gets a logit of -inf this step

so a loop of p pieces stops after at most n + p - 1 of them: the model must choose another
piece, or EOS (which never repeats). It is CTranslate2's rule, applied where CTranslate2
applies it (to the logits, before the softmax): both engines forbid the same tokens, greedy
and in each beam, and so does transformers' greedy `generate` (docs/export.md).

Per step it costs a handful of tensor operations for all the sentences of the batch at once
(each output's (n - 1)-grams against its last n - 1 pieces, then one scatter), nothing that
makes the host wait for a GPU; with n = 0 (off) none runs.
"""

import torch


def repeated_ngrams(history: torch.Tensor, n: int, vocab_size: int) -> torch.Tensor:
    """history (R, T): each row's output pieces so far (no BOS) -> (R, V) bool, True at the
    tokens that would end an n-gram the row already holds. n = 1 forbids every piece already
    output."""
    rows, length = history.shape
    banned = torch.zeros(rows, vocab_size + 1, dtype=torch.bool, device=history.device)
    if length >= n:  # the n-grams of the history start at 0 .. length - n
        heads = history[:, :-1].unfold(1, n - 1, 1)  # (R, length - n + 1, n - 1) their first pieces
        match = (heads == history[:, None, length - n + 1 :]).all(dim=-1)  # the last n - 1?
        last = history[:, n - 1 :]  # (R, length - n + 1) the piece that ends each n-gram
        banned.scatter_(1, last.masked_fill(~match, vocab_size), True)  # column V: no match
    return banned[:, :vocab_size]
