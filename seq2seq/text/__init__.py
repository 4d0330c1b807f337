"""Text as every other chapter reads it, before any vocabulary: pairs in files, a text's
sentences, and the placeholders and accelerators kept from the model and put back.

    parallel.py        parallel text files of pairs: read, checked, written; a pair's keyed
                       hash (its split, a program's group)
    sentences.py       texts -> their sentences, translations joined back
    placeholders.py    %s, {0}, <b>, [X7X] ... and _Save's accelerator: kept from the model,
                       put back

May import: the config's options (seq2seq/options.py) and seq2seq.support. Nothing else of
seq2seq.
"""
