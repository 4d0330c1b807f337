"""Chapter 1, text: from parallel text to batches of token ids.

    corpus_types.py                      the corpus types, one entry each, and build_corpus
    numbers.py, multi30k.py, parallel.py the corpora: generated, downloaded, or your own files
    sources.py                           corpora by name (OPUS, sacreBLEU), URLs and files, mixed
    source_checks.py                     their options checked, and told on a model card
    catalogs.py                          catalogs and folders of them as pairs; held out whole
    catalog_formats.py                   gettext PO/MO, XLIFF, TMX: each format's entries as pairs
    download.py                          downloads: resumed, checked, in raw/manifest.json
    cleaning.py                          the pairs make data drops, counted; valid/test split off
    special.py                           PAD UNK BOS EOS, the ids every vocabulary shares
    vocab.py                             sentencepiece vocabularies and source normalisation
    bpe.py                               BPE vocabularies (Moses's tokens): imported packages'
    dataset.py                           each split encoded once, memory-mapped by training
    batching.py                          pairs -> padded (B, S) / (B, T) tensors of similar lengths
    sentences.py                         texts -> their sentences, translations joined back
    placeholders.py                      %s, {0}, <b>, [X7X] ...: kept from the model, put back
    terms.py                             a glossary's terms: annotated for a taught model or
                                         masked, do-not-translate kept; term use counted
    term_pairs.py                        term pairs drawn from training pairs (train.terms)
    cooccurrence.py                      how often items meet in pairs: Dice scores
    suggestions.py                       the service's users' better translations, kept (and
                                         imported, listed, removed: python -m seq2seq.suggestions),
                                         read back as a corpus source (sources.py), and the
                                         translation memory made of them
    fuzzy.py                             fuzzy matches: word similarity, a correction carried
                                         over to a like text by a three-way merge
    glossary.py                          glossaries: TSV, CSV and TBX files read as a pair's
                                         source -> target term entries, checked whole

May import: the config's options (seq2seq/options.py) and seq2seq.support. Never the model,
training, decoding or serving.
"""
