"""Chapter 3, model: the encoder-decoder Transformer, with its own multi-head attention.

    config.py       ModelConfig: the model's settings (the config's `model` section)
    masks.py        which keys each query may see: padding and no-peek (causal) masks
    attention.py    multi-head attention, softmax(QK^T / sqrt(d_k)) V, or torch's fused SDPA
    kv_cache.py     the keys and values kept between decoding steps
    dropout.py      dropout, with masks cheaper to draw on the CPU than torch's
    transformer.py  embeddings, encoder and decoder layers, the output projection

May import: torch and its own modules, nothing else of seq2seq's: the folder reads, and copies,
on its own (the padding id comes in as an argument).
"""
