"""Chapter 3, training: what the training loop (seq2seq/train.py) leans on.

    resume.py       what last.pt holds besides the weights; stopping on a signal, resuming
    distributed.py  data-parallel training under torchrun
    report.py       the progress bar and the loss / tokens-per-second lines
    metrics.py      exact match, token accuracy, BLEU and chrF of translations

May import: the model, text, decoding (validation translates), the config, support.
"""
