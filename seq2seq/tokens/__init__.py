"""Chapter 2, tokens: the corpus's sentences as the model's token ids, from vocabularies to
the ids on disk and the padded batches training reads.

    special.py         PAD UNK BOS EOS, the ids every vocabulary shares
    vocab.py           sentencepiece vocabularies, source normalisation, and the placeholders'
                       mask that both vocabularies spell
    bpe.py             BPE vocabularies (Moses's tokens): imported packages'
    dataset.py         each split encoded once (a glossary's terms taught: train.terms),
                       memory-mapped by training
    batching.py        pairs -> padded (B, S) / (B, T) tensors of similar lengths

May import: localization (the terms a dataset teaches), text, the config's options
(seq2seq/options.py) and seq2seq.support. Never the model, training, decoding or serving.
"""
