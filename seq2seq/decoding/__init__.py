"""Chapter 4, decoding: from a trained model to translations.

    greedy.py          greedy decoding (with and without the key/value cache), and whole
                       sentences in, translations out
    beam.py            batched beam search with a length penalty
    repeats.py         no runaway outputs: the tokens that would repeat an n-gram
    attention_maps.py  the attention weights of one translation, for plots and the page
    engines.py         the one interface every translating command and the service use: our
                       torch engine, or CTranslate2 on an export

May import: the checkpoint, the model, text, the config, support. Never training, serving or
exports.
"""
