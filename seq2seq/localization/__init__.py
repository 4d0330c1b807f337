"""What a localization team brings and keeps: its catalogs and glossaries in their formats,
the terms a translation follows, and its corrections, kept as a translation memory.

    catalog_formats.py   gettext PO/MO, XLIFF, TMX: each format's entries as pairs
    catalogs.py          catalogs and folders of them as pairs; programs held out whole; a
                         folder's gettext catalogs of one language
    glossary.py          glossaries: TSV, CSV and TBX files read as a pair's source -> target
                         term entries, checked whole
    terms.py             a glossary's terms: annotated for a taught model or masked,
                         do-not-translate kept; term use counted
    term_pairs.py        term pairs drawn from training pairs (train.terms)
    cooccurrence.py      how often items meet in pairs: Dice scores (term pairs, vocab maps)
    suggestions.py       the service's users' better translations, kept (and imported,
                         listed, removed: python -m seq2seq.suggestions), read back as a corpus
                         source, and the translation memory made of them
    fuzzy.py             fuzzy matches: word similarity, a correction carried over to a like
                         text by a three-way merge

May import: text, the config's options (seq2seq/options.py) and seq2seq.support. Never the
corpora's builders, tokens, the model, training, decoding or serving.
"""
