"""Chapter 1, corpora: the parallel text `make data` builds, from generated, downloaded, named
or your own sources, cleaned and split.

    corpus_types.py                      the corpus types, one entry each, and build_corpus
    numbers.py, multi30k.py              the corpora generated here, or downloaded: Multi30k
    sources.py                           corpora by name (OPUS, sacreBLEU), URLs and files,
                                         catalogs, users' corrections, mixed
    source_checks.py                     their options checked, and told on a model card
    download.py                          downloads: resumed, checked, in raw/manifest.json
    cleaning.py                          the pairs make data drops, counted; valid/test split
                                         off; the language of a text (langid)

May import: localization (catalogs and corrections as sources), text, the config's options
(seq2seq/options.py, serve_options.py) and seq2seq.support. Never the model, training,
decoding or serving.
"""
