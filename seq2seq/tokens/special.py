"""The special token ids, the same in every vocabulary (seq2seq/tokens/vocab.py trains sentencepiece
with them):

    PAD = 0   padding, never predicted, ignored by the loss and masked out of attention
    UNK = 1   a piece the vocabulary lacks
    BOS = 2   begins every decoder input
    EOS = 3   ends every source and every target; decoding stops when it is produced

This module imports nothing, so the model, the masks, batching and decoding can use these ids
without loading sentencepiece or the corpus readers.
"""

PAD, UNK, BOS, EOS = 0, 1, 2, 3


def non_output_logits(like, vocab_size: int):
    """Decoding: PAD and BOS are never an output token. -> a (V,) row of logits' corrections,
    0 everywhere but -inf at PAD and BOS, on the device and of the dtype of tensor `like`.
    Made once per decoding: each step adds it to its (..., V) logits."""
    row = like.new_zeros(vocab_size)
    for banned in (PAD, BOS):  # fill_: on a GPU, `row[i] = x` would wait for a host copy
        row[banned].fill_(float("-inf"))
    return row


# No output may be empty: EOS is no output's first piece (CTranslate2's min_decoding_length,
# which its engines pass; greedy.py and beam.py forbid it at the first step alike).
MIN_OUTPUT_PIECES = 1


def first_step(row):
    """The (V,) row of non_output_logits for an output's first piece: EOS at -inf too."""
    row = row.clone()
    row[EOS].fill_(float("-inf"))
    return row
