"""What to tell the user about the sentences they gave: the words the source vocabulary lacks
(translated as its unknown piece), and a sentence cut to fit the model's positions. Each
sentence's messages come back with its translation (engines.py's Translations); `numbered`
makes them lines of the user's input ("line 3: ...").
"""

from seq2seq.tokens.vocab import Vocab


def source_warnings(src_vocab: Vocab, longest: int, sentence: str, ids: list[int]) -> list[str]:
    """What to tell the user about one source sentence, encoded as `ids`: the words the source
    vocabulary lacks, and whether it is longer than `longest` pieces (it is cut to fit)."""
    messages = []
    if src_vocab.unk in ids:
        words = ", ".join(repr(word) for word in dict.fromkeys(src_vocab.unknown(sentence)))
        messages.append(f"not in the vocabulary, translated as unknown: {words}")
    if len(ids) > longest:
        messages.append(f"{len(ids)} pieces, cut to the model's {longest}")
    return messages


def numbered(warnings: list[list[str]], first_line: int = 1) -> list[str]:
    """Each sentence's warnings -> one list, each naming its line, counted from `first_line`."""
    return [f"line {n}: {m}" for n, messages in enumerate(warnings, first_line) for m in messages]
