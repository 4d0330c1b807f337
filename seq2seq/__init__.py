"""seq2seq: a small, readable encoder-decoder Transformer translation toolkit.

Read it in the order the data flows (the README's code map lists the same, a line each):

    config -> numbers, corpus, multi30k -> special, vocab -> dataset -> batching -> masks
    -> attention -> model -> train, resume, report, distributed -> cache, decode, beam
    -> metrics

then the commands (data, train, evaluate, translate, plot, serve, export: run them with
`python -m seq2seq.<command>`), attention_maps, the service's parts (decoder, api,
libretranslate, access, openapi), and the support modules: checkpoint, files, paths, device,
errors, config_docs.
"""

__version__ = "0.1.0"
