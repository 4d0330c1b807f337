"""seq2seq: a small, readable encoder-decoder Transformer translation toolkit.

Read it in the order the data flows: config -> numbers / corpus -> vocab -> batching -> masks
-> attention -> model -> train -> cache / decode -> metrics. The commands are `data`, `train`,
`evaluate` and `translate` (run them with `python -m seq2seq.<command>`).
"""

__version__ = "0.1.0"
