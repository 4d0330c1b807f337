"""seq2seq: a small, readable encoder-decoder Transformer translation toolkit.

Read it in the order the data flows, a chapter a folder (each folder's __init__.py lists its
modules and what it may import; tests/test_architecture.py holds them to it):

    options.py           the typed experiment config: a dataclass a section
    serve_options.py     ... its serve section's, a dataclass a concern
    config.py            ... read from YAML and checked
    corpora/             the corpora make data builds: generated, downloaded, yours; cleaned
    tokens/              vocabularies -> token ids on disk -> padded batches
    model/               masks -> attention -> the Transformer (reads and copies alone)
    checkpoint.py        a trained model with its config and vocabularies, in one file
    training/            optimizer, loss, validation, checkpoints, torchrun (the loop: train.py)
    decoding/            greedy and beam search, attention maps, the engines
    service/, serving/   the HTTP service: each API's routes; what they stand on
    exports/             CTranslate2, Argos Translate, Hugging Face
    text/                beneath them all: pairs in files, sentences, placeholders
    localization/        a localization team's catalogs, glossaries, terms, translation memory
    documents/           the service's documents (.docx, .srt, HTML ...) and languages
    support/             errors, atomic files, paths, devices

and the commands, each `python -m seq2seq.<command>`: data, train, average, evaluate,
translate, plot, serve, keys (the service's API keys), export, import_model (and config_docs,
which writes config.yaml and the options' reference). No module imports a command, but
distill (a teacher's translations of its training sources, for a student), which translates
files a line at a time as translate does, with its functions.
"""

__version__ = "0.1.0"
