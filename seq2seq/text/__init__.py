"""Chapter 1, text: from parallel text to batches of token ids.

    corpus_types.py                      the corpus types, one entry each, and build_corpus
    numbers.py, multi30k.py, parallel.py the corpora: generated, downloaded, or your own files
    sources.py                           corpora by name (OPUS, sacreBLEU), URLs and files, mixed
    catalogs.py                          gettext PO/MO, XLIFF, TMX as pairs; catalogs held out whole
    download.py                          downloads: resumed, checked, in raw/manifest.json
    cleaning.py                          the pairs make data drops, counted; valid/test split off
    special.py                           PAD UNK BOS EOS, the ids every vocabulary shares
    vocab.py                             sentencepiece vocabularies and source normalisation
    bpe.py                               BPE vocabularies (Moses's tokens): imported packages'
    dataset.py                           each split encoded once, memory-mapped by training
    batching.py                          pairs -> padded (B, S) / (B, T) tensors of similar lengths
    sentences.py                         texts -> their sentences, translations joined back
    placeholders.py                      %s, {0}, <b>, [X7X] ...: kept from the model, put back
    markup.py                            HTML in, HTML out: its text nodes out, translations back
    formats.py                           a document's texts out, translations back; .txt .html .srt
    office.py                            .docx .pptx .odt .odp .epub: their XML's texts, and back
    documents.py                         a file by its name's format, within limits (both above)
    language_id.py                       which language a text is in, among a few (an extra)
    suggestions.py                       the service's users' better translations, kept, read back

May import: the config's options (seq2seq/options.py) and seq2seq.support. Never the model,
training, decoding or serving.
"""
