"""The special token ids, the same in every vocabulary (seq2seq/vocab.py trains sentencepiece
with them):

    PAD = 0   padding, never predicted, ignored by the loss and masked out of attention
    UNK = 1   a piece the vocabulary lacks
    BOS = 2   begins every decoder input
    EOS = 3   ends every source and every target; decoding stops when it is produced

This module imports nothing, so the model, the masks, batching and decoding can use these ids
without loading sentencepiece or the corpus readers.
"""

PAD, UNK, BOS, EOS = 0, 1, 2, 3


def forbid_non_outputs(logits):
    """Decoding: PAD and BOS are never an output token. (..., V) logits (a tensor) -> a new
    tensor with their logits at -inf; the given one is left as it was."""
    never = logits.new_tensor([PAD, BOS]).long()
    return logits.index_fill(-1, never, float("-inf"))
